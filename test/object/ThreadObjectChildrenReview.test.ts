/**
 * Subagents as a demanding user drives them through real `ThreadObject`s: aborts of parents and
 * children, failing and refused children, fan-out, cycles, operator retries and joins; after each,
 * every Object involved verifies clean, owes nothing and ends without an alarm.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm } from "cloudflare:test"
import { Effect, Exit } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { switchboard } from "../worker/threadObject.ts"
import { allAtRest, clientOf, deliverAll, failureOf, inState, stubOf, threadName } from "./support.ts"

type Stub = DurableObjectStub

/**
 * Every Object quiet, verifying clean and owing nothing. A message still in flight when the
 * Objects first come to rest (a child's admission sent at once, answered late) may owe one more
 * generation, with its alarm armed: deliver again and look once more.
 */
const clean = (clients: ReadonlyArray<ThreadClient.ThreadClient>, stubs: ReadonlyArray<Stub>) =>
  Effect.gen(function* () {
    for (let round = 0; ; round++) {
      yield* deliverAll(stubs, allAtRest(stubs))
      const owed = yield* Effect.forEach(clients, (client) => client.obligations)
      for (const answer of owed) expect(answer.mismatch).toBeUndefined()
      if (owed.every((answer) => answer.obligations.length === 0)) break
      if (round === 2) expect(owed.map((answer) => answer.obligations)).toEqual(owed.map(() => []))
      yield* Effect.sleep(20)
    }
    for (const client of clients) expect((yield* client.verify).violations).toEqual([])
  })

/**
 * Until the parent's Attempt has started its child and waits for it in memory (up to 250 ms): a
 * loaded machine starts the alarm event later than any fixed pause allows.
 */
const waitingInMemory = (parent: ThreadClient.ThreadClient, submissionId: string) =>
  Effect.gen(function* () {
    for (let round = 0; round < 1_000; round++) {
      const started = (yield* parent.history()).records.some((record) => record.entry._tag === "ChildStarted")
      if (started && (yield* parent.status(submissionId)).state === "running") return
      yield* Effect.sleep(2)
    }
    return yield* Effect.die(new Error("the parent never waited in memory for its child"))
  })

const otherClient = (thread: string, objectName: string) =>
  ThreadClient.make(env.THREADS_OTHER, thread, { objectName })

/** The parent starts one `review` child, in Thread `reviews` of the other namespace's `childObject`. */
const spawnReview = (parent: ReturnType<typeof clientOf>, childObject: string, idempotencyKey: string) =>
  parent.submit({
    agentId: "spawner",
    idempotencyKey,
    input: {
      children: [
        {
          agentId: "review",
          input: { draft: "d" },
          objectName: childObject,
          threadId: "reviews",
          namespace: "THREADS_OTHER",
        },
      ],
    },
  })

/** A parent desk and a child Object (of the test namespace, or the other one), named after `prefix`. */
const parentAndChild = (prefix: string, childNamespace: "test" | "other" = "test") => {
  const parentObject = threadName(`${prefix}-parent`)
  const childObject = threadName(`${prefix}-child`)
  return {
    parentObject,
    childObject,
    stubs: [
      stubOf(parentObject),
      childNamespace === "other" ? env.THREADS_OTHER.getByName(childObject) : stubOf(childObject),
    ],
    parent: clientOf("desk", parentObject),
  }
}

/**
 * A parent whose `tally` child, in an Object of its own, is parked for approval, and a follow-up
 * (`f`, n 41) submitted to join it.
 */
const joinedTally = (prefix: string) =>
  Effect.gen(function* () {
    const { childObject, stubs, parent } = parentAndChild(prefix)
    const tally = clientOf("tally", childObject)
    const receipt = yield* parent.submit({
      agentId: "spawner",
      idempotencyKey: prefix,
      input: {
        children: [{ agentId: "tally", input: { n: 1 }, objectName: childObject, threadId: "tally" }],
      },
    })
    yield* deliverAll(
      stubs,
      Effect.map(tally.threadStatus, (s) => s.head?.state === "suspended"),
    )
    const childId = (yield* tally.threadStatus).head!.submissionId
    const follow = yield* tally.submit({
      agentId: "tally",
      idempotencyKey: "f",
      input: { n: 41 },
      mode: "join",
    })
    return { stubs, parent, tally, receipt, childId, follow }
  })

const settledCount = (client: ThreadClient.ThreadClient, submissionId: string) =>
  Effect.map(
    client.history(),
    (page) =>
      page.records.filter((r) => r.submissionId === submissionId && r.entry._tag === "SubmissionSettled")
        .length,
  )

describe("subagents, reviewed", () => {
  it.live("aborting a parent parked on a child aborts the child once; the parent settles aborted once", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("ab", "other")
      const reviews = otherClient("reviews", childObject)
      const receipt = yield* spawnReview(parent, childObject, "p1")
      yield* deliverAll(
        stubs,
        Effect.map(reviews.threadStatus, (s) => s.head?.state === "suspended"),
      )
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "suspended"))
      const childId = (yield* reviews.threadStatus).head!.submissionId
      yield* parent.abort(receipt.submissionId)
      yield* parent.abort(receipt.submissionId)
      yield* deliverAll(stubs, inState(reviews, childId, "settled"))
      expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      expect(yield* reviews.awaitSettlement(childId, 1_000)).toMatchObject({ outcome: "aborted" })
      yield* clean([parent, reviews], stubs)
      // An approval after the abort is refused, and nothing settles twice.
      const late = yield* Effect.exit(reviews.resolveApproval(childId, { approved: true }))
      expect(Exit.isFailure(late)).toBe(true)
      expect(yield* settledCount(parent, receipt.submissionId)).toBe(1)
      expect(yield* settledCount(reviews, childId)).toBe(1)
    }),
  )

  it.live("aborting a parent before its child is admitted aborts the child too", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("ab2")
      const naps = clientOf("naps", childObject)
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "p2",
        input: {
          children: [
            {
              agentId: "nap",
              input: { text: "z", millis: 60_000 },
              objectName: childObject,
              threadId: "naps",
            },
          ],
        },
      })
      // One parent alarm: the child is started (journaled with its message) but perhaps not delivered.
      yield* Effect.promise(() => runDurableObjectAlarm(stubs[0]!))
      yield* parent.abort(receipt.submissionId)
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      yield* deliverAll(stubs, allAtRest(stubs))
      const child = (yield* naps.history()).records.find((r) => r.entry._tag === "SubmissionAccepted")
      if (child !== undefined)
        expect(yield* naps.awaitSettlement(child.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      yield* clean([parent, naps], stubs)
    }),
  )

  it.live("aborting a child directly: the parent sees aborted and goes on", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("abc", "other")
      const reviews = otherClient("reviews", childObject)
      const receipt = yield* spawnReview(parent, childObject, "p3")
      yield* deliverAll(
        stubs,
        Effect.map(reviews.threadStatus, (s) => s.head?.state === "suspended"),
      )
      const childId = (yield* reviews.threadStatus).head!.submissionId
      yield* reviews.abort(childId)
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: ["aborted"],
      })
      yield* clean([parent, reviews], stubs)
    }),
  )

  it.live("a failing child, a refused unknown agent, an unregistering namespace, and a bad input", () =>
    Effect.gen(function* () {
      const parentObject = threadName("f-parent")
      const childObject = threadName("f-child")
      const otherObject = threadName("f-other")
      const stubs = [stubOf(parentObject), stubOf(childObject), env.THREADS_OTHER.getByName(otherObject)]
      const parent = clientOf("desk", parentObject)
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "p4",
        input: {
          children: [
            { agentId: "echo", input: { text: "x", fail: true }, objectName: childObject, threadId: "a" },
            { agentId: "ghost", input: { text: "x" }, objectName: childObject, threadId: "b" },
            {
              agentId: "verifier",
              input: { claim: "x" },
              objectName: otherObject,
              threadId: "c",
              namespace: "THREADS_OTHER",
            },
          ],
        },
      })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement).toMatchObject({ outcome: "completed" })
      const output = settlement.output as Array<string>
      expect(output[0]).toBe("failed:refused x")
      expect(output[1]).toMatch(/^failed:.*:unknown-agent$/)
      expect(output[2]).toMatch(/^failed:.*:unknown-agent$/)
      yield* clean([parent, clientOf("a", childObject), otherClient("c", otherObject)], stubs)

      // An input the child's schema refuses fails the parent's program (startChild cannot encode it).
      const bad = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "p4-bad",
        input: {
          children: [{ agentId: "echo", input: { text: 42 }, objectName: childObject, threadId: "a" }],
        },
      })
      yield* deliverAll(stubs, inState(parent, bad.submissionId, "settled"))
      const badSettlement = yield* parent.awaitSettlement(bad.submissionId, 1_000)
      expect(badSettlement).toMatchObject({ outcome: "failed" })
      yield* clean([parent], stubs)
    }),
  )

  it.live("a child namespace binding that does not exist settles the child failed, naming it", () =>
    Effect.gen(function* () {
      const parentObject = threadName("nb-parent")
      const stubs = [stubOf(parentObject)]
      const parent = clientOf("desk", parentObject)
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "p5",
        input: {
          children: [
            {
              agentId: "echo",
              input: { text: "x" },
              objectName: "o",
              threadId: "a",
              namespace: "NO_SUCH_BINDING",
            },
          ],
        },
      })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
      // The admission can never be delivered: the child settles failed, naming the binding.
      expect(settlement).toMatchObject({ outcome: "completed" })
      expect((settlement.output as Array<string>)[0]).toContain(
        "no Durable Object namespace is bound as NO_SUCH_BINDING",
      )
      yield* clean([parent], stubs)
    }),
  )

  it.live("a fan-out of 50 children settles every one and leaves both Objects quiet", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("fan")
      const children = Array.from({ length: 50 }, (_, i) => i)
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "fan",
        input: {
          repeat: 50,
          children: [{ agentId: "echo", input: { text: "n" }, objectName: childObject, threadId: "t" }],
        },
      })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"), 200)
      const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement.output).toEqual(children.map(() => `completed:"echo: n"`))
      yield* clean([parent, clientOf("t0", childObject)], stubs)
    }),
  )

  it.live("a child in the parent's own Thread is refused as same-thread, not deadlocked", () =>
    Effect.gen(function* () {
      const object = threadName("same")
      const stubs = [stubOf(object)]
      const parent = clientOf("desk", object)
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "same",
        input: {
          children: [{ agentId: "echo", input: { text: "x" }, objectName: object, threadId: "desk" }],
        },
      })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
      expect((settlement.output as Array<string>)[0]).toMatch(/:same-thread$/)
      yield* clean([parent], stubs)
    }),
  )

  it.live("a cycle: a child that starts its grandparent's key in the grandparent's Thread is refused", () =>
    Effect.gen(function* () {
      const aObject = threadName("cyc-a")
      const bObject = threadName("cyc-b")
      const stubs = [stubOf(aObject), stubOf(bObject)]
      const a = clientOf("a", aObject)
      const receipt = yield* a.submit({
        agentId: "spawner",
        idempotencyKey: "cycle",
        input: {
          children: [
            {
              agentId: "spawner",
              input: {
                children: [
                  {
                    agentId: "echo",
                    input: { text: "x" },
                    objectName: aObject,
                    threadId: "a",
                    idempotencyKey: "cycle",
                  },
                ],
              },
              objectName: bObject,
              threadId: "b",
            },
          ],
        },
      })
      yield* deliverAll(stubs, inState(a, receipt.submissionId, "settled"))
      const settlement = yield* a.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement.outcome).toBe("completed")
      expect((settlement.output as Array<string>)[0]).toMatch(/idempotency-conflict/)
      yield* clean([a, clientOf("b", bObject)], stubs)
    }),
  )

  it.live("an operator retry of a failed parent", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("rt")
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "rt",
        input: {
          fail: true,
          children: [{ agentId: "echo", input: { text: "x" }, objectName: childObject, threadId: "a" }],
        },
      })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({ outcome: "failed" })
      const retried = yield* Effect.exit(parent.retry(receipt.submissionId))
      // A settled parent is not running: the retry is refused by name and nothing runs again.
      expect(failureOf(retried)).toMatchObject({ _tag: "NotPending" })
      yield* deliverAll(stubs, allAtRest(stubs))
      expect(yield* settledCount(parent, receipt.submissionId)).toBe(1)
      const children = (yield* clientOf("a", childObject).history()).records.filter(
        (r) => r.entry._tag === "SubmissionAccepted",
      )
      expect(children.length).toBe(1)
      yield* clean([parent, clientOf("a", childObject)], stubs)
    }),
  )

  it.live("a join into a parked child settles with the child; the parent sees the child's output", () =>
    Effect.gen(function* () {
      const { stubs, parent, tally, receipt, childId, follow } = yield* joinedTally("jn")
      expect(follow.host).toBe(childId)
      yield* tally.resolveApproval(childId, { approved: true })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        output: ["completed:42"],
      })
      expect(yield* tally.awaitSettlement(follow.submissionId, 1_000)).toMatchObject({
        output: 42,
        host: childId,
      })
      // A join after everything settled is refused.
      const late = yield* Effect.flip(
        tally.submit({ agentId: "tally", idempotencyKey: "g", input: { n: 1 }, mode: "join" }),
      )
      expect(late).toMatchObject({ _tag: "JoinRefused", reason: "no-running-head" })
      // A join of another agent into a parked parent is refused.
      yield* clean([parent, tally], stubs)
    }),
  )

  it.live("a join into a parked parent that takes no joined input is refused by name", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("jp", "other")
      const reviews = otherClient("reviews", childObject)
      const receipt = yield* spawnReview(parent, childObject, "jp")
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "suspended"))
      const refused = yield* Effect.flip(
        parent.submit({ agentId: "spawner", idempotencyKey: "jp2", input: { children: [] }, mode: "join" }),
      )
      expect(refused).toMatchObject({ _tag: "JoinRefused" })
      const other = yield* Effect.flip(
        parent.submit({ agentId: "echo", idempotencyKey: "jp3", input: { text: "x" }, mode: "join" }),
      )
      expect(other).toMatchObject({ _tag: "JoinRefused" })
      yield* parent.abort(receipt.submissionId)
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      yield* clean([parent, reviews], stubs)
    }),
  )

  it.live("a child that dies: the parent sees it failed", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("die")
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "die",
        input: {
          children: [{ agentId: "dier", input: { text: "x" }, objectName: childObject, threadId: "a" }],
        },
      })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
      expect((settlement.output as Array<string>)[0]).toMatch(/^failed:/)
      yield* clean([parent, clientOf("a", childObject)], stubs)
    }),
  )

  it.live("a parent that times out its await of a parked child", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("to", "other")
      const reviews = otherClient("reviews", childObject)
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "to",
        input: {
          awaitTimeoutMillis: 50,
          children: [
            {
              agentId: "review",
              input: { draft: "d" },
              objectName: childObject,
              threadId: "reviews",
              namespace: "THREADS_OTHER",
            },
          ],
        },
      })
      yield* deliverAll(
        stubs,
        Effect.map(
          parent.status(receipt.submissionId),
          (s) => s.state === "settled" || s.state === "suspended",
        ),
      )
      yield* deliverAll(stubs, allAtRest(stubs)).pipe(Effect.ignore)
      // The timeout fires during awaitChild's in-memory wait: the parent goes on without the child,
      // which keeps running; its later settlement is acknowledged and ignored.
      expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: ["timed-out"],
      })
      const childId = (yield* reviews.threadStatus).head!.submissionId
      yield* reviews.resolveApproval(childId, { approved: true })
      yield* deliverAll(stubs, inState(reviews, childId, "settled"))
      yield* clean([parent, reviews], stubs)
    }),
  )

  it.live(
    "a parent that completes without awaiting leaves its child running; the late settlement is ignored",
    () =>
      Effect.gen(function* () {
        const { childObject, stubs, parent } = parentAndChild("na", "other")
        const reviews = otherClient("reviews", childObject)
        const receipt = yield* parent.submit({
          agentId: "spawner",
          idempotencyKey: "na",
          input: {
            await: false,
            children: [
              {
                agentId: "review",
                input: { draft: "d" },
                objectName: childObject,
                threadId: "reviews",
                namespace: "THREADS_OTHER",
              },
            ],
          },
        })
        yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
        yield* deliverAll(
          stubs,
          Effect.map(reviews.threadStatus, (s) => s.head?.state === "suspended"),
        )
        const childId = (yield* reviews.threadStatus).head!.submissionId
        yield* reviews.resolveApproval(childId, { approved: true })
        yield* deliverAll(stubs, inState(reviews, childId, "settled"))
        expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
          output: ["started"],
        })
        yield* clean([parent, reviews], stubs)
        expect(yield* settledCount(parent, receipt.submissionId)).toBe(1)
      }),
  )

  it.live("a two-Object cycle on default keys deadlocks as documented; aborting the root unwinds it", () =>
    Effect.gen(function* () {
      const aObject = threadName("dl-a")
      const bObject = threadName("dl-b")
      const stubs = [stubOf(aObject), stubOf(bObject)]
      const a = clientOf("a", aObject)
      const b = clientOf("b", bObject)
      const receipt = yield* a.submit({
        agentId: "spawner",
        idempotencyKey: "dl",
        input: {
          children: [
            {
              agentId: "spawner",
              input: {
                children: [{ agentId: "echo", input: { text: "x" }, objectName: aObject, threadId: "a" }],
              },
              objectName: bObject,
              threadId: "b",
            },
          ],
        },
      })
      yield* deliverAll(stubs, allAtRest(stubs))
      // Deadlocked and quiet: the root waits for b, b waits for its child, queued behind the root.
      expect((yield* a.threadStatus).nonterminal).toBe(2)
      expect((yield* b.threadStatus).nonterminal).toBe(1)
      yield* a.abort(receipt.submissionId)
      yield* deliverAll(stubs, inState(a, receipt.submissionId, "settled"))
      yield* deliverAll(stubs, allAtRest(stubs))
      expect((yield* a.threadStatus).nonterminal).toBe(0)
      expect((yield* b.threadStatus).nonterminal).toBe(0)
      yield* clean([a, b], stubs)
    }),
  )

  it.live("an abort and a retry while the parent waits in memory for its child", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("mem")
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "mem",
        input: {
          children: [
            {
              agentId: "nap",
              input: { text: "z", millis: 60_000 },
              objectName: childObject,
              threadId: "naps",
            },
          ],
        },
      })
      // The parent's alarm runs its Attempt, which waits up to 250 ms in memory for the child.
      const running = runDurableObjectAlarm(stubs[0]!).catch(() => false)
      yield* waitingInMemory(parent, receipt.submissionId)
      const retried = yield* Effect.exit(parent.retry(receipt.submissionId))
      expect(Exit.isSuccess(retried)).toBe(true)
      yield* parent.abort(receipt.submissionId)
      yield* Effect.promise(() => running)
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      yield* deliverAll(stubs, allAtRest(stubs))
      const naps = clientOf("naps", childObject)
      const accepted = (yield* naps.history()).records.filter((r) => r.entry._tag === "SubmissionAccepted")
      expect(accepted.length).toBe(1)
      expect(yield* naps.awaitSettlement(accepted[0]!.submissionId, 1_000)).toMatchObject({
        outcome: "aborted",
      })
      const started = (yield* parent.history()).records.filter((r) => r.entry._tag === "ChildStarted")
      expect(started.length).toBe(1)
      yield* clean([parent, naps], stubs)
    }),
  )

  it.live("an operator retry of a parent waiting in memory for its child does not fail the alarm event", () =>
    Effect.gen(function* () {
      const { childObject, stubs, parent } = parentAndChild("rmem")
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "rmem",
        input: {
          children: [
            {
              agentId: "nap",
              input: { text: "z", millis: 60_000 },
              objectName: childObject,
              threadId: "naps",
            },
          ],
        },
      })
      // The armed alarm runs the parent's first Attempt, which waits up to 250 ms in memory
      // (it fires by itself in the pool; this delivers it if it has not). The Object logs in
      // this isolate: collect what its maintenance log says.
      const logged: Array<string> = []
      const original = { log: console.log, warn: console.warn, error: console.error }
      for (const level of ["log", "warn", "error"] as const)
        console[level] = (...args: Array<unknown>) => {
          logged.push(args.map(String).join(" "))
          original[level](...args)
        }
      yield* Effect.gen(function* () {
        const running = runDurableObjectAlarm(stubs[0]!).catch(() => false)
        yield* waitingInMemory(parent, receipt.submissionId)
        expect((yield* parent.status(receipt.submissionId)).state).toBe("running")
        yield* parent.retry(receipt.submissionId)
        yield* Effect.promise(() => running)
        yield* Effect.sleep(350)
      }).pipe(Effect.ensuring(Effect.sync(() => Object.assign(console, original))))
      // After the in-memory wait the revoked Attempt finds itself fenced out: it ends quietly,
      // without failing its alarm event.
      expect(logged.filter((line) => line.includes("the pass failed"))).toEqual([])
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "suspended"))
      const started = (yield* parent.history()).records.filter((r) => r.entry._tag === "ChildStarted")
      expect(started.length).toBe(1)
      yield* parent.abort(receipt.submissionId)
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      yield* clean([parent, clientOf("naps", childObject)], stubs)
    }),
  )

  it.live(
    "a timeout longer than the in-memory wait around awaitChild never fires: the parent parks (documented)",
    () =>
      Effect.gen(function* () {
        const { childObject, stubs, parent } = parentAndChild("to2", "other")
        const reviews = otherClient("reviews", childObject)
        const receipt = yield* parent.submit({
          agentId: "spawner",
          idempotencyKey: "to2",
          input: {
            awaitTimeoutMillis: 600,
            children: [
              {
                agentId: "review",
                input: { draft: "d" },
                objectName: childObject,
                threadId: "reviews",
                namespace: "THREADS_OTHER",
              },
            ],
          },
        })
        yield* deliverAll(stubs, allAtRest(stubs))
        yield* Effect.sleep(1_000)
        yield* deliverAll(stubs, allAtRest(stubs))
        expect((yield* parent.status(receipt.submissionId)).state).toBe("suspended")
        const childId = (yield* reviews.threadStatus).head!.submissionId
        yield* reviews.resolveApproval(childId, { approved: true })
        yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
        expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
          output: ['completed:"d approved (no note)"'],
        })
        yield* clean([parent, reviews], stubs)
      }),
  )

  it.live("aborting a parent whose child is queued in its own Object aborts the child alone", () =>
    Effect.gen(function* () {
      const object = threadName("so")
      const stubs = [stubOf(object)]
      const parent = clientOf("desk", object)
      const reviews = clientOf("reviews", object)
      // Something already holds the child's lane: the second child queues behind it.
      const blocker = yield* reviews.submit({
        agentId: "review",
        idempotencyKey: "blocker",
        input: { draft: "b" },
      })
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "so",
        input: {
          children: [{ agentId: "review", input: { draft: "d" }, objectName: object, threadId: "reviews" }],
        },
      })
      // With the blocker's lane runnable the parent parks at once, and the event sends its
      // child's start only after the blocker's Attempt (the test after this one): a reader can
      // see the parent suspended before the child is admitted. Wait for both.
      const childOf = Effect.map(reviews.submissionPage({}), (page) =>
        page.submissions.find((summary) => summary.submission.submissionId !== blocker.submissionId),
      )
      yield* deliverAll(
        stubs,
        Effect.zipWith(
          inState(parent, receipt.submissionId, "suspended"),
          childOf,
          (parked, child) => parked && child !== undefined,
        ),
      )
      const child = (yield* childOf)!.submission
      expect(child.state).toBe("ready")
      yield* parent.abort(receipt.submissionId)
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      yield* deliverAll(stubs, allAtRest(stubs))
      expect(yield* reviews.awaitSettlement(child.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      expect((yield* reviews.status(blocker.submissionId)).state).toBe("suspended")
      yield* reviews.abort(blocker.submissionId)
      yield* clean([parent, reviews], stubs)
    }),
  )

  it.live(
    "a parent that parks at once is suspended before its child, queued in its own Object, is admitted; the same event admits it",
    () =>
      Effect.gen(function* () {
        const object = threadName("so-seen")
        const stubs = [stubOf(object)]
        const parent = clientOf("desk", object)
        const reviews = clientOf("reviews", object)
        // No event runs until both Submissions are in: the first then serves the parent's lane
        // ("desk") while the blocker's lane is runnable, so the parent parks at once. What the
        // Object stores is read inside that event, before the blocker's Attempt and at its finish.
        let held = true
        let selections = 0
        let beforeBlocker: unknown
        let atFinish: unknown
        const stored = (ctx: DurableObjectState) => ({
          ledger: ctx.storage.sql
            .exec("SELECT thread_id, state FROM effect_agent_submissions ORDER BY thread_id, queue_sequence")
            .toArray()
            .map((row) => `${row["thread_id"]}:${row["state"]}`),
          unsent: ctx.storage.sql
            .exec("SELECT count(*) AS n FROM effect_agent_outbox WHERE acknowledged_at IS NULL")
            .one()["n"],
        })
        switchboard.install(stubs[0]!.id, {
          maintenance: (location, ctx) => {
            if (location === "maintenance:begin:before" && held) return Effect.die(new Error("held"))
            if (location === "maintenance:select:before" && ++selections === 2)
              return Effect.sync(() => (beforeBlocker = stored(ctx)))
            if (location === "maintenance:finish:before" && atFinish === undefined)
              return Effect.sync(() => (atFinish = stored(ctx)))
            return Effect.void
          },
        })
        yield* Effect.gen(function* () {
          const blocker = yield* reviews.submit({
            agentId: "review",
            idempotencyKey: "blocker",
            input: { draft: "b" },
          })
          const receipt = yield* parent.submit({
            agentId: "spawner",
            idempotencyKey: "so",
            input: {
              children: [
                { agentId: "review", input: { draft: "d" }, objectName: object, threadId: "reviews" },
              ],
            },
          })
          held = false
          yield* deliverAll(
            stubs,
            Effect.sync(() => atFinish !== undefined),
          )
          // The parent is parked and its child's start still unsent: a reader sees it suspended
          // with no child yet.
          expect(beforeBlocker).toEqual({ ledger: ["desk:suspended", "reviews:ready"], unsent: 1 })
          // The event's last delivery wave sent it: the child queues behind the blocker.
          expect(atFinish).toEqual({
            ledger: ["desk:suspended", "reviews:suspended", "reviews:ready"],
            unsent: 0,
          })
          yield* parent.abort(receipt.submissionId)
          yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
          yield* reviews.abort(blocker.submissionId)
          yield* clean([parent, reviews], stubs)
        }).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(stubs[0]!.id))))
      }),
  )

  it.live("a join that races its host's abort: accepted until the abort arrives, then run as its own", () =>
    Effect.gen(function* () {
      const { stubs, parent, tally, receipt, childId, follow } = yield* joinedTally("ja")
      yield* parent.abort(receipt.submissionId)
      // The abort is a message to the child's Object: until it arrives the child is still a host.
      const racing = yield* tally.submit({
        agentId: "tally",
        idempotencyKey: "g",
        input: { n: 2 },
        mode: "join",
      })
      expect(racing.host).toBe(childId)
      yield* deliverAll(stubs, inState(tally, childId, "settled"))
      expect(yield* tally.awaitSettlement(childId, 1_000)).toMatchObject({ outcome: "aborted" })
      // Unread, the follow-ups run as Submissions of their own.
      yield* deliverAll(stubs, inState(tally, follow.submissionId, "suspended"))
      expect((yield* tally.status(racing.submissionId)).state).toBe("ready")
      yield* tally.abort(follow.submissionId)
      yield* tally.abort(racing.submissionId)
      yield* clean([parent, tally], stubs)
    }),
  )

  it.live(
    "a second child of one parent under the same explicit key is refused, naming the call that has it",
    () =>
      Effect.gen(function* () {
        const { childObject, stubs, parent } = parentAndChild("dup")
        const child = {
          agentId: "echo",
          input: { text: "x" },
          objectName: childObject,
          threadId: "a",
          idempotencyKey: "same",
        }
        const receipt = yield* parent.submit({
          agentId: "spawner",
          idempotencyKey: "dup",
          input: { children: [child, child] },
        })
        yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
        const output = (yield* parent.awaitSettlement(receipt.submissionId, 1_000)).output as Array<string>
        // The two admissions go out side by side: whichever arrives first is the child, and the
        // other is refused naming its call.
        const first = output.indexOf('completed:"echo: x"')
        expect(first).toBeGreaterThanOrEqual(0)
        expect(output[1 - first]).toMatch(
          new RegExp(`this parent started at its call ${first}, not at this one:idempotency-conflict$`),
        )
        yield* clean([parent, clientOf("a", childObject)], stubs)
      }),
  )

  it.live("malformed child threads and keys fail the parent, naming what is wrong", () =>
    Effect.gen(function* () {
      const parentObject = threadName("mal-parent")
      const stubs = [stubOf(parentObject)]
      const parent = clientOf("desk", parentObject)
      for (const [key, child, error] of [
        [
          "empty-thread",
          { agentId: "echo", input: { text: "x" }, objectName: "o", threadId: "" },
          "invalid child thread",
        ],
        [
          "empty-object",
          { agentId: "echo", input: { text: "x" }, objectName: "", threadId: "t" },
          "invalid child object",
        ],
        [
          "long-thread",
          { agentId: "echo", input: { text: "x" }, objectName: "o", threadId: "t".repeat(2000) },
          "at most 256",
        ],
        [
          "empty-key",
          { agentId: "echo", input: { text: "x" }, objectName: "o", threadId: "t", idempotencyKey: "" },
          "invalid child idempotency key",
        ],
      ] as const) {
        const receipt = yield* parent.submit({
          agentId: "spawner",
          idempotencyKey: key,
          input: { children: [child] },
        })
        yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
        const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
        expect(settlement.outcome).toBe("failed")
        expect(settlement.error).toContain(error)
      }
      yield* clean([parent], stubs)
    }),
  )
})
