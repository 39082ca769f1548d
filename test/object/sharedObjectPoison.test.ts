/**
 * A Thread whose head kills its Object (a poison input: a step that runs out of memory or CPU
 * before its turn ends, so nothing of that turn commits) in an Object it shares with other
 * Threads: the others are still served, each Submission's step once.
 */
import { describe, expect, it } from "@effect/vitest"
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test"
import { Effect } from "effect"
import { effectRuns, switchboard } from "../worker/threadObject.ts"
import { clientOf, deliverUntil, inState, stubOf, threadName } from "./support.ts"

const POISON = "a-poison"

/** Retries a call the Object's death cut off. */
const retried = <A, E>(call: Effect.Effect<A, E>) => Effect.retry(call, { times: 10 })

describe("a poison Thread in a shared Object", () => {
  it.live("does not keep the Object's other Threads from being served", () =>
    Effect.gen(function* () {
      const object = threadName("poison")
      const stub = stubOf(object)
      const poison = clientOf(POISON, object)
      const other = clientOf("b", object)
      // The lane cursor names `b`: the next selection wraps around to the poison Thread first.
      const first = yield* other.submit({ agentId: "echo", idempotencyKey: "first", input: { text: "x" } })
      for (let round = 0; round < 20 && !(yield* inState(other, first.submissionId, "settled")); round++)
        yield* Effect.promise(() => runDurableObjectAlarm(stub).catch(() => false))
      expect(yield* inState(other, first.submissionId, "settled")).toBe(true)
      let kills = 0
      switchboard.install(stub.id, {
        // Dies in the turn that claimed the poison Thread's head, before that turn commits.
        runtime: (location, ctx) =>
          Effect.sync(() => {
            if (location !== "claim:after-claim") return
            const running = ctx.storage.sql
              .exec("SELECT thread_id FROM effect_agent_submissions WHERE state = 'running'")
              .toArray()
            if (running.some((row) => row["thread_id"] === POISON)) {
              kills++
              ctx.abort("poison input")
            }
          }),
      })
      const later = yield* retried(
        other.submit({ agentId: "echo", idempotencyKey: "later", input: { text: "y" } }),
      )
      yield* retried(poison.submit({ agentId: "echo", idempotencyKey: "p", input: { text: "p" } }))
      let served = false
      for (let round = 0; round < 30 && !served; round++) {
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(object)).catch(() => false))
        yield* Effect.sleep(10)
        served = yield* retried(inState(other, later.submissionId, "settled"))
      }
      switchboard.remove(stub.id)
      expect(kills).toBeGreaterThan(0)
      expect(served).toBe(true)
      expect(effectRuns.get(`${later.submissionId}:echo`)).toBe(1)
    }),
  )
})

const SUSPECT_KEY = "effect-agent:suspect-head:v1"

/** The stored note of a head whose Attempt may have killed its Object, if any. */
const storedSuspect = (objectName: string) =>
  Effect.promise(() =>
    runInDurableObject(stubOf(objectName), (_instance, state) => state.storage.kv.get(SUSPECT_KEY)),
  )

/** Kills the Object in the poison Thread's step (after it ran, before its turn commits). */
const killInPoisonStep = (stub: DurableObjectStub, times: number, thread = POISON) => {
  let kills = 0
  switchboard.install(stub.id, {
    runtime: (location, ctx) =>
      Effect.sync(() => {
        if (location !== "step:after-step-append" || kills >= times) return
        const running = ctx.storage.sql
          .exec("SELECT thread_id FROM effect_agent_submissions WHERE state = 'running'")
          .toArray()
        if (running.some((row) => row["thread_id"] === thread)) {
          kills++
          ctx.abort("poison input")
        }
      }),
  })
  return () => kills
}

describe("a head that keeps killing its Object", () => {
  it.live("is set aside as failed after the cap, once, and the other Threads are served once each", () =>
    Effect.gen(function* () {
      const object = threadName("poison-cap")
      const stub = stubOf(object)
      const poison = clientOf(POISON, object)
      const other = clientOf("b", object)
      const first = yield* other.submit({ agentId: "echo", idempotencyKey: "first", input: { text: "x" } })
      yield* deliverUntil(object, inState(other, first.submissionId, "settled"))
      const kills = killInPoisonStep(stub, Infinity)
      const p = yield* retried(poison.submit({ agentId: "echo", idempotencyKey: "p", input: { text: "p" } }))
      const later = yield* retried(
        other.submit({ agentId: "echo", idempotencyKey: "later", input: { text: "y" } }),
      )
      let settled = false
      // What `explain` shows the operator while the head is not yet set aside.
      let objectKillsSeen = 0
      for (let round = 0; round < 40 && !settled; round++) {
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(object)).catch(() => false))
        yield* Effect.sleep(10)
        const explained = yield* retried(poison.explain(p.submissionId))
        if (explained.reason._tag === "WaitingForAlarm")
          objectKillsSeen = Math.max(objectKillsSeen, explained.reason.objectKills ?? 0)
        settled =
          (yield* retried(inState(poison, p.submissionId, "settled"))) &&
          (yield* retried(inState(other, later.submissionId, "settled")))
      }
      expect(settled).toBe(true)
      // A few more events find nothing to run again.
      for (let round = 0; round < 3; round++)
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(object)).catch(() => false))
      switchboard.remove(stub.id)
      const settlement = yield* retried(poison.awaitSettlement(p.submissionId, 1_000))
      expect(settlement).toMatchObject({ outcome: "failed" })
      expect((settlement as { readonly error?: string }).error).toMatch(
        /^set aside: its Attempt killed its Object \d+ times/,
      )
      // Each kill is one Attempt that ran the step; the cap stops them.
      expect(kills()).toBeGreaterThanOrEqual(3)
      expect(kills()).toBeLessThanOrEqual(4)
      expect(effectRuns.get(`${p.submissionId}:echo`)).toBe(kills())
      expect(effectRuns.get(`${later.submissionId}:echo`)).toBe(1)
      expect(yield* storedSuspect(object)).toBeUndefined()
      expect(objectKillsSeen).toBeGreaterThan(0)
      const explained = yield* poison.explain(p.submissionId)
      expect(explained.reason).toMatchObject({ _tag: "Settled", settlement: { outcome: "failed" } })
    }),
  )

  it.live("settles normally after killing its Object once, and its note is cleared", () =>
    Effect.gen(function* () {
      const object = threadName("poison-once")
      const stub = stubOf(object)
      const poison = clientOf(POISON, object)
      const kills = killInPoisonStep(stub, 1)
      const p = yield* retried(poison.submit({ agentId: "echo", idempotencyKey: "p", input: { text: "p" } }))
      let settled = false
      for (let round = 0; round < 30 && !settled; round++) {
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(object)).catch(() => false))
        yield* Effect.sleep(10)
        settled = yield* retried(inState(poison, p.submissionId, "settled"))
      }
      switchboard.remove(stub.id)
      expect(kills()).toBe(1)
      const settlement = yield* retried(poison.awaitSettlement(p.submissionId, 1_000))
      expect(settlement).toMatchObject({ outcome: "completed", output: "echo: p" })
      expect(yield* storedSuspect(object)).toBeUndefined()
    }),
  )

  it.live("an ordinary event writes no note", () =>
    Effect.gen(function* () {
      const object = threadName("poison-none")
      const stub = stubOf(object)
      const client = clientOf("a", object)
      const warm = yield* client.submit({ agentId: "echo", idempotencyKey: "warm", input: { text: "w" } })
      yield* deliverUntil(object, inState(client, warm.submissionId, "settled"))
      const writes: Array<string> = []
      switchboard.install(stub.id, {
        storage: (location, detail) => {
          if (location === "storage:kv:before") writes.push(detail)
        },
      })
      for (const key of ["one", "two", "three"]) {
        const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: key, input: { text: key } })
        yield* deliverUntil(object, inState(client, receipt.submissionId, "settled"))
      }
      switchboard.remove(stub.id)
      expect(writes.length).toBeGreaterThan(0)
      expect(writes.filter((key) => key === SUSPECT_KEY)).toEqual([])
      expect(yield* storedSuspect(object)).toBeUndefined()
    }),
  )

  it.live("settles aborted when an abort is accepted while it keeps killing its Object", () =>
    Effect.gen(function* () {
      const object = threadName("poison-abort")
      const stub = stubOf(object)
      const poison = clientOf(POISON, object)
      const kills = killInPoisonStep(stub, Infinity)
      const p = yield* retried(poison.submit({ agentId: "echo", idempotencyKey: "p", input: { text: "p" } }))
      for (let round = 0; round < 30 && kills() < 2; round++) {
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(object)).catch(() => false))
        yield* Effect.sleep(10)
      }
      expect(kills()).toBeGreaterThanOrEqual(2)
      yield* retried(poison.abort(p.submissionId))
      for (
        let round = 0;
        round < 30 && !(yield* retried(inState(poison, p.submissionId, "settled")));
        round++
      ) {
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(object)).catch(() => false))
        yield* Effect.sleep(10)
      }
      switchboard.remove(stub.id)
      expect(yield* retried(poison.awaitSettlement(p.submissionId, 1_000))).toMatchObject({
        outcome: "aborted",
      })
      expect(yield* storedSuspect(object)).toBeUndefined()
    }),
  )

  it.live("set aside as a child, its parent sees it failed", () =>
    Effect.gen(function* () {
      const parentObject = threadName("poison-parent")
      const childObject = threadName("poison-children")
      const kills = killInPoisonStep(stubOf(childObject), Infinity, "verify-0")
      const parent = clientOf("desk", parentObject)
      const receipt = yield* parent.submit({
        agentId: "delegator",
        idempotencyKey: "claims",
        input: { claims: ["a claim"], verifierObject: childObject },
      })
      for (
        let round = 0;
        round < 60 && !(yield* retried(inState(parent, receipt.submissionId, "settled")));
        round++
      ) {
        for (const object of [parentObject, childObject])
          yield* Effect.promise(() => runDurableObjectAlarm(stubOf(object)).catch(() => false))
        yield* Effect.sleep(10)
      }
      switchboard.remove(stubOf(childObject).id)
      const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement).toMatchObject({ outcome: "completed", output: ["failed"] })
      expect(kills()).toBeGreaterThanOrEqual(3)
      const child = clientOf("verify-0", childObject)
      expect(yield* child.threadStatus).toMatchObject({ nonterminal: 0 })
    }),
  )
})

describe("a head's count of deaths in a row", () => {
  it.live("ends when its Attempt returns in an ordinary event", () =>
    Effect.gen(function* () {
      const object = threadName("poison-row")
      const stub = stubOf(object)
      const poison = clientOf(POISON, object)
      const other = clientOf("b", object)
      // The lane cursor names `b`: the next selection wraps around to the poison Thread first.
      const first = yield* other.submit({ agentId: "echo", idempotencyKey: "first", input: { text: "x" } })
      yield* deliverUntil(object, inState(other, first.submissionId, "settled"))
      let killing = true
      let kills = 0
      switchboard.install(stub.id, {
        runtime: (location, ctx) =>
          Effect.suspend(() => {
            if (location !== "claim:after-claim") return Effect.void
            const running = ctx.storage.sql
              .exec("SELECT thread_id FROM effect_agent_submissions WHERE state = 'running'")
              .toArray()
            // `b`'s head takes longer than an event's budget for further heads; from then on the
            // poison Thread's head kills nothing.
            if (running.some((row) => row["thread_id"] === "b")) {
              killing = false
              return Effect.sleep(1_200)
            }
            if (killing && running.some((row) => row["thread_id"] === POISON)) {
              kills++
              ctx.abort("poison input")
            }
            return Effect.void
          }),
      })
      const p = yield* retried(
        poison.submit({ agentId: "review", idempotencyKey: "p", input: { draft: "d" } }),
      )
      // The first event of an incarnation after the poison head's death serves `b` first (the
      // cursor names the poison Thread), and then no other lane.
      const slow = yield* retried(
        other.submit({ agentId: "echo", idempotencyKey: "slow", input: { text: "s" } }),
      )
      yield* deliverUntil(object, retried(inState(other, slow.submissionId, "settled")))
      // At least one death was counted: the event that served `b` first found the poison head's
      // Attempt in flight in the note of an event that died.
      expect(kills).toBeGreaterThanOrEqual(2)
      // The poison head now runs to its approval request in an ordinary event: it killed nothing.
      yield* deliverUntil(
        object,
        Effect.map(
          retried(poison.explain(p.submissionId)),
          (explained) => explained.reason._tag === "WaitingForApproval",
        ),
      )
      switchboard.remove(stub.id)
      expect(yield* storedSuspect(object)).toBeUndefined()
      yield* poison.resolveApproval(p.submissionId, { approved: true })
      const explained = yield* poison.explain(p.submissionId)
      expect(explained.reason._tag).toBe("WaitingForAlarm")
      expect(explained.reason).not.toHaveProperty("objectKills")
    }),
  )
})
