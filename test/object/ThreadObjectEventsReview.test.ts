/**
 * Events and decisions as a user meets them: payload limits, many queued events, a parked
 * Submission's alarm, approval timeouts racing a decision, aborts racing approvals, and
 * Unknown Outcomes resolved twice or with a value of the wrong kind.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test"
import { Effect } from "effect"
import { DurableRuntimeFailpointError } from "../../src/Testing.ts"
import * as ThreadClient from "../../src/ThreadClient.ts"
import {
  courierAgent,
  deadlineAgent,
  effectRuns,
  operatorToken,
  switchboard,
  tickerAgent,
} from "../worker/threadObject.ts"
import {
  clientOf,
  deliverUntil,
  failureOf,
  inState,
  storedEverything,
  storedMaintenance,
  stubOf,
  threadName,
} from "./support.ts"

const submitCourier = (thread: string, wait: "after-approval" | "first") =>
  Effect.gen(function* () {
    const client = clientOf(thread)
    const receipt = yield* client.agent(courierAgent).submit({ wait }, { idempotencyKey: "k" })
    yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
    return { client, receipt }
  })

/**
 * A Submission of `agentId` whose uncertain step was cut right after its start (a failpoint, once):
 * an Unknown Outcome waiting for a resolution.
 */
const unknownOutcome = (label: string, agentId: "charge" | "strict-charge") =>
  Effect.gen(function* () {
    const thread = threadName(label)
    const client = clientOf(thread)
    let hits = 0
    switchboard.install(stubOf(thread).id, {
      runtime: (hit) =>
        hit === "uncertain:after-start-append" && ++hits === 1
          ? Effect.fail(new DurableRuntimeFailpointError({ location: hit, message: "injected" }))
          : Effect.void,
    })
    const receipt = yield* client.submit({ agentId, idempotencyKey: "k", input: { amount: 5 } })
    yield* deliverUntil(
      thread,
      Effect.map(client.explain(receipt.submissionId), (e) => e.reason._tag === "UnknownOutcome"),
    ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))))
    return { thread, client, receipt }
  })

describe("events and decisions, as a user", () => {
  it.live("refuses a payload over maxStoredValueBytes as payload-bytes, writing nothing", () =>
    Effect.gen(function* () {
      // An Object of the default limits: the request bound (1 MiB + 64 Ki) is above the value's.
      const thread = threadName("big-payload")
      const client = ThreadClient.make(env.AUTHORIZED_TEST, thread, {
        caller: { subject: "sam", credential: operatorToken },
      })
      const stub = env.AUTHORIZED_TEST.getByName(thread)
      const receipt = yield* client.submit({ agentId: "review", idempotencyKey: "k", input: { draft: "d" } })
      for (let round = 0; round < 60; round++) {
        if ((yield* client.status(receipt.submissionId)).state === "suspended") break
        yield* Effect.promise(() => runDurableObjectAlarm(stub).catch(() => false))
        yield* Effect.sleep(5)
      }
      const before = yield* storedEverything(stub)
      const refused = failureOf(
        yield* Effect.exit(client.sendEvent(receipt.submissionId, "note", { text: "x".repeat(140_000) })),
      )
      expect(refused).toMatchObject({ _tag: "EventRefused", reason: "payload-bytes" })
      expect(yield* storedEverything(stub)).toEqual(before)
    }),
  )

  it.live("a parked Submission keeps no alarm, and explain names its wait", () =>
    Effect.gen(function* () {
      const thread = threadName("no-alarm")
      const { client, receipt } = yield* submitCourier(thread, "after-approval")
      expect((yield* storedMaintenance(thread)).alarm).toBeNull()
      const explained = yield* client.explain(receipt.submissionId)
      expect(explained.reason).toMatchObject({ _tag: "WaitingForApproval" })
      yield* client.resolveApproval(receipt.submissionId, { approved: true })
      yield* deliverUntil(
        thread,
        Effect.map(client.explain(receipt.submissionId), (e) => e.reason._tag === "WaitingForEvent"),
      )
      expect((yield* storedMaintenance(thread)).alarm).toBeNull()
      expect((yield* client.explain(receipt.submissionId)).reason).toMatchObject({
        _tag: "WaitingForEvent",
        event: "shipped",
      })
      // Approving a Submission that waits for an event, not a decision.
      expect(
        failureOf(yield* Effect.exit(client.resolveApproval(receipt.submissionId, { approved: true }))),
      ).toMatchObject({ _tag: "NotPending", expected: "approval" })
    }),
  )

  it.live("many events queued before the waits are each taken once, in the order they arrived", () =>
    Effect.gen(function* () {
      const thread = threadName("many")
      const client = clientOf(thread)
      const receipt = yield* client.agent(tickerAgent).submit({ count: 25 }, { idempotencyKey: "k" })
      for (let index = 0; index < 25; index++)
        yield* client.sendEvent(receipt.submissionId, "tick", index, { eventId: `t${index}` })
      // Repeats of the same ids change nothing.
      for (let index = 0; index < 25; index += 5)
        expect(
          yield* client.sendEvent(receipt.submissionId, "tick", -1, { eventId: `t${index}` }),
        ).toMatchObject({ replayed: true })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: Array.from({ length: 25 }, (_, index) => index),
      })
    }),
  )

  it.live("events sent while parked on each wait resume it one at a time", () =>
    Effect.gen(function* () {
      const thread = threadName("each")
      const client = clientOf(thread)
      const receipt = yield* client.agent(tickerAgent).submit({ count: 3 }, { idempotencyKey: "k" })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
      for (let index = 0; index < 3; index++) {
        expect(yield* client.sendEvent(receipt.submissionId, "tick", index)).toMatchObject({ resumed: true })
        yield* deliverUntil(
          thread,
          Effect.map(
            client.status(receipt.submissionId),
            (s) => s.state === "suspended" || s.state === "settled",
          ),
        )
        expect((yield* storedMaintenance(thread)).alarm).toBeNull()
      }
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: [0, 1, 2],
      })
    }),
  )

  it.live(
    "an approval timeout: the alarm is at the due time, and a decision after ApprovalTimedOut is refused",
    () =>
      Effect.gen(function* () {
        const thread = threadName("deadline")
        const client = clientOf(thread)
        const receipt = yield* client
          .agent(deadlineAgent)
          .submit({ timeoutMillis: 300 }, { idempotencyKey: "k" })
        yield* deliverUntil(thread, inState(client, receipt.submissionId, "waiting"))
        const explained = yield* client.explain(receipt.submissionId)
        expect(explained.reason).toMatchObject({ _tag: "WaitingForApproval" })
        const timesOutAt = (explained.reason as { timesOutAt?: number }).timesOutAt
        expect(timesOutAt).toBeDefined()
        expect((yield* storedMaintenance(thread)).alarm).toBe(timesOutAt)
        yield* Effect.sleep(350)
        yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
        expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
          outcome: "completed",
          output: "timed out at call 0",
        })
        expect(
          failureOf(yield* Effect.exit(client.resolveApproval(receipt.submissionId, { approved: true }))),
        ).toMatchObject({ _tag: "NotPending", expected: "approval" })
      }),
  )

  it.live("a decision that arrives after the due time but before the timeout is journaled wins", () =>
    Effect.gen(function* () {
      const thread = threadName("late-decision")
      const client = clientOf(thread)
      const receipt = yield* client
        .agent(deadlineAgent)
        .submit({ timeoutMillis: 100 }, { idempotencyKey: "k" })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "waiting"))
      // The pass at the due time fails before it begins, so the decision comes first.
      switchboard.install(stubOf(thread).id, {
        maintenance: (location) =>
          location === "maintenance:begin:before" ? Effect.die(new Error("held")) : Effect.void,
      })
      yield* Effect.sleep(150)
      yield* client
        .resolveApproval(receipt.submissionId, { approved: true, note: "late" })
        .pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))))
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: "approved (late)",
      })
    }),
  )

  it.live("an abort accepted first ends the approval wait: the decision after it is refused", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-first")
      const { client, receipt } = yield* submitCourier(thread, "after-approval")
      yield* client.abort(receipt.submissionId)
      expect(
        failureOf(yield* Effect.exit(client.resolveApproval(receipt.submissionId, { approved: true }))),
      ).toMatchObject({ _tag: "NotPending", expected: "approval" })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
    }),
  )

  it.live("an approval accepted first, then an abort: the Submission settles aborted once", () =>
    Effect.gen(function* () {
      const thread = threadName("approve-first")
      const { client, receipt } = yield* submitCourier(thread, "after-approval")
      yield* client.resolveApproval(receipt.submissionId, { approved: true })
      yield* client.abort(receipt.submissionId)
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      const settled = (yield* client.history()).records.filter(
        (record) => record.entry._tag === "SubmissionSettled",
      )
      expect(settled).toHaveLength(1)
    }),
  )

  it.live("an Unknown Outcome resolved twice: the second is refused; a wrong step is refused", () =>
    Effect.gen(function* () {
      const { thread, client, receipt } = yield* unknownOutcome("unknown-twice", "charge")
      const reason = (yield* client.explain(receipt.submissionId)).reason as { step: number }
      expect(
        failureOf(
          yield* Effect.exit(
            client.resolveUnknown(
              receipt.submissionId,
              { _tag: "Succeeded", value: "charged 5" },
              { step: reason.step + 1 },
            ),
          ),
        ),
      ).toMatchObject({ _tag: "NotPending", expected: "unknown-outcome" })
      yield* client.resolveUnknown(
        receipt.submissionId,
        { _tag: "Succeeded", value: "charged 5" },
        { step: reason.step },
      )
      expect(
        failureOf(
          yield* Effect.exit(
            client.resolveUnknown(
              receipt.submissionId,
              { _tag: "Failed", message: "no" },
              { step: reason.step },
            ),
          ),
        ),
      ).toMatchObject({ _tag: "NotPending", expected: "unknown-outcome" })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: "charged 5",
      })
      expect(effectRuns.get(`${receipt.submissionId}:charge`)).toBeUndefined()
    }),
  )

  it.live("an Unknown Outcome resolved with a value of the wrong kind", () =>
    Effect.gen(function* () {
      const { thread, client, receipt } = yield* unknownOutcome("unknown-wrong", "charge")
      // Without a result Schema nothing checks the value: the output Schema refuses it.
      yield* client.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: 42 })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "failed",
        error: "the output does not encode: Expected string",
      })
      expect(effectRuns.get(`${receipt.submissionId}:charge`)).toBeUndefined()
    }),
  )

  it.live(
    "an event whose first write is cut after it committed: the retry is replayed, and the lane wakes",
    () =>
      Effect.gen(function* () {
        const thread = threadName("cut-event")
        const { client, receipt } = yield* submitCourier(thread, "first")
        switchboard.install(stubOf(thread).id, {
          runtime: (hit) =>
            hit === "event:after-receive"
              ? Effect.fail(new DurableRuntimeFailpointError({ location: hit, message: "injected" }))
              : Effect.void,
        })
        const send = client.sendEvent(receipt.submissionId, "shipped", { tracking: "T-cut" })
        const first = yield* Effect.exit(send)
        switchboard.remove(stubOf(thread).id)
        expect(first._tag).toBe("Failure")
        expect(yield* send).toMatchObject({ replayed: true })
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(thread)).catch(() => false))
        yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
        expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
          outcome: "completed",
          output: "T-cut",
        })
      }),
  )

  it.live("refuses a payload that is not JSON from the JSON client as InvalidRequest", () =>
    Effect.gen(function* () {
      const thread = threadName("odd")
      const { client, receipt } = yield* submitCourier(thread, "first")
      for (const payload of [undefined, Number.NaN, { when: new Date(0) }, { n: 1n }, { a: undefined }])
        expect(
          failureOf(yield* Effect.exit(client.sendEvent(receipt.submissionId, "note", payload as never))),
        ).toMatchObject({ _tag: "InvalidRequest", entryPoint: "sendEvent" })
      expect((yield* client.status(receipt.submissionId)).state).toBe("suspended")
    }),
  )
})

describe("an event racing the park", () => {
  it.live("an event sent while the Attempt parks on its wait resumes it, written once", () =>
    Effect.gen(function* () {
      const thread = threadName("race-park")
      const client = clientOf(thread)
      const receipt = yield* client.agent(tickerAgent).submit({ count: 1 }, { idempotencyKey: "k" })
      let sent: Promise<unknown> | undefined
      switchboard.install(stubOf(thread).id, {
        runtime: (hit) =>
          hit === "ledger:park:before" && sent === undefined
            ? Effect.gen(function* () {
                sent = Effect.runPromise(
                  Effect.exit(client.sendEvent(receipt.submissionId, "tick", 7, { eventId: "raced" })),
                )
                yield* Effect.sleep(50)
              })
            : Effect.void,
      })
      yield* deliverUntil(
        thread,
        Effect.map(client.status(receipt.submissionId), (s) => s.state !== "admitted" && sent !== undefined),
      ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))))
      expect(yield* Effect.promise(() => sent!)).toMatchObject({
        _tag: "Success",
        value: { replayed: false },
      })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: [7],
      })
      const records = (yield* client.history()).records.filter(
        (record) => record.entry._tag === "EventReceived",
      )
      expect(records).toHaveLength(1)
      expect((yield* storedMaintenance(thread)).alarm).toBeNull()
    }),
  )

  it.live("an event whose write committed before the Object was reset still wakes the lane", () =>
    Effect.gen(function* () {
      const thread = threadName("evicted")
      const { client, receipt } = yield* submitCourier(thread, "first")
      switchboard.install(stubOf(thread).id, {
        runtime: (hit) =>
          hit === "event:after-receive"
            ? Effect.fail(new DurableRuntimeFailpointError({ location: hit, message: "cut" }))
            : Effect.void,
      })
      const exit = yield* Effect.exit(client.sendEvent(receipt.submissionId, "shipped", { tracking: "E" }))
      switchboard.remove(stubOf(thread).id)
      expect(exit._tag).toBe("Failure")
      // Reset this Object alone: aborting every Object would cut other files' Objects too.
      yield* Effect.promise(() =>
        runInDurableObject(stubOf(thread), (_instance, state) => state.abort("reset")).catch(() => undefined),
      )
      // Nothing but the alarm: the committed event's generation owes a pass.
      expect((yield* storedMaintenance(thread)).alarm).not.toBeNull()
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: "E",
      })
    }),
  )

  it.live("a resolution whose value the step's result Schema refuses reopens the Unknown Outcome", () =>
    Effect.gen(function* () {
      const thread = threadName("unknown-strict")
      const client = clientOf(thread)
      let hits = 0
      switchboard.install(stubOf(thread).id, {
        runtime: (hit) =>
          hit === "uncertain:after-start-append" && ++hits === 1
            ? Effect.fail(new DurableRuntimeFailpointError({ location: hit, message: "injected" }))
            : Effect.void,
      })
      const receipt = yield* client.submit({
        agentId: "strict-charge",
        idempotencyKey: "k",
        input: { amount: 5 },
      })
      const unknown = Effect.map(
        client.explain(receipt.submissionId),
        (explained) => explained.reason._tag === "UnknownOutcome",
      )
      yield* deliverUntil(thread, unknown).pipe(
        Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))),
      )
      yield* client.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: "five" })
      yield* Effect.sleep(20)
      yield* deliverUntil(thread, unknown)
      expect((yield* storedMaintenance(thread)).alarm).toBeNull()
      yield* client.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: 5 })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: 5,
      })
      expect(effectRuns.get(`${receipt.submissionId}:charge`)).toBeUndefined()
    }),
  )
})
