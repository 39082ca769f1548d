/**
 * Subagents and joins through real `ThreadObject`s in workerd: a parent in one Object starts
 * children in another (of its own namespace, or of another binding) through the outbox, the
 * delivery driver and `portCall`; alarms alone carry the work; a parent waiting for a waiting
 * child leaves neither Object an alarm; both Objects end quiet. A follow-up joins a running Submission by the
 * client's `mode`, and the routed port refuses what it cannot decode.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import {
  allAtRest,
  clientOf,
  deliverUntil,
  inState,
  stubOf,
  storedMaintenance,
  threadName,
} from "./support.ts"

const quiet = (objectName: string) =>
  Effect.map(storedMaintenance(objectName), ({ record, alarm }) => {
    const stored = record as { dirty: string; processed: string } | undefined
    return alarm === null && stored !== undefined && stored.dirty === stored.processed
  })

const outboxOf = (objectName: string) =>
  Effect.promise(() =>
    runInDurableObject(stubOf(objectName), (_instance, state) =>
      state.storage.sql
        .exec("SELECT message_id, attempts, acknowledged_at FROM effect_agent_outbox ORDER BY message_id")
        .toArray(),
    ),
  )

/** Delivers the alarms of both Objects, one each per round, until `done` holds. */
const deliverBoth = (stubs: ReadonlyArray<DurableObjectStub>, done: Effect.Effect<boolean, unknown>) =>
  Effect.gen(function* () {
    for (let round = 0; round < 40; round++) {
      if (yield* done) return
      for (const stub of stubs) yield* Effect.promise(() => runDurableObjectAlarm(stub).catch(() => false))
      yield* Effect.sleep(5)
    }
    return yield* Effect.die(new Error("condition not reached after 40 rounds of alarms"))
  })

describe("ThreadObject subagents across Objects", () => {
  it.live(
    "runs children in another Object and returns their settlements to the parent, by alarms alone",
    () =>
      Effect.gen(function* () {
        const parentObject = threadName("parent")
        const childObject = threadName("children")
        const parent = clientOf("desk", parentObject)
        const receipt = yield* parent.submit({
          agentId: "delegator",
          idempotencyKey: "claims-1",
          input: { claims: ["real invoice", "fake invoice"], verifierObject: childObject },
        })
        const settled = inState(parent, receipt.submissionId, "settled")
        for (let round = 0; round < 20 && !(yield* settled); round++) {
          yield* deliverUntil(parentObject, Effect.map(quiet(parentObject), Boolean), 10).pipe(Effect.ignore)
          yield* deliverUntil(childObject, Effect.map(quiet(childObject), Boolean), 10).pipe(Effect.ignore)
        }
        const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
        expect(settlement).toMatchObject({ outcome: "completed", output: ["true", "false"] })
        // The children ran in the other Object, linked to their parent, and settled there.
        for (const index of [0, 1]) {
          const child = clientOf(`verify-${index}`, childObject)
          const status = yield* child.threadStatus
          expect(status.nonterminal).toBe(0)
          const history = yield* child.history()
          expect(history.records[0]?.entry).toMatchObject({
            _tag: "SubmissionAccepted",
            parent: { submissionId: receipt.submissionId, step: index },
          })
        }
        // Every message was acknowledged; nothing is owed and no alarm is left on either side.
        for (const row of yield* outboxOf(parentObject)) expect(row["acknowledged_at"]).not.toBeNull()
        for (const row of yield* outboxOf(childObject)) expect(row["acknowledged_at"]).not.toBeNull()
        yield* deliverUntil(parentObject, quiet(parentObject))
        yield* deliverUntil(childObject, quiet(childObject))
      }),
  )

  it.live("a parent whose child answers within childAwaitMillis goes on in its first Attempt", () =>
    Effect.gen(function* () {
      /** One parent and its child in two fresh Objects: the parent's producer epoch once settled. */
      const round = (attempt: number) =>
        Effect.gen(function* () {
          const parentObject = threadName(`quick-parent-${attempt}`)
          const childObject = threadName(`quick-children-${attempt}`)
          const parent = clientOf("desk", parentObject)
          const receipt = yield* parent.submit({
            agentId: "delegator",
            idempotencyKey: "quick-1",
            input: { claims: ["real invoice"], verifierObject: childObject },
          })
          const settled = inState(parent, receipt.submissionId, "settled")
          yield* deliverBoth([stubOf(parentObject), stubOf(childObject)], settled)
          expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
            outcome: "completed",
            output: ["true"],
          })
          const [row] = yield* Effect.promise(() =>
            runInDurableObject(stubOf(parentObject), (_instance, state) =>
              state.storage.sql
                .exec(
                  "SELECT producer_epoch FROM effect_agent_submissions WHERE submission_id = ?",
                  receipt.submissionId,
                )
                .toArray(),
            ),
          )
          return row?.["producer_epoch"]
        })
      // The child runs on the child Object's own alarm during the parent's 250 ms wait; a runner
      // too slow for that parks the parent (epoch 2), so a few rounds are allowed. With no wait,
      // every round parks.
      const epochs: Array<unknown> = []
      for (let attempt = 0; attempt < 3 && !epochs.includes(1); attempt++) epochs.push(yield* round(attempt))
      expect(epochs).toContain(1)
    }),
  )

  it.live(
    "runs a child in an Object of another namespace binding; while it waits neither Object keeps an alarm",
    () =>
      Effect.gen(function* () {
        const parentObject = threadName("escalate")
        const reviewerObject = threadName("reviewer")
        const stubs = [stubOf(parentObject), env.THREADS_OTHER.getByName(reviewerObject)] as const
        const parent = clientOf("desk", parentObject)
        const reviews = ThreadClient.make(env.THREADS_OTHER, "reviews", { objectName: reviewerObject })
        const receipt = yield* parent.submit({
          agentId: "escalator",
          idempotencyKey: "e1",
          input: { draft: "refund 90", reviewerObject },
        })
        const childWaits = Effect.map(reviews.threadStatus, (status) => status.head?.state === "suspended")
        yield* deliverBoth(stubs, childWaits)
        // Both sides are stable waits: the parent on its child, the child on its reviewer.
        yield* deliverBoth(stubs, allAtRest(stubs))
        expect((yield* parent.status(receipt.submissionId)).state).toBe("suspended")
        // An operator asking why the parent does not move is told it waits for its child, which
        // keeps no alarm, not that it is runnable and waits for an alarm that is not set.
        expect((yield* parent.explain(receipt.submissionId)).reason).toEqual({
          _tag: "WaitingForChild",
          child: 0,
        })
        const child = (yield* reviews.threadStatus).head
        expect((yield* reviews.history()).records[0]?.entry).toMatchObject({
          _tag: "SubmissionAccepted",
          parent: { address: { namespace: "THREADS_TEST" }, submissionId: receipt.submissionId },
        })
        // The reviewer answers in the other namespace; the answer reaches the parent by alarms alone.
        yield* reviews.resolveApproval(child?.submissionId ?? "", { approved: true, note: "Sam" })
        const settled = inState(parent, receipt.submissionId, "settled")
        yield* deliverBoth(stubs, settled)
        expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
          outcome: "completed",
          output: "refund 90 approved (Sam)",
        })
        yield* deliverBoth(stubs, allAtRest(stubs))
      }),
  )

  it.live("runs a child in another Thread of its parent's own Object, by alarms alone", () =>
    Effect.gen(function* () {
      const object = threadName("self")
      const parent = clientOf("desk", object)
      const receipt = yield* parent.submit({
        agentId: "delegator",
        idempotencyKey: "own-object",
        input: { claims: ["fake claim"], verifierObject: object },
      })
      const settled = inState(parent, receipt.submissionId, "settled")
      yield* deliverUntil(object, settled)
      expect(yield* parent.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: ["false"],
      })
      yield* deliverUntil(object, quiet(object))
      for (const row of yield* outboxOf(object)) expect(row["acknowledged_at"]).not.toBeNull()
    }),
  )

  it.live("folds a follow-up into a running Submission and refuses a join nothing can take", () =>
    Effect.gen(function* () {
      const object = threadName("tally")
      const client = clientOf("tally", object)
      const refused = yield* Effect.flip(
        client.submit({ agentId: "tally", idempotencyKey: "early", input: { n: 1 }, mode: "join" }),
      )
      expect(refused).toMatchObject({ _tag: "JoinRefused", reason: "no-running-head" })
      const host = yield* client.submit({ agentId: "tally", idempotencyKey: "host", input: { n: 1 } })
      const suspended = inState(client, host.submissionId, "suspended")
      yield* deliverUntil(object, suspended)
      const follow = yield* client.submit({
        agentId: "tally",
        idempotencyKey: "follow",
        input: { n: 41 },
        mode: "join",
      })
      expect(follow.host).toBe(host.submissionId)
      expect((yield* client.status(follow.submissionId)).state).toBe("joining")
      // A parked host with a join waiting keeps the Object quiet: both are stable waits.
      yield* deliverUntil(object, quiet(object))
      yield* client.resolveApproval(host.submissionId, { approved: true })
      const done = inState(client, follow.submissionId, "settled")
      yield* deliverUntil(object, done)
      expect(yield* client.awaitSettlement(host.submissionId, 1_000)).toMatchObject({ output: 42 })
      expect(yield* client.awaitSettlement(follow.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: 42,
        host: host.submissionId,
      })
      yield* deliverUntil(object, quiet(object))
    }),
  )

  it.live("answers a routed request that does not decode with a protocol failure and writes nothing", () =>
    Effect.gen(function* () {
      const object = threadName("port")
      const before = yield* storedMaintenance(object)
      const result = yield* Effect.promise(() =>
        stubOf(object).portCall({ messageId: "m", request: { _tag: "ChildSettled", step: "one" } }),
      )
      expect(result).toMatchObject({
        ok: false,
        error: { _tag: "PortProtocolError", reason: "malformed-request" },
      })
      expect(yield* storedMaintenance(object)).toEqual(before)
      const described = yield* Effect.promise(() =>
        stubOf(object).portCall({
          messageId: "d",
          request: { _tag: "DescribeChild", threadId: "nobody", idempotencyKey: "none" },
        }),
      )
      expect(described).toEqual({ ok: true, value: { _tag: "ChildDescribed" } })
      // A read-only request bypasses the gate: no generation, no alarm.
      expect(yield* storedMaintenance(object)).toEqual(before)
    }),
  )
})
