/**
 * Conformance cases of retention: settled rows ordered by when their age counts from, and their
 * removal with their records and keys, never a nonterminal row, and sequences, lane tails and
 * feed positions that continue past what was removed. With retention off a settlement dates
 * nothing, so the retention reads find none of its rows.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { IdempotencyKey, ReceiptId, ThreadId } from "../../src/core/Identifiers.ts"
import {
  SubmissionLedger,
  type SubmissionSnapshot,
  type WaitRecord,
} from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import {
  admitNew,
  claimHead,
  grant,
  owner,
  recordTags,
  request,
  settlementOf,
  unowned,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

/** Admits `key` in `thread` and settles it at `settledAt` (it must be its lane's head). */
const settled = (thread: string, key: string, settledAt: number) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    yield* admitNew(request(thread, key, { now: settledAt - 10 }))
    const claim = yield* claimHead(thread, grant(settledAt, settledAt - 5))
    return yield* ledger.settle(owner(claim), settlementOf(claim, "completed", settledAt))
  })

/** A sleep's wait, due at `dueAt`. */
const nap = (dueAt: number): WaitRecord => ({ _tag: "Sleep", step: 0, name: "nap", dueAt, since: 1_000 })

const item = (row: SubmissionSnapshot) => ({
  submissionId: row.submissionId,
  receiptId: row.receiptId,
})

/** Registers the retention cases. */
export const retentionCases = (harness: LedgerHarness) => {
  describe("retention", () => {
    it.effect("orders settled rows by their settlement time and leaves nonterminal ones out", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          expect(yield* ledger.retentionStart).toEqual(Option.none())
          const late = yield* settled("a", "late", 9_000)
          const early = yield* settled("b", "early", 3_000)
          yield* admitNew(request("a", "open", { now: 9_500 }))
          expect(yield* ledger.retentionStart).toEqual(Option.some(3_000))
          const all = yield* ledger.retentionCandidates({ countedBefore: 10_000, limit: 10 })
          expect(all.map((c) => c.snapshot.submissionId)).toEqual([early.submissionId, late.submissionId])
          // The lane tail counts the open row admitted after the settled one.
          expect(all.map((c) => c.laneTail)).toEqual([1, 2])
          expect(
            (yield* ledger.retentionCandidates({ countedBefore: 8_999, limit: 10 })).map(
              (c) => c.snapshot.submissionId,
            ),
          ).toEqual([early.submissionId])
          expect(yield* ledger.retentionCandidates({ countedBefore: 10_000, limit: 1 })).toHaveLength(1)
        }),
      ),
    )

    it.effect("dates no settled row while retention is off, and a deferral dates one", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const done = yield* settled("a", "done", 3_000)
          // Settled in two writes (an abort reserved, then finalized): also undated.
          const ready = yield* admitNew(request("b", "aborted", { now: 3_500 }))
          yield* ledger.reserveSettlement(unowned(ready, 4_000), settlementOf(ready, "aborted", 4_000))
          const aborted = yield* ledger.finalizeSettlement(ready.submissionId)
          expect(aborted.state).toBe("settled")
          expect(yield* ledger.retentionStart).toEqual(Option.none())
          expect(yield* ledger.retentionCandidates({ countedBefore: 1_000_000, limit: 10 })).toEqual([])
          yield* ledger.deferRetention([done.submissionId], 20_000)
          expect(yield* ledger.retentionStart).toEqual(Option.some(20_000))
          // Removal by name does not depend on the date.
          expect(yield* ledger.removeSettled([item(aborted)])).toEqual([aborted.submissionId])
          expect(yield* ledger.lookup(aborted.submissionId)).toEqual(Option.none())
        }),
        { retention: false },
      ),
    )

    it.effect("counts a deferred row's age from the deferral", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const first = yield* settled("a", "one", 3_000)
          const second = yield* settled("b", "two", 4_000)
          yield* ledger.deferRetention([first.submissionId], 20_000)
          expect(yield* ledger.retentionStart).toEqual(Option.some(4_000))
          const page = yield* ledger.retentionCandidates({ countedBefore: 30_000, limit: 10 })
          expect(page.map((c) => c.snapshot.submissionId)).toEqual([second.submissionId, first.submissionId])
        }),
      ),
    )

    it.effect("removes a settled Submission with its records and key; a replayed key is new", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          const gone = yield* settled("a", "k", 3_000)
          expect(yield* recordTags(gone.submissionId)).toEqual(["SubmissionAccepted", "SubmissionSettled"])
          const feedBefore = yield* history.feedEnd
          expect(yield* ledger.removeSettled([item(gone)])).toEqual([gone.submissionId])
          expect(yield* ledger.lookup(gone.submissionId)).toEqual(Option.none())
          expect(yield* ledger.lookupByKey(ThreadId.make("a"), IdempotencyKey.make("k"))).toEqual(
            Option.none(),
          )
          expect(yield* history.forSubmission(gone.submissionId)).toEqual([])
          expect(yield* history.forSubmissionAfter(gone.submissionId, 1)).toEqual({
            records: [],
            lastSequence: 0,
          })
          expect((yield* history.page(ThreadId.make("a"), { limit: 10 })).records).toEqual([])
          expect((yield* history.feed({ after: 0, limit: 10 })).entries).toEqual([])
          expect(yield* ledger.threadIds).toEqual([])
          // Nor does a page of the Object's Threads list a Thread with no Submission left.
          expect(yield* ledger.threadPage({ limit: 10 })).toEqual([])
          expect(yield* ledger.retentionStart).toEqual(Option.none())
          // The feed's end stays: a cursor at it sees only what comes next.
          expect(yield* history.feedEnd).toBe(feedBefore)
          expect(yield* ledger.countAllNonterminal).toBe(0)

          // The same key again: a new Submission under the same id, with a new receipt, and
          // every sequence continues past the removed ones.
          const again = yield* admitNew(request("a", "k", { now: 50_000 }))
          expect(again.submissionId).toBe(gone.submissionId)
          expect(again.receiptId).not.toBe(gone.receiptId)
          expect(again.queueSequence).toBe(2)
          const [accepted] = yield* history.forSubmission(again.submissionId)
          expect(accepted?.sequence).toBe(3)
          const feed = yield* history.feed({ after: feedBefore, limit: 10 })
          expect(feed.entries.map((entry) => entry.position)).toEqual([feedBefore + 1])
          expect(yield* ledger.countAllNonterminal).toBe(1)
          // A stale name removes nothing.
          expect(yield* ledger.removeSettled([item(gone)])).toEqual([])
        }),
      ),
    )

    it.effect("keeps a Thread's sequences past a removed newest row while older rows stay", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          // `open` stays nonterminal in lane b; `done` settles in lane a after it was admitted.
          const open = yield* admitNew(request("b", "open", { now: 100 }))
          const done = yield* settled("a", "done", 2_000)
          const end = yield* history.feedEnd
          yield* ledger.removeSettled([item(done)])
          expect(yield* history.feedEnd).toBe(end)
          expect(yield* ledger.countAllNonterminal).toBe(1)
          const next = yield* admitNew(request("b", "next", { now: 3_000 }))
          expect(next.queueSequence).toBe(2)
          const feed = yield* history.feed({ after: 0, limit: 10 })
          expect(feed.entries.map((entry) => [entry.position, entry.record.submissionId])).toEqual([
            [1, open.submissionId],
            [end + 1, next.submissionId],
          ])
          const again = yield* admitNew(request("a", "later", { now: 3_000 }))
          expect(again.queueSequence).toBe(2)
          expect((yield* history.forSubmission(again.submissionId))[0]?.sequence).toBe(3)
        }),
      ),
    )

    it.effect("counts a Thread's admissions past a removed newest Submission while an older one stays", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* settled("a", "kept", 1_000)
          const newest = yield* settled("a", "removed", 2_000)
          yield* ledger.removeSettled([item(newest)])
          expect(yield* ledger.laneCounts(ThreadId.make("a"))).toMatchObject({
            admitted: 2,
            open: 0,
            parked: 0,
          })
        }),
      ),
    )

    it.effect(
      "counts the Submissions removed from each Thread, batch by batch, apart from the settled ones",
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            yield* settled("a", "kept", 1_000)
            const older = yield* settled("a", "older", 2_000)
            const newest = yield* settled("a", "newest", 3_000)
            const other = yield* settled("b", "other", 4_000)
            yield* admitNew(request("a", "open", { now: 5_000 }))
            // One batch across two Threads, then one more removal of the first.
            yield* ledger.removeSettled([item(older), item(other)])
            yield* ledger.removeSettled([item(newest)])
            // Removing what is gone already counts nothing.
            yield* ledger.removeSettled([item(newest)])
            expect(yield* ledger.laneCounts(ThreadId.make("a"))).toMatchObject({
              admitted: 4,
              removed: 2,
              open: 1,
              parked: 0,
            })
            expect(yield* ledger.laneCounts(ThreadId.make("b"))).toMatchObject({ admitted: 1, removed: 1 })
          }),
        ),
    )

    it.effect("removes only its own records from a span other Submissions' records interleave", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          // `second` is admitted while `first` waits and runs: its acceptance lies inside the span.
          yield* admitNew(request("a", "first", { now: 100 }))
          const second = yield* admitNew(request("a", "second", { now: 200 }))
          const claim = yield* claimHead("a", grant(1, 300))
          const first = yield* ledger.settle(owner(claim), settlementOf(claim, "completed", 400))
          expect(yield* ledger.removeSettled([item(first)])).toEqual([first.submissionId])
          expect(yield* recordTags(second.submissionId)).toEqual(["SubmissionAccepted"])
          const page = yield* history.page(ThreadId.make("a"), { limit: 10 })
          expect(page.records.map((record) => [record.sequence, record.submissionId])).toEqual([
            [2, second.submissionId],
          ])
        }),
      ),
    )

    it.effect("pages the history and the feed on from a record just before what retention removed", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          // Sequences and positions 1 to 5: kept's acceptance, gone's acceptance and settlement
          // (removed), then two more acceptances.
          yield* admitNew(request("a", "kept", { now: 100 }))
          const gone = yield* admitNew(request("a", "gone", { now: 200 }))
          yield* ledger.requestAbort(gone.submissionId)
          const done = yield* ledger.settle(unowned(gone, 300), settlementOf(gone, "aborted", 300))
          yield* admitNew(request("a", "c", { now: 400 }))
          yield* admitNew(request("a", "d", { now: 500 }))
          expect(yield* ledger.removeSettled([item(done)])).toEqual([done.submissionId])
          // A cursor at the kept record goes on past the gap, a page of one at a time.
          const one = yield* history.page(ThreadId.make("a"), { after: 1, limit: 1 })
          expect([one.records.map((record) => record.sequence), one.next]).toEqual([[4], 4])
          const two = yield* history.page(ThreadId.make("a"), { after: 1, limit: 2 })
          expect([two.records.map((record) => record.sequence), two.next]).toEqual([[4, 5], undefined])
          const feedOne = yield* history.feed({ after: 1, limit: 1 })
          expect([feedOne.entries.map((entry) => entry.position), feedOne.last]).toEqual([[4], 4])
          const feedTwo = yield* history.feed({ after: 1, limit: 2 })
          expect([feedTwo.entries.map((entry) => entry.position), feedTwo.last]).toEqual([[4, 5], 5])
        }),
      ),
    )

    it.effect("never removes a nonterminal row, nor one named with another receipt", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const open = yield* admitNew(request("a", "open"))
          const done = yield* settled("b", "done", 2_000)
          const removed = yield* ledger.removeSettled([
            item(open),
            { submissionId: done.submissionId, receiptId: ReceiptId.make("another-receipt") },
          ])
          expect(removed).toEqual([])
          expect(Option.isSome(yield* ledger.lookup(open.submissionId))).toBe(true)
          expect(Option.isSome(yield* ledger.lookup(done.submissionId))).toBe(true)
          expect(yield* recordTags(open.submissionId)).toEqual(["SubmissionAccepted"])
        }),
      ),
    )

    it.effect("never takes a timed wait, even long past its due time, until it settles", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitNew(request("a", "sleeper", { now: 900 }))
          const claim = yield* claimHead("a", grant(1, 1_000))
          const parked = yield* ledger.parkTimed(owner(claim), { wait: nap(2_000), dueAt: 2_000, now: 1_000 })
          expect(parked.state).toBe("waiting")
          expect(yield* ledger.retentionStart).toEqual(Option.none())
          expect(yield* ledger.retentionCandidates({ countedBefore: 1_000_000, limit: 10 })).toEqual([])
          expect(yield* ledger.removeSettled([item(parked)])).toEqual([])
          expect(yield* ledger.earliestDue(10)).toEqual([parked])

          // Claimed in place once due and settled, it leaves the due order and becomes a candidate.
          const woken = Option.getOrThrow(yield* ledger.claimDue(parked.submissionId, grant(2, 2_500)))
          const done = yield* ledger.settle(owner(woken), settlementOf(woken, "completed", 3_000))
          expect(yield* ledger.earliestDue(10)).toEqual([])
          const candidates = yield* ledger.retentionCandidates({ countedBefore: 3_000, limit: 10 })
          expect(candidates.map((c) => c.snapshot.submissionId)).toEqual([done.submissionId])
          expect(yield* ledger.removeSettled([item(done)])).toEqual([done.submissionId])
          expect(yield* ledger.lookup(done.submissionId)).toEqual(Option.none())
        }),
      ),
    )
  })
}
