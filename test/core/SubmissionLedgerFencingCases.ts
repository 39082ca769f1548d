/** Conformance cases: fencing, recovery transitions, settlement and the nonterminal scan. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { OwnershipToken, SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
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
  scanAll,
  settleHead,
  settlementOf,
  unowned,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

/** Registers the fencing, recovery, settlement and scan cases. */
export const fencingCases = (harness: LedgerHarness) => {
  describe("fencing", () => {
    it.effect("fences out a stale owner after its lease expired and the head was reclaimed", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const stale = yield* claimHead("t", grant(1, 2_000, 100))
          const fresh = yield* claimHead("t", grant(2, 2_100, 100))
          const before = yield* rowOf(stale.submissionId)
          for (const write of [
            ledger.renew(stale, 9_000),
            ledger.release(stale),
            ledger.park(stale, "suspended"),
            ledger.transition(owner(stale), "ready"),
            ledger.reserveSettlement(owner(stale), settlementOf(stale)),
            ledger.settle(owner(stale), settlementOf(stale)),
            ledger.checkFence(owner(stale)),
          ]) {
            const error = yield* Effect.flip(write)
            expect(error._tag).toBe("FenceRejected")
            if (error._tag === "FenceRejected") {
              expect([error.expectedEpoch, error.actualEpoch]).toEqual([1, 2])
            }
          }
          expect(yield* rowOf(stale.submissionId)).toEqual(before)
          // The current owner is unaffected.
          const renewed = yield* ledger.renew(fresh, 5_000)
          expect(renewed.leaseExpiresAt).toBe(5_000)
          expect(renewed.producerEpoch).toBe(2)
        }),
      ),
    )

    it.effect("fences by epoch even when a later Claim reuses the ownership token", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const stale = yield* claimHead("t", grant(1, 2_000, 100))
          const fresh = yield* claimHead("t", {
            ...grant(2, 2_100, 100),
            ownershipToken: stale.ownershipToken,
          })
          const before = yield* rowOf(stale.submissionId)
          for (const write of [
            ledger.renew(stale, 9_000),
            ledger.release(stale),
            ledger.park(stale, "unknown"),
            ledger.transition(owner(stale), "unknown"),
            ledger.reserveSettlement(owner(stale), settlementOf(stale)),
          ]) {
            const error = yield* Effect.flip(write)
            expect(error._tag).toBe("FenceRejected")
          }
          expect(yield* rowOf(stale.submissionId)).toEqual(before)
          expect((yield* ledger.renew(fresh, 3_000)).producerEpoch).toBe(2)
        }),
      ),
    )

    it.effect("lets an owner whose lease expired but was not reclaimed keep writing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const claim = yield* claimHead("t", grant(1, 2_000, 100))
          const renewed = yield* ledger.renew(claim, 10_000)
          expect(renewed).toEqual({ ...claim, leaseExpiresAt: 10_000 })
          expect((yield* rowOf(claim.submissionId)).ownership?.leaseExpiresAt).toBe(10_000)
          yield* ledger.park(renewed, "suspended")
          expect((yield* rowOf(claim.submissionId)).state).toBe("suspended")
        }),
      ),
    )

    it.effect("reports a lost ownership when the owner's row left running at the same epoch", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const claim = yield* claimHead("t", grant(1, 2_000))
          yield* ledger.park(claim, "unknown")
          const lost = yield* Effect.flip(ledger.renew(claim, 9_000))
          expect(lost._tag).toBe("OwnershipLost")
          if (lost._tag === "OwnershipLost") expect(lost.attemptId).toBe("attempt-1")
          const forged = { ...claim, ownershipToken: OwnershipToken.make("forged") }
          yield* ledger.transition(unowned(yield* rowOf(claim.submissionId), 2_100), "ready")
          const next = yield* claimHead("t", grant(2, 2_200))
          const wrongToken = yield* Effect.flip(
            ledger.release({ ...next, ownershipToken: forged.ownershipToken }),
          )
          expect(wrongToken._tag).toBe("OwnershipLost")
          expect((yield* rowOf(claim.submissionId)).ownership?.ownershipToken).toBe("token-2")
          const missing = yield* Effect.flip(
            ledger.release({ ...next, submissionId: SubmissionId.make("missing") }),
          )
          expect(missing._tag).toBe("SubmissionNotFound")
        }),
      ),
    )

    it.effect("refuses an unowned fence under a live lease or at a stale epoch", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const ready = yield* admitReady(request("t", "a"))
          yield* claimHead("t", grant(1, 2_000, 1_000))
          const running = yield* rowOf(ready.submissionId)
          const live = yield* Effect.flip(ledger.transition(unowned(running, 2_999), "ready"))
          expect(live._tag).toBe("FenceRejected")
          if (live._tag === "FenceRejected") expect(live.message).toContain("live owner")
          const liveCheck = yield* Effect.flip(ledger.checkFence(unowned(running, 2_500)))
          expect(liveCheck._tag).toBe("FenceRejected")
          expect(yield* rowOf(ready.submissionId)).toEqual(running)
          const stale = yield* Effect.flip(ledger.checkFence(unowned(ready, 5_000)))
          expect(stale._tag).toBe("FenceRejected")
          if (stale._tag === "FenceRejected") expect([stale.expectedEpoch, stale.actualEpoch]).toEqual([0, 1])
          expect(yield* ledger.checkFence(unowned(running, 3_000))).toEqual(running)
        }),
      ),
    )
  })

  describe("recovery transitions", () => {
    it.effect("releases an expired lease to ready or unknown, advancing the epoch", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (const [lane, to] of [
            ["r", "ready"],
            ["u", "unknown"],
          ] as const) {
            const ready = yield* admitReady(request(lane, "a"))
            const claim = yield* claimHead(lane, grant(1, 2_000, 100))
            const released = yield* ledger.transition(unowned(yield* rowOf(claim.submissionId), 2_100), to)
            expect(released.state).toBe(to)
            expect(released.producerEpoch).toBe(2)
            expect(released.ownership).toBeUndefined()
            expect(released.readyAt).toBe(ready.readyAt)
            const late = yield* Effect.flip(ledger.renew(claim, 9_000))
            expect(late._tag).toBe("FenceRejected")
          }
        }),
      ),
    )

    it.effect("resumes waits and treats a repeat as a no-op", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const ready = yield* admitNew(request("a", "a"))
          expect(yield* ledger.transition(unowned(ready, 1_800), "ready")).toEqual(ready)
          const marked = yield* ledger.transition(unowned(ready, 1_900), "unknown")
          expect([marked.state, marked.producerEpoch]).toEqual(["unknown", 0])
          expect(yield* ledger.transition(unowned(marked, 1_950), "unknown")).toEqual(marked)
          const resumed = yield* ledger.transition(unowned(marked, 2_000), "ready")
          expect([resumed.state, resumed.readyAt]).toEqual(["ready", 1_000])
          const { suspended } = yield* parkHead("a", grant(1, 3_000))
          const refused = yield* Effect.flip(ledger.transition(unowned(suspended, 3_100), "unknown"))
          expect(refused._tag).toBe("InvalidTransition")
          const approved = yield* ledger.transition(unowned(suspended, 3_100), "ready")
          expect([approved.state, approved.producerEpoch]).toEqual(["ready", 1])
        }),
      ),
    )

    it.effect("records a resolution in the transaction that resumes the wait, or not at all", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitNew(request("a", "a"))
          const { claim, suspended } = yield* parkHead("a", grant(1, 2_000))
          const resolution = { _tag: "ApprovalResolved", step: 0, approved: true } as const
          // A stale fence writes neither the row nor the record.
          const stale = yield* Effect.flip(
            ledger.transition(unowned({ ...suspended, producerEpoch: 0 }, 2_100), "ready", {
              entries: [resolution],
              now: 2_100,
            }),
          )
          expect(stale._tag).toBe("FenceRejected")
          expect(yield* recordTags(claim.submissionId)).toEqual(["SubmissionAccepted"])
          const resumed = yield* ledger.transition(unowned(suspended, 2_200), "ready", {
            entries: [resolution],
            now: 2_200,
          })
          expect(resumed.state).toBe("ready")
          expect(yield* recordTags(claim.submissionId)).toEqual(["SubmissionAccepted", "ApprovalResolved"])
          // A second resolution of the same wait finds it resumed and records nothing.
          const again = yield* Effect.flip(
            ledger.transition(unowned(resumed, 2_300), "ready", { entries: [resolution], now: 2_300 }),
          )
          expect(again._tag).toBe("InvalidTransition")
          expect(yield* recordTags(claim.submissionId)).toEqual(["SubmissionAccepted", "ApprovalResolved"])
        }),
      ),
    )

    it.effect("refuses recovery transitions out of terminal states", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const ready = yield* admitReady(request("t", "a"))
          const reserved = yield* ledger.reserveSettlement(
            unowned(ready, 2_000),
            settlementOf(ready, "aborted"),
          )
          for (const to of ["ready", "unknown"] as const) {
            const error = yield* Effect.flip(ledger.transition(unowned(reserved, 2_100), to))
            expect(error._tag).toBe("InvalidTransition")
            if (error._tag === "InvalidTransition")
              expect([error.from, error.to]).toEqual(["terminalizing", to])
          }
          const settled = yield* ledger.finalizeSettlement(ready.submissionId)
          const error = yield* Effect.flip(ledger.transition(unowned(settled, 2_200), "ready"))
          expect(error._tag).toBe("InvalidTransition")
          expect(yield* rowOf(ready.submissionId)).toEqual(settled)
        }),
      ),
    )
  })

  describe("settlement", () => {
    it.effect("settles in one write with its record, once, and refuses another settlement", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          yield* admitReady(request("t", "b"))
          const claim = yield* claimHead("t", grant(1, 2_000))
          const settlement = settlementOf(claim)
          const before = yield* ledger.countAllNonterminal
          const settled = yield* ledger.settle(owner(claim), settlement, [{ _tag: "InputApplied" }])
          expect(settled.state).toBe("settled")
          expect(settled.ownership).toBeUndefined()
          expect(settled.settlement).toEqual(settlement)
          expect(yield* ledger.countAllNonterminal).toBe(before - 1)
          const history = yield* ThreadHistory
          const records = yield* history.forSubmission(claim.submissionId)
          expect(records.map((record) => record.entry)).toEqual([
            expect.objectContaining({ _tag: "SubmissionAccepted" }),
            { _tag: "InputApplied" },
            { _tag: "SubmissionSettled", outcome: "completed", output: { ok: true, items: [1, 2] } },
          ])
          expect(records.at(-1)?.recordedAt).toBe(settlement.settledAt)
          // The identical settlement again (a lost reply) returns the row and records nothing.
          expect(yield* ledger.settle(unowned(settled, 2_100), settlement)).toEqual(settled)
          const different = yield* Effect.flip(
            ledger.settle(unowned(settled, 2_100), settlementOf(claim, "failed")),
          )
          expect(different._tag).toBe("InvalidTransition")
          expect((yield* history.forSubmission(claim.submissionId)).length).toBe(3)
          expect(yield* ledger.countNonterminal(ThreadId.make("t"))).toBe(1)
          // A reservation an older release made is finished from it, not settled again.
          const next = yield* claimHead("t", grant(2, 3_000))
          const reserved = yield* ledger.reserveSettlement(owner(next), settlementOf(next))
          const reservedAgain = yield* Effect.flip(
            ledger.settle(unowned(reserved, 3_100), settlementOf(next)),
          )
          expect(reservedAgain._tag).toBe("InvalidTransition")
        }),
      ),
    )

    it.effect("reserves and finalizes a settlement once, idempotently", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          yield* admitReady(request("t", "b"))
          const claim = yield* claimHead("t", grant(1, 2_000))
          const settlement = settlementOf(claim)
          const reserved = yield* ledger.reserveSettlement(owner(claim), settlement)
          expect(reserved.state).toBe("terminalizing")
          expect(reserved.ownership).toBeUndefined()
          expect(reserved.settlement).toEqual(settlement)
          expect(reserved.producerEpoch).toBe(1)
          // The owner may repeat the identical reservation after a lost reply.
          expect(yield* ledger.reserveSettlement(owner(claim), settlementOf(claim))).toEqual(reserved)
          expect(yield* ledger.reserveSettlement(unowned(reserved, 2_100), settlement)).toEqual(reserved)
          const different = yield* Effect.flip(
            ledger.reserveSettlement(owner(claim), settlementOf(claim, "failed")),
          )
          expect(different._tag).toBe("InvalidTransition")
          expect((yield* rowOf(claim.submissionId)).settlement).toEqual(settlement)
          // A terminalizing head still blocks its lane.
          expect(yield* ledger.countNonterminal(ThreadId.make("t"))).toBe(2)
          const settled = yield* ledger.finalizeSettlement(claim.submissionId)
          expect(settled.state).toBe("settled")
          expect(settled.settlement).toEqual(settlement)
          expect(yield* ledger.finalizeSettlement(claim.submissionId)).toEqual(settled)
          expect(yield* ledger.requestAbort(claim.submissionId)).toEqual(settled)
          const again = yield* Effect.flip(ledger.reserveSettlement(unowned(settled, 3_000), settlement))
          expect(again._tag).toBe("InvalidTransition")
          expect(yield* ledger.countNonterminal(ThreadId.make("t"))).toBe(1)
        }),
      ),
    )

    it.effect("refuses to finalize an unreserved row or reserve a foreign settlement", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const ready = yield* admitReady(request("t", "a"))
          const other = yield* admitReady(request("u", "a"))
          const early = yield* Effect.flip(ledger.finalizeSettlement(ready.submissionId))
          expect(early._tag).toBe("InvalidTransition")
          if (early._tag === "InvalidTransition") expect([early.from, early.to]).toEqual(["ready", "settled"])
          const foreign = yield* Effect.flip(
            ledger.reserveSettlement(unowned(ready, 2_000), settlementOf(other)),
          )
          expect(foreign._tag).toBe("InvalidTransition")
          const missing = yield* Effect.flip(ledger.finalizeSettlement(SubmissionId.make("missing")))
          expect(missing._tag).toBe("SubmissionNotFound")
          expect(yield* rowOf(ready.submissionId)).toEqual(ready)
        }),
      ),
    )

    it.effect("reserves a waiting row's settlement under a recovery fence", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const { claim, suspended } = yield* parkHead("t", grant(1, 2_000))
          const reserved = yield* ledger.reserveSettlement(
            unowned(suspended, 2_100),
            settlementOf(claim, "failed"),
          )
          expect(reserved.state).toBe("terminalizing")
          expect(reserved.settlement?.outcome).toBe("failed")
        }),
      ),
    )
  })

  describe("scanNonterminal", () => {
    it.effect("streams every unsettled row ordered by thread id and queue sequence", () =>
      harness.run(
        Effect.gen(function* () {
          // JavaScript order: "A" < "a" < "a\uFFFF" < "b" < "😀" (surrogates) < "\uE000".
          const threads = ["b", "\uE000", "a", "😀", "A", "a\uFFFF"]
          for (const [i, thread] of threads.entries()) {
            yield* admitReady(request(thread, `first-${i}`))
            yield* admitNew(request(thread, `second-${i}`))
          }
          yield* settleHead("b", 2_000)
          const rows = yield* scanAll
          const expected = [...threads].sort().flatMap((thread) =>
            thread === "b"
              ? [[thread, 2]]
              : [
                  [thread, 1],
                  [thread, 2],
                ],
          )
          expect(rows.map((row) => [row.threadId, row.queueSequence])).toEqual(expected)
          expect(rows.every((row) => row.state !== "settled")).toBe(true)
        }),
      ),
    )

    it.effect("streams lanes longer than one storage page in order", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (let i = 0; i < 150; i++) yield* admitNew(request(i % 2 === 0 ? "even" : "odd", `k-${i}`))
          const rows = yield* scanAll
          expect(rows.length).toBe(150)
          expect(rows.map((row) => `${row.threadId}:${row.queueSequence}`)).toEqual([
            ...Array.from({ length: 75 }, (_, i) => `even:${i + 1}`),
            ...Array.from({ length: 75 }, (_, i) => `odd:${i + 1}`),
          ])
          expect(yield* ledger.countNonterminal(ThreadId.make("odd"))).toBe(75)
        }),
      ),
    )
  })
}
