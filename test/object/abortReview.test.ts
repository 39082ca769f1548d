/**
 * Aborts as an operator sends them, in every state a Submission can be in: queued, running a
 * long plain or uncertain step, sleeping, waiting for an event, hosting joins; and racing a
 * second abort and a forget. Each aborted Submission settles `aborted` once, the lane goes on,
 * and the Object comes to rest.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { effectRuns } from "../worker/threadObject.ts"
import { atRest, clientOf, deliverUntil, failureOf, inState, stubOf, threadName } from "./support.ts"

const runs = (submissionId: string, name: string) => effectRuns.get(`${submissionId}:${name}`) ?? 0

const settledRecords = (client: ReturnType<typeof clientOf>, submissionId: string) =>
  Effect.map(client.history({ limit: 500 }), (page) =>
    page.records.filter(
      (record) => record.submissionId === submissionId && record.entry._tag === "SubmissionSettled",
    ),
  )

/** Waits (real time) until `condition` holds, up to `millis`. */
const until = (condition: () => boolean, millis = 5_000) =>
  Effect.gen(function* () {
    const start = Date.now()
    while (!condition()) {
      if (Date.now() - start > millis) return yield* Effect.die(new Error("condition not reached"))
      yield* Effect.sleep(10)
    }
  })

/** A `gather` host parked on its first approval, with a follow-up submitted to join it. */
const hostWithFollowUp = (label: string) =>
  Effect.gen(function* () {
    const thread = threadName(label)
    const client = clientOf(thread)
    const host = yield* client.submit({ agentId: "gather", idempotencyKey: "h", input: { n: 1 } })
    yield* deliverUntil(thread, inState(client, host.submissionId, "suspended"))
    const joined = yield* client.submit({
      agentId: "gather",
      idempotencyKey: "j",
      input: { n: 10 },
      mode: "join",
    })
    return { thread, client, host, joined }
  })

/** Aborts a Submission and waits until it settled, `aborted`. */
const abortSettled = (thread: string, client: ReturnType<typeof clientOf>, submissionId: string) =>
  Effect.gen(function* () {
    yield* client.abort(submissionId)
    yield* deliverUntil(thread, inState(client, submissionId, "settled"))
    expect(yield* client.awaitSettlement(submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
  })

describe("abort, as an operator sends it", () => {
  it.live("stops a long plain step at once; the lane's next Submission runs", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-plain")
      const client = clientOf(thread)
      const slow = yield* client.submit({ agentId: "slow", idempotencyKey: "s", input: { millis: 4_000 } })
      const next = yield* client.submit({ agentId: "echo", idempotencyKey: "n", input: { text: "next" } })
      yield* until(() => runs(slow.submissionId, "slow-start") === 1)
      const before = Date.now()
      yield* client.abort(slow.submissionId)
      expect(Date.now() - before).toBeLessThan(1_500)
      yield* deliverUntil(thread, inState(client, next.submissionId, "settled"))
      expect(Date.now() - before).toBeLessThan(3_000)
      expect(yield* client.awaitSettlement(slow.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      expect((yield* client.awaitSettlement(slow.submissionId, 1_000)).error).toBeUndefined()
      expect(yield* client.awaitSettlement(next.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: "echo: next",
      })
      expect(runs(slow.submissionId, "after")).toBe(0)
      expect(yield* settledRecords(client, slow.submissionId)).toHaveLength(1)
      yield* deliverUntil(thread, atRest(stubOf(thread)))
      expect((yield* client.verify).violations).toEqual([])
    }),
  )

  it.live("lets a long uncertain step finish, then settles aborted without the next step", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-uncertain")
      const client = clientOf(thread)
      const slow = yield* client.submit({
        agentId: "slow",
        idempotencyKey: "s",
        input: { millis: 1_500, uncertain: true },
      })
      const next = yield* client.submit({ agentId: "echo", idempotencyKey: "n", input: { text: "next" } })
      yield* until(() => runs(slow.submissionId, "slow-start") === 1)
      const before = Date.now()
      yield* client.abort(slow.submissionId)
      expect(Date.now() - before).toBeLessThan(1_000)
      yield* deliverUntil(thread, inState(client, next.submissionId, "settled"))
      expect(yield* client.awaitSettlement(slow.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      expect(runs(slow.submissionId, "slow-end")).toBe(1)
      expect(runs(slow.submissionId, "after")).toBe(0)
      expect(yield* settledRecords(client, slow.submissionId)).toHaveLength(1)
      yield* deliverUntil(thread, atRest(stubOf(thread)))
      expect((yield* client.verify).violations).toEqual([])
    }),
  )

  it.live("ends a durable sleep: no alarm is left for the timer", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-sleep")
      const client = clientOf(thread)
      const nap = yield* client.submit({
        agentId: "nap",
        idempotencyKey: "n",
        input: { text: "zz", millis: 3_600_000 },
      })
      const next = yield* client.submit({ agentId: "echo", idempotencyKey: "e", input: { text: "next" } })
      yield* deliverUntil(thread, inState(client, nap.submissionId, "waiting"))
      yield* client.abort(nap.submissionId)
      yield* deliverUntil(thread, inState(client, next.submissionId, "settled"))
      expect(yield* client.awaitSettlement(nap.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      yield* deliverUntil(thread, atRest(stubOf(thread)))
      const obligations = yield* client.obligations
      expect(obligations.obligations).toEqual([])
      expect((yield* client.verify).violations).toEqual([])
    }),
  )

  it.live("ends an event wait; a late event is refused", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-event")
      const client = clientOf(thread)
      const courier = yield* client.submit({
        agentId: "courier",
        idempotencyKey: "c",
        input: { wait: "first" },
      })
      yield* deliverUntil(thread, inState(client, courier.submissionId, "suspended"))
      yield* abortSettled(thread, client, courier.submissionId)
      expect(
        failureOf(yield* Effect.exit(client.sendEvent(courier.submissionId, "shipped", { tracking: "t" }))),
      ).toMatchObject({ _tag: "EventRefused" })
      yield* deliverUntil(thread, atRest(stubOf(thread)))
    }),
  )

  it.live("answers unknown, other-Thread and forgotten ids with SubmissionNotFound", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-ids")
      const client = clientOf(thread)
      const other = clientOf(threadName("abort-ids-other"), thread)
      const theirs = yield* other.submit({ agentId: "review", idempotencyKey: "t", input: { draft: "d" } })
      for (const id of [theirs.submissionId, "S".repeat(20), "nope"]) {
        expect(failureOf(yield* Effect.exit(client.abort(id)))).toMatchObject({ _tag: "SubmissionNotFound" })
      }
      for (const id of ["", "x".repeat(5_000)]) {
        expect(failureOf(yield* Effect.exit(client.abort(id)))).toMatchObject({
          _tag: "InvalidRequest",
          entryPoint: "abort",
        })
      }
      expect((yield* other.status(theirs.submissionId)).state).not.toBe("settled")
      yield* other.abort(theirs.submissionId)
      yield* other.abort(theirs.submissionId)
      yield* deliverUntil(thread, inState(other, theirs.submissionId, "settled"))
      expect(yield* settledRecords(other, theirs.submissionId)).toHaveLength(1)
      yield* other.forget(theirs.submissionId)
      expect(failureOf(yield* Effect.exit(other.abort(theirs.submissionId)))).toMatchObject({
        _tag: "SubmissionNotFound",
      })
      yield* deliverUntil(thread, atRest(stubOf(thread)))
    }),
  )

  it.live("a delayed Submission aborted before its time: settled now, and no alarm is kept for it", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-delayed")
      const client = clientOf(thread)
      const later = yield* client.submit({
        agentId: "echo",
        idempotencyKey: "l",
        input: { text: "later" },
        notBefore: Date.now() + 3_600_000,
      })
      const next = yield* client.submit({ agentId: "echo", idempotencyKey: "n", input: { text: "next" } })
      yield* deliverUntil(thread, inState(client, later.submissionId, "waiting"))
      yield* client.abort(later.submissionId)
      yield* deliverUntil(thread, inState(client, next.submissionId, "settled"))
      expect(yield* client.awaitSettlement(later.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      expect(runs(later.submissionId, "echo")).toBe(0)
      yield* deliverUntil(thread, atRest(stubOf(thread)))
      expect((yield* client.obligations).obligations).toEqual([])
    }),
  )

  it.live("a join host aborted before it reads its follow-up: the follow-up runs as its own", () =>
    Effect.gen(function* () {
      const { thread, client, host, joined } = yield* hostWithFollowUp("abort-host-unread")
      yield* abortSettled(thread, client, host.submissionId)
      // The follow-up now runs as a Submission of its own: it asks for its own approval.
      yield* deliverUntil(thread, inState(client, joined.submissionId, "suspended"))
      yield* abortSettled(thread, client, joined.submissionId)
      yield* deliverUntil(thread, atRest(stubOf(thread)))
      expect((yield* client.verify).violations).toEqual([])
    }),
  )

  it.live("a join host aborted after it read its follow-up: the follow-up settles aborted with it", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-host-read")
      const client = clientOf(thread)
      const host = yield* client.submit({ agentId: "gather", idempotencyKey: "h", input: { n: 1 } })
      const after = yield* client.submit({ agentId: "echo", idempotencyKey: "e", input: { text: "after" } })
      yield* deliverUntil(thread, inState(client, host.submissionId, "suspended"))
      const joined = yield* client.submit({
        agentId: "gather",
        idempotencyKey: "j",
        input: { n: 10 },
        mode: "join",
      })
      yield* client.resolveApproval(host.submissionId, { approved: true })
      yield* deliverUntil(
        thread,
        Effect.map(
          client.explain(host.submissionId),
          (e) => e.reason._tag === "WaitingForApproval" && e.reason.step > 0,
        ),
      )
      expect((yield* client.status(joined.submissionId)).state).toBe("joined")
      yield* client.abort(host.submissionId)
      yield* deliverUntil(thread, inState(client, after.submissionId, "settled"))
      expect(yield* client.awaitSettlement(host.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      const follow = yield* client.awaitSettlement(joined.submissionId, 1_000)
      expect(follow).toMatchObject({ outcome: "aborted", host: host.submissionId })
      expect(yield* settledRecords(client, joined.submissionId)).toHaveLength(1)
      yield* deliverUntil(thread, atRest(stubOf(thread)))
      expect((yield* client.verify).violations).toEqual([])
    }),
  )

  it.live("a follow-up its host read, aborted by itself: it settles once, the host goes on", () =>
    Effect.gen(function* () {
      const { thread, client, host, joined } = yield* hostWithFollowUp("abort-joined")
      yield* client.resolveApproval(host.submissionId, { approved: true })
      yield* deliverUntil(
        thread,
        Effect.map(
          client.explain(host.submissionId),
          (e) => e.reason._tag === "WaitingForApproval" && e.reason.step > 0,
        ),
      )
      yield* abortSettled(thread, client, joined.submissionId)
      yield* client.resolveApproval(host.submissionId, { approved: true })
      yield* deliverUntil(thread, inState(client, host.submissionId, "settled"))
      expect(yield* client.awaitSettlement(host.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: 11,
      })
      expect(yield* settledRecords(client, joined.submissionId)).toHaveLength(1)
      expect(yield* client.awaitSettlement(joined.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      yield* deliverUntil(thread, atRest(stubOf(thread)))
      expect((yield* client.verify).violations).toEqual([])
    }),
  )

  it.live("a joining follow-up aborted before its host reads it settles aborted by itself", () =>
    Effect.gen(function* () {
      const { thread, client, host, joined } = yield* hostWithFollowUp("abort-joining")
      yield* abortSettled(thread, client, joined.submissionId)
      yield* client.resolveApproval(host.submissionId, { approved: true })
      yield* deliverUntil(
        thread,
        Effect.map(
          client.explain(host.submissionId),
          (e) => e.reason._tag === "WaitingForApproval" && e.reason.step > 0,
        ),
      )
      yield* client.resolveApproval(host.submissionId, { approved: true })
      yield* deliverUntil(thread, inState(client, host.submissionId, "settled"))
      expect(yield* client.awaitSettlement(host.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: 1,
      })
      yield* deliverUntil(thread, atRest(stubOf(thread)))
    }),
  )

  it.live("an aborted schedule occurrence settles; the schedule admits the next one", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-schedule")
      const client = clientOf(thread)
      yield* client.schedule({
        scheduleId: "s",
        agentId: "review",
        input: { draft: "d" },
        everyMillis: 1_000,
      })
      const first = yield* Effect.gen(function* () {
        for (let round = 0; round < 200; round++) {
          const page = yield* client.submissionPage({})
          if (page.submissions.length > 0) return page.submissions[0]!.submission.submissionId
          yield* Effect.sleep(20)
        }
        return yield* Effect.die(new Error("no occurrence"))
      })
      yield* abortSettled(thread, client, first)
      yield* Effect.sleep(1_200)
      yield* deliverUntil(
        thread,
        Effect.map(client.submissionPage({}), (page) => page.submissions.length >= 2),
      )
      yield* client.unschedule("s")
      const page = yield* client.submissionPage({})
      for (const summary of page.submissions) yield* client.abort(summary.submission.submissionId)
      yield* deliverUntil(thread, atRest(stubOf(thread)))
    }),
  )

  it.live("an abort racing a forget: forget refuses what has not settled, then removes it", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-forget")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "review", idempotencyKey: "r", input: { draft: "d" } })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
      yield* client.abort(receipt.submissionId)
      const forgotten = yield* Effect.exit(client.forget(receipt.submissionId))
      // The pool may deliver the abort's pass before the forget: then it removes a settled one.
      if (Exit.isFailure(forgotten)) {
        expect(failureOf(forgotten)).toMatchObject({ _tag: "ForgetRefused" })
        yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
        yield* client.forget(receipt.submissionId)
      }
      expect(failureOf(yield* Effect.exit(client.status(receipt.submissionId)))).toMatchObject({
        _tag: "SubmissionNotFound",
      })
      yield* deliverUntil(thread, atRest(stubOf(thread)))
    }),
  )

  it.live("an abort accepted while the last call runs settles aborted, not completed", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-last")
      const client = clientOf(thread)
      const plain = yield* client.submit({
        agentId: "slow",
        idempotencyKey: "p",
        input: { millis: 200, last: true },
      })
      const uncertain = yield* client.submit({
        agentId: "slow",
        idempotencyKey: "u",
        input: { millis: 1_000, uncertain: true, last: true },
      })
      yield* until(() => runs(plain.submissionId, "slow-start") === 1)
      yield* client.abort(plain.submissionId)
      yield* until(() => runs(uncertain.submissionId, "slow-start") === 1)
      yield* client.abort(uncertain.submissionId)
      yield* deliverUntil(thread, inState(client, uncertain.submissionId, "settled"))
      // Both aborts were accepted (the calls succeeded) while the Submissions ran.
      expect(yield* client.awaitSettlement(plain.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
      expect(yield* client.awaitSettlement(uncertain.submissionId, 1_000)).toMatchObject({
        outcome: "aborted",
      })
    }),
  )
})
