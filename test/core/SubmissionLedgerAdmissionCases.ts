/** Conformance cases: admission, readiness and Claims. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { AgentId, ReceiptId, SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import {
  admitNew,
  admitReady,
  claimHead,
  grant,
  recordTags,
  request,
  rowOf,
  scanAll,
  settleHead,
  settlementOf,
  unowned,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

/** Registers the admission, readiness and claim cases. */
export const admissionCases = (harness: LedgerHarness) => {
  describe("admission", () => {
    it.effect("admits a new submission ready, with its acceptance recorded in the same write", () =>
      harness.run(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          const row = yield* admitNew(request("t", "k1", { now: 1_234 }))
          expect(row.state).toBe("ready")
          expect(row.queueSequence).toBe(1)
          expect(row.producerEpoch).toBe(0)
          expect(row.createdAt).toBe(1_234)
          expect(row.readyAt).toBe(1_234)
          expect(row.abortRequested).toBe(false)
          expect(row.ownership).toBeUndefined()
          expect(SubmissionId.make(row.submissionId)).toBe(row.submissionId)
          expect(ReceiptId.make(row.receiptId)).toBe(row.receiptId)
          const [accepted] = yield* history.forSubmission(row.submissionId)
          expect(accepted?.sequence).toBe(1)
          expect(accepted?.recordedAt).toBe(1_234)
          expect(accepted?.entry).toEqual({
            _tag: "SubmissionAccepted",
            agentId: "echo",
            agentDigest: "echo-digest-1",
            input: { key: "k1" },
          })
          const other = yield* admitNew(request("t", "k2"))
          expect(other.submissionId).not.toBe(row.submissionId)
          expect(other.receiptId).not.toBe(row.receiptId)
          expect(yield* rowOf(row.submissionId)).toEqual(row)
          expect(yield* recordTags(other.submissionId)).toEqual(["SubmissionAccepted"])
        }),
      ),
    )

    it.effect("derives the Submission id from the Thread and the key", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const first = yield* admitNew(request("t", "k"))
          const replay = yield* ledger.admit(request("t", "k"))
          expect(replay.snapshot.submissionId).toBe(first.submissionId)
          const elsewhere = yield* admitNew(request("u", "k"))
          const another = yield* admitNew(request("t", "k2"))
          expect(new Set([first, elsewhere, another].map((row) => row.submissionId)).size).toBe(3)
          // A key or Thread that only concatenates to the same text is another Submission.
          const joined = yield* admitNew(request("tk", "x"))
          const split = yield* admitNew(request("t", "kx"))
          expect(joined.submissionId).not.toBe(split.submissionId)
        }),
      ),
    )

    it.effect("refuses an input payload that is not JSON, naming it, and writes nothing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const refused = yield* Effect.flip(ledger.admit(request("t", "k", { inputPayload: "{not json" })))
          expect(refused._tag).toBe("LedgerError")
          expect(refused.message).toContain("not JSON")
          expect(yield* scanAll).toEqual([])
          expect(yield* ledger.countAllNonterminal).toBe(0)
        }),
      ),
    )

    it.effect("orders each lane by queue sequence and never reuses a sequence", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const a = yield* admitReady(request("lane", "a"))
          const b = yield* admitReady(request("lane", "b"))
          const other = yield* admitReady(request("other", "a"))
          expect([a.queueSequence, b.queueSequence, other.queueSequence]).toEqual([1, 2, 1])
          expect(Option.getOrThrow(yield* ledger.head(ThreadId.make("lane"))).submissionId).toBe(
            a.submissionId,
          )
          yield* settleHead("lane", 2_000)
          expect(Option.getOrThrow(yield* ledger.head(ThreadId.make("lane"))).submissionId).toBe(
            b.submissionId,
          )
          yield* settleHead("lane", 3_000)
          expect(Option.isNone(yield* ledger.head(ThreadId.make("lane")))).toBe(true)
          const c = yield* admitNew(request("lane", "c"))
          expect(c.queueSequence).toBe(3)
          expect(yield* ledger.countNonterminal(ThreadId.make("lane"))).toBe(1)
        }),
      ),
    )

    it.effect("replays a used key with the original row and never admits twice", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const original = yield* admitNew(request("t", "k"))
          const replay = yield* ledger.admit(request("t", "k", { now: 9_999, agentDigest: "echo-digest-2" }))
          expect(replay._tag).toBe("Replayed")
          expect(replay.snapshot).toEqual(original)
          expect(yield* ledger.countNonterminal(ThreadId.make("t"))).toBe(1)
          yield* ledger.markReady(original.submissionId, 1_500)
          yield* settleHead("t", 2_000)
          const late = yield* ledger.admit(request("t", "k"))
          expect(late._tag).toBe("Replayed")
          expect(late.snapshot.submissionId).toBe(original.submissionId)
          expect(late.snapshot.state).toBe("settled")
          expect(yield* scanAll).toEqual([])
          // The same key in another Thread is a different Submission.
          const elsewhere = yield* ledger.admit(request("u", "k"))
          expect(elsewhere._tag).toBe("Admitted")
        }),
      ),
    )

    it.effect("refuses a used key with a different input or agent and writes nothing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const original = yield* admitNew(request("t", "k"))
          const input = yield* Effect.flip(ledger.admit(request("t", "k", { inputDigest: "other" })))
          expect(input._tag).toBe("IdempotencyConflict")
          if (input._tag === "IdempotencyConflict") expect(input.submissionId).toBe(original.submissionId)
          const agent = yield* Effect.flip(
            ledger.admit(request("t", "k", { agentId: AgentId.make("other") })),
          )
          expect(agent._tag).toBe("IdempotencyConflict")
          expect(yield* scanAll).toEqual([original])
        }),
      ),
    )

    it.effect("refuses a full lane before writing, exempts replays, and reopens after drain", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const first = yield* admitReady(request("t", "a"))
          yield* admitReady(request("t", "b"))
          const refused = yield* Effect.flip(ledger.admit(request("t", "c")))
          expect(refused._tag).toBe("AdmissionRefused")
          if (refused._tag === "AdmissionRefused") expect(refused.reason).toBe("queue-depth")
          expect(yield* ledger.countNonterminal(ThreadId.make("t"))).toBe(2)
          expect((yield* scanAll).map((row) => row.idempotencyKey)).toEqual(["a", "b"])
          const replay = yield* ledger.admit(request("t", "a"))
          expect(replay._tag).toBe("Replayed")
          expect(replay.snapshot.submissionId).toBe(first.submissionId)
          // Other lanes have their own depth.
          expect((yield* ledger.admit(request("u", "c")))._tag).toBe("Admitted")
          yield* settleHead("t", 2_000)
          const reopened = yield* admitNew(request("t", "c"))
          expect(reopened.queueSequence).toBe(3)
        }),
        { limits: { maxQueueDepthPerLane: 2, maxInputBytes: 1_000 } },
      ),
    )

    it.effect("refuses an input over the byte limit, counted in UTF-8, before writing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          // Six characters and two quotes, fourteen UTF-8 bytes.
          const refused = yield* Effect.flip(
            ledger.admit(request("t", "big", { inputPayload: JSON.stringify("éééééé") })),
          )
          expect(refused._tag).toBe("AdmissionRefused")
          if (refused._tag === "AdmissionRefused") expect(refused.reason).toBe("input-bytes")
          expect(yield* ledger.countNonterminal(ThreadId.make("t"))).toBe(0)
          expect(yield* scanAll).toEqual([])
          // Two astral characters are eight bytes; with "é" and two quotes that is the limit.
          const fits = yield* ledger.admit(request("t", "fits", { inputPayload: JSON.stringify("😀😀é") }))
          expect(fits._tag).toBe("Admitted")
          expect(fits.snapshot.inputPayload).toBe(JSON.stringify("😀😀é"))
          // The key that was refused was never used.
          expect((yield* ledger.admit(request("t", "big", { inputPayload: "1" })))._tag).toBe("Admitted")
        }),
        { limits: { maxQueueDepthPerLane: 10, maxInputBytes: 12 } },
      ),
    )
    it.effect("answers what admission would, without writing anything", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const lane = ThreadId.make("t")
          expect(yield* ledger.checkAdmission(request("t", "a"))).toEqual(Option.none())
          expect(yield* scanAll).toEqual([])
          const first = yield* admitReady(request("t", "a"))
          yield* admitReady(request("t", "b"))
          // A used key replays its original row, even in a full lane.
          expect(yield* ledger.checkAdmission(request("t", "a"))).toEqual(Option.some(first))
          const conflict = yield* Effect.flip(ledger.checkAdmission(request("t", "a", { inputDigest: "x" })))
          expect(conflict._tag).toBe("IdempotencyConflict")
          const full = yield* Effect.flip(ledger.checkAdmission(request("t", "c")))
          expect(full).toMatchObject({ _tag: "AdmissionRefused", reason: "queue-depth" })
          const large = yield* Effect.flip(
            ledger.checkAdmission(request("u", "d", { inputPayload: "é".repeat(6) })),
          )
          expect(large).toMatchObject({ _tag: "AdmissionRefused", reason: "input-bytes" })
          expect(yield* ledger.countNonterminal(lane)).toBe(2)
          expect((yield* scanAll).map((row) => row.idempotencyKey)).toEqual(["a", "b"])
        }),
        { limits: { maxQueueDepthPerLane: 2, maxInputBytes: 11 } },
      ),
    )

    it.effect("refuses instants that are not finite numbers before writing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const admit = yield* Effect.flip(ledger.admit(request("t", "nan", { now: Number.NaN })))
          expect(admit._tag).toBe("LedgerError")
          expect(admit.message).toContain("now")
          expect(yield* scanAll).toEqual([])
          yield* admitReady(request("t", "a"))
          const claimNaN = yield* Effect.flip(ledger.claim(ThreadId.make("t"), grant(1, 2_000, Number.NaN)))
          expect(claimNaN._tag).toBe("LedgerError")
          const claim = yield* claimHead("t", grant(1, 2_000))
          const before = yield* rowOf(claim.submissionId)
          const renew = yield* Effect.flip(ledger.renew(claim, Number.POSITIVE_INFINITY))
          expect(renew._tag).toBe("LedgerError")
          const recovery = yield* Effect.flip(ledger.transition(unowned(before, Number.NaN), "ready"))
          expect(recovery._tag).toBe("LedgerError")
          expect(yield* rowOf(claim.submissionId)).toEqual(before)
        }),
      ),
    )
  })

  describe("readiness and claims", () => {
    it.effect("treats marking a ready row ready as a no-op and refuses other states", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const row = yield* admitNew(request("t", "a"))
          expect(yield* ledger.markReady(row.submissionId, 1_200)).toEqual(row)
          yield* claimHead("t", grant(1, 1_300))
          const running = yield* Effect.flip(ledger.markReady(row.submissionId, 1_400))
          expect(running._tag).toBe("InvalidTransition")
          if (running._tag === "InvalidTransition")
            expect([running.from, running.to]).toEqual(["running", "ready"])
          const missing = yield* Effect.flip(ledger.markReady(SubmissionId.make("missing"), 1))
          expect(missing._tag).toBe("SubmissionNotFound")
        }),
      ),
    )

    it.effect("claims only the lane head, advancing its epoch", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const t = ThreadId.make("t")
          expect(Option.isNone(yield* ledger.claim(t, grant(0, 1_000)))).toBe(true)
          const head = yield* admitNew(request("t", "a"))
          const next = yield* admitReady(request("t", "b"))
          const claim = yield* claimHead("t", grant(2, 2_000, 500))
          expect(claim.submissionId).toBe(head.submissionId)
          expect(claim.producerEpoch).toBe(1)
          expect(claim.leaseExpiresAt).toBe(2_500)
          expect(claim.inputPayload).toBe(head.inputPayload)
          const row = yield* rowOf(head.submissionId)
          expect(row.state).toBe("running")
          expect(row.producerEpoch).toBe(1)
          expect(row.ownership?.attemptId).toBe("attempt-2")
          expect(row.ownership?.ownershipToken).toBe("token-2")
          expect(row.ownership?.leaseExpiresAt).toBe(2_500)
          // A live lease keeps the head; the ready row behind it is not claimable.
          expect(Option.isNone(yield* ledger.claim(t, grant(3, 2_499)))).toBe(true)
          expect((yield* rowOf(next.submissionId)).state).toBe("ready")
          // At expiry the head is reclaimed with a new epoch.
          const again = yield* claimHead("t", grant(4, 2_500))
          expect(again.submissionId).toBe(head.submissionId)
          expect(again.producerEpoch).toBe(2)
          expect(again.attemptId).toBe("attempt-4")
        }),
      ),
    )

    it.effect("begins incarnations whose ids sort in the order they began", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const ids = [yield* ledger.beginIncarnation, yield* ledger.beginIncarnation]
          ids.push(yield* ledger.beginIncarnation)
          expect(new Set(ids).size).toBe(3)
          expect([...ids].sort()).toEqual(ids)
        }),
      ),
    )

    it.effect(
      "treats a Claim of an earlier incarnation as expired, and keeps one within an incarnation",
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            const [older, newer, newest] = [
              yield* ledger.beginIncarnation,
              yield* ledger.beginIncarnation,
              yield* ledger.beginIncarnation,
            ]
            const t = ThreadId.make("t")
            const head = yield* admitNew(request("t", "a"))
            const first = yield* claimHead("t", grant(1, 2_000, 30_000, older))
            expect(first.incarnation).toBe(older)
            expect((yield* rowOf(head.submissionId)).ownership?.incarnation).toBe(older)
            // Within its incarnation, and for a grant naming none, the lease still protects it.
            expect(Option.isNone(yield* ledger.claim(t, grant(2, 2_001, 30_000, older)))).toBe(true)
            expect(Option.isNone(yield* ledger.claim(t, grant(3, 2_001)))).toBe(true)
            const running = yield* rowOf(head.submissionId)
            const sameIncarnation = yield* Effect.flip(ledger.checkFence(unowned(running, 2_001, older)))
            expect(sameIncarnation._tag).toBe("FenceRejected")
            expect(yield* ledger.checkFence(unowned(running, 2_001, newer))).toEqual(running)
            // A later incarnation takes it over at once; the old owner is fenced out by the epoch.
            const taken = yield* claimHead("t", grant(4, 2_002, 30_000, newer))
            expect([taken.submissionId, taken.producerEpoch, taken.incarnation]).toEqual([
              head.submissionId,
              2,
              newer,
            ])
            const stale = yield* Effect.flip(ledger.renew(first, 9_000))
            expect(stale._tag).toBe("FenceRejected")
            // The replaced incarnation, still running, finds the later one's Claim live.
            expect(Option.isNone(yield* ledger.claim(t, grant(5, 2_003, 30_000, older)))).toBe(true)
            const taker = yield* rowOf(head.submissionId)
            const replaced = yield* Effect.flip(ledger.checkFence(unowned(taker, 2_003, older)))
            expect(replaced._tag).toBe("FenceRejected")
            const renewed = yield* ledger.renew(taken, 40_000)
            expect(renewed.incarnation).toBe(newer)
            expect((yield* rowOf(head.submissionId)).ownership?.incarnation).toBe(newer)
            // A Claim taken without an incarnation is protected by its lease alone.
            yield* ledger.release(renewed)
            const anonymous = yield* claimHead("t", grant(6, 3_000, 1_000))
            expect(anonymous.incarnation).toBeUndefined()
            expect(Option.isNone(yield* ledger.claim(t, grant(7, 3_999, 1_000, newest)))).toBe(true)
            expect((yield* claimHead("t", grant(8, 4_000, 1_000, newest))).producerEpoch).toBe(4)
          }),
        ),
    )

    it.effect("does not claim a suspended, unknown or terminalizing head", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (const [lane, end] of [
            ["s", "suspended"],
            ["u", "unknown"],
          ] as const) {
            yield* admitReady(request(lane, "a"))
            yield* admitReady(request(lane, "b"))
            const claim = yield* claimHead(lane, grant(1, 2_000))
            yield* ledger.park(claim, end)
            expect((yield* rowOf(claim.submissionId)).state).toBe(end)
            expect(Option.isNone(yield* ledger.claim(ThreadId.make(lane), grant(2, 99_000)))).toBe(true)
          }
          const ready = yield* admitReady(request("r", "a"))
          yield* ledger.reserveSettlement(unowned(ready, 2_000), settlementOf(ready, "aborted"))
          expect(Option.isNone(yield* ledger.claim(ThreadId.make("r"), grant(3, 3_000)))).toBe(true)
        }),
      ),
    )

    it.effect("claims a ready head whose abort was requested", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const row = yield* admitReady(request("t", "a"))
          const aborted = yield* ledger.requestAbort(row.submissionId)
          expect(aborted.abortRequested).toBe(true)
          expect(yield* ledger.requestAbort(row.submissionId)).toEqual(aborted)
          const claim = yield* claimHead("t", grant(1, 2_000))
          expect(claim.submissionId).toBe(row.submissionId)
          expect((yield* rowOf(row.submissionId)).abortRequested).toBe(true)
          const missing = yield* Effect.flip(ledger.requestAbort(SubmissionId.make("missing")))
          expect(missing._tag).toBe("SubmissionNotFound")
        }),
      ),
    )

    it.effect("leaves a claimed and released row unchanged apart from its epoch", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const before = yield* admitReady(request("t", "a"))
          const claim = yield* claimHead("t", grant(1, 2_000))
          yield* ledger.release(claim)
          const after = yield* rowOf(before.submissionId)
          const { producerEpoch: beforeEpoch, ...beforeRest } = before
          const { producerEpoch: afterEpoch, ...afterRest } = after
          expect(afterRest).toEqual(beforeRest)
          expect(afterEpoch).toBe(beforeEpoch + 1)
          expect(after.ownership).toBeUndefined()
          // The released Claim is spent.
          const spent = yield* Effect.flip(ledger.release(claim))
          expect(spent._tag).toBe("OwnershipLost")
        }),
      ),
    )
  })
}
