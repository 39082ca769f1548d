/**
 * Conformance cases: how timed waits begin and end besides a park. A Submission admitted with a
 * later `notBefore` waits at the head of an empty lane, or keeps its place behind others and is
 * parked once (`deferHead`) when it becomes the head early; a wait ends early by `wake`, or by
 * a resolution that resumes it; an abort settles a waiting row out of the due order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { SubmissionLedger, type WaitRecord } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import {
  admitNew,
  admitReady,
  claimHead,
  grant,
  owner,
  parkHead,
  recordTags,
  request,
  rowOf,
  settleHead,
  settlementOf,
  unowned,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

const ids = (rows: ReadonlyArray<{ readonly submissionId: string }>) => rows.map((row) => row.submissionId)

/** Registers the delayed-admission and early-end cases. */
export const delayedCases = (harness: LedgerHarness) => {
  describe("delayed admission and early ends", () => {
    it.effect("admit a later notBefore on an empty lane as a waiting head, recorded in its acceptance", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          const delayed = yield* admitNew(request("t", "later", { notBefore: 9_000 }))
          expect([delayed.state, delayed.dueAt, delayed.readyAt, delayed.wait]).toEqual([
            "waiting",
            9_000,
            9_000,
            { _tag: "Delayed", notBefore: 9_000 },
          ])
          expect(yield* rowOf(delayed.submissionId)).toEqual(delayed)
          const [accepted] = yield* history.forSubmission(delayed.submissionId)
          expect(accepted?.entry).toMatchObject({ _tag: "SubmissionAccepted", notBefore: 9_000 })
          // What is admitted after it waits for it.
          const after = yield* admitReady(request("t", "after"))
          expect(yield* ledger.laneHeads).toEqual([])
          expect(yield* ledger.claim(ThreadId.make("t"), grant(1, 8_999))).toEqual(Option.none())
          expect(yield* ledger.nextDue(8_999, { limit: 5 })).toEqual([])
          const claim = Option.getOrThrow(yield* ledger.claimDue(delayed.submissionId, grant(2, 9_000)))
          yield* ledger.settle(owner(claim), settlementOf(claim))
          expect(ids(yield* ledger.laneHeads)).toEqual([after.submissionId])
          // A notBefore that has passed admits as usual, and its record says nothing of it.
          const due = yield* admitNew(request("u", "due", { notBefore: 1_000 }))
          expect([due.state, due.dueAt, due.wait]).toEqual(["ready", undefined, undefined])
          const [plain] = yield* history.forSubmission(due.submissionId)
          expect(plain?.entry).not.toHaveProperty("notBefore")
        }),
      ),
    )

    it.effect(
      "keep a delayed row's place behind others and park it once when it becomes the head early",
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            yield* admitReady(request("t", "first"))
            const delayed = yield* admitNew(request("t", "later", { notBefore: 9_000 }))
            expect([delayed.state, delayed.dueAt]).toEqual(["ready", 9_000])
            // Not the head yet: it cannot be parked.
            const early = yield* Effect.flip(
              ledger.deferHead({
                _tag: "Unowned",
                submissionId: delayed.submissionId,
                producerEpoch: 0,
                now: 2_000,
              }),
            )
            expect(early._tag).toBe("InvalidTransition")
            yield* settleHead("t", 2_000)
            // The head now, but not due: listed as a head, refused by the lane claim.
            expect(ids(yield* ledger.laneHeads)).toEqual([delayed.submissionId])
            expect(yield* ledger.claim(ThreadId.make("t"), grant(2, 3_000))).toEqual(Option.none())
            const fence = {
              _tag: "Unowned",
              submissionId: delayed.submissionId,
              producerEpoch: 0,
              now: 3_000,
            } as const
            const parked = yield* ledger.deferHead(fence)
            expect([parked.state, parked.dueAt, parked.producerEpoch]).toEqual(["waiting", 9_000, 0])
            expect(yield* ledger.deferHead({ ...fence, now: 3_100 })).toEqual(parked)
            expect(yield* ledger.laneHeads).toEqual([])
            expect(ids(yield* ledger.nextDue(9_000, { limit: 5 }))).toEqual([delayed.submissionId])
            // A head that is due is claimed by its lane, not parked.
            yield* admitReady(request("u", "first"))
            const soon = yield* admitNew(request("u", "soon", { notBefore: 4_000 }))
            yield* settleHead("u", 3_000)
            const late = yield* Effect.flip(
              ledger.deferHead({ ...fence, submissionId: soon.submissionId, now: 4_000 }),
            )
            expect(late._tag).toBe("InvalidTransition")
            const claimed = Option.getOrThrow(yield* ledger.claim(ThreadId.make("u"), grant(3, 4_000)))
            expect([claimed.submissionId, claimed.dueAt]).toEqual([soon.submissionId, undefined])
            expect((yield* rowOf(soon.submissionId)).dueAt).toBeUndefined()
          }),
        ),
    )

    it.effect("refuse a join with a later notBefore, writing nothing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const host = yield* admitReady(request("t", "host"))
          yield* claimHead("t", grant(1, 2_000))
          const refused = yield* Effect.flip(
            ledger.admit(request("t", "join", { host: host.submissionId, notBefore: 9_000, now: 2_100 })),
          )
          expect(refused._tag).toBe("LedgerError")
          expect(yield* ledger.countNonterminal(ThreadId.make("t"))).toBe(1)
        }),
      ),
    )

    it.effect("end a wait early by wake, with its records, under the fence of what the sender read", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const { suspended } = yield* parkHead("t", grant(1, 2_000))
          const input = { _tag: "Input", submissionId: suspended.submissionId, producerEpoch: 1 } as const
          const moved = yield* Effect.flip(ledger.wake({ ...input, state: "waiting" }, 3_000))
          expect(moved._tag).toBe("FenceRejected")
          const woken = yield* ledger.wake({ ...input, state: "suspended" }, 3_000, {
            entries: [{ _tag: "AbortRequested" }],
            now: 3_000,
          })
          expect([woken.state, woken.dueAt, woken.producerEpoch]).toEqual(["waiting", 3_000, 1])
          expect(yield* recordTags(suspended.submissionId)).toEqual(["SubmissionAccepted", "AbortRequested"])
          expect(ids(yield* ledger.nextDue(3_000, { limit: 5 }))).toEqual([suspended.submissionId])
          // A row that is not parked has no wait to end.
          const queued = yield* admitReady(request("q", "a"))
          const refused = yield* Effect.flip(
            ledger.wake(
              { _tag: "Input", submissionId: queued.submissionId, producerEpoch: 0, state: "ready" },
              1,
            ),
          )
          expect(refused._tag).toBe("InvalidTransition")
          const missing = yield* Effect.flip(
            ledger.wake({ ...input, submissionId: SubmissionId.make("missing"), state: "waiting" }, 1),
          )
          expect(missing._tag).toBe("SubmissionNotFound")
        }),
      ),
    )

    it.effect("resume a waiting row by a resolution, which drops its due time and reopens its lane", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const claim = yield* claimHead("t", grant(1, 2_000))
          const wait: WaitRecord = { _tag: "Approval", step: 0, dueAt: 90_000, since: 2_000 }
          const parked = yield* ledger.parkTimed(owner(claim), { wait, dueAt: 90_000, now: 2_000 })
          const resumed = yield* ledger.transition(unowned(parked, 3_000), "ready", {
            entries: [{ _tag: "ApprovalResolved", step: 0, approved: true }],
            now: 3_000,
          })
          expect([resumed.state, resumed.dueAt, resumed.wait]).toEqual(["ready", undefined, wait])
          expect(yield* ledger.earliestDue(5)).toEqual([])
          const next = Option.getOrThrow(yield* ledger.claim(ThreadId.make("t"), grant(2, 3_100)))
          expect(next.producerEpoch).toBe(2)
        }),
      ),
    )

    it.effect("settle an aborted waiting row out of the due order", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const delayed = yield* admitNew(request("t", "later", { notBefore: 9_000 }))
          const follower = yield* admitReady(request("t", "after"))
          const aborting = yield* ledger.requestAbort(delayed.submissionId)
          expect([aborting.state, aborting.abortRequested]).toEqual(["waiting", true])
          yield* ledger.settle(unowned(aborting, 2_000), settlementOf(aborting, "aborted", 2_000))
          expect(yield* ledger.earliestDue(5)).toEqual([])
          expect(ids(yield* ledger.laneHeads)).toEqual([follower.submissionId])
        }),
      ),
    )
  })
}
