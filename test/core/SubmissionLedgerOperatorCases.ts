/**
 * Conformance cases: the operator reads (every row, one lane's page, the Threads known), which
 * include settled Submissions and agree with each other whatever mix of states the store holds.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { SubmissionLedger, type SubmissionSnapshot } from "../../src/core/SubmissionLedger.ts"
import { admitReady, request, settleHead, type LedgerHarness } from "./SubmissionLedgerFixtures.ts"

const keys = (rows: ReadonlyArray<SubmissionSnapshot>) =>
  rows.map((row) => `${row.threadId}#${row.queueSequence}:${row.state}`)

/** Registers the cases of the operator reads. */
export const operatorReadCases = (harness: LedgerHarness) => {
  describe("operator reads", () => {
    it.effect("are empty for an empty ledger", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          expect(yield* Stream.runCollect(ledger.scanAll)).toEqual([])
          expect(yield* ledger.threadIds).toEqual([])
          expect(yield* ledger.lanePage(ThreadId.make("a"), { after: 0, limit: 10 })).toEqual([])
        }),
      ),
    )

    it.effect("include settled rows, list every row and Thread, and page one lane in queue order", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          // Lanes in an order that differs from admission order; "b" settles its head.
          yield* admitReady(request("b", "1"))
          yield* admitReady(request("a", "1"))
          yield* admitReady(request("b", "2"))
          yield* settleHead("b", 2_000)
          // More rows than one scan page, so the keyset paging is exercised.
          for (let i = 0; i < 130; i++) yield* admitReady(request("c", `k${i}`))
          // The scan promises no order: lane order here is the test's.
          const all = Array.from(yield* Stream.runCollect(ledger.scanAll)).sort((x, y) =>
            x.threadId === y.threadId ? x.queueSequence - y.queueSequence : x.threadId < y.threadId ? -1 : 1,
          )
          expect(all.length).toBe(133)
          expect(keys(all).slice(0, 3)).toEqual(["a#1:ready", "b#1:settled", "b#2:ready"])
          expect(all.slice(3).map((row) => row.queueSequence)).toEqual(
            Array.from({ length: 130 }, (_, i) => i + 1),
          )
          expect(yield* ledger.threadIds).toEqual(["a", "b", "c"])
          expect(keys(yield* ledger.lanePage(ThreadId.make("b"), { after: 0, limit: 10 }))).toEqual([
            "b#1:settled",
            "b#2:ready",
          ])
          expect(keys(yield* ledger.lanePage(ThreadId.make("b"), { after: 1, limit: 10 }))).toEqual([
            "b#2:ready",
          ])
          const page = yield* ledger.lanePage(ThreadId.make("c"), { after: 5, limit: 3 })
          expect(page.map((row) => row.queueSequence)).toEqual([6, 7, 8])
        }),
      ),
    )
  })
}
