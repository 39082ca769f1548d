/** The conformance suite of the canonical history, run against every implementation. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory, type HistoryEntry } from "../../src/core/ThreadHistory.ts"
import {
  admitNew,
  admitReady,
  claimHead,
  grant,
  owner,
  parkHead,
  request,
  rowOf,
  settlementOf,
  unowned,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

/**
 * Two Threads' records, positions 1 to 6: the acceptances of a ("t") and b ("u"), then a's
 * input, step and abort (appended together), then b's input.
 */
const appendMixed = Effect.gen(function* () {
  const history = yield* ThreadHistory
  const a = yield* admitNew(request("t", "a"))
  const b = yield* admitNew(request("u", "b"))
  yield* history.appendAll(
    a.submissionId,
    [
      { _tag: "InputApplied" },
      { _tag: "StepCompleted", step: 0, name: "s", result: 1 },
      { _tag: "AbortRequested" },
    ],
    unowned(a, 2_000),
    2_000,
  )
  yield* history.append(b.submissionId, { _tag: "InputApplied" }, unowned(b, 2_100), 2_100)
})

/** Registers the canonical history cases for one implementation. */
export const historyConformance = (name: string, harness: LedgerHarness) =>
  describe(`ThreadHistory conformance (${name})`, () => {
    it.effect("appends gap-free, 1-based records per thread and lists them per submission", () =>
      harness.run(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          // Each admission records its acceptance: a is 1 and b is 2 in "t", c is 1 in "u".
          const a = yield* admitNew(request("t", "a"))
          const b = yield* admitNew(request("t", "b"))
          const c = yield* admitNew(request("u", "c"))
          const [acceptedA] = yield* history.forSubmission(a.submissionId)
          const [acceptedB] = yield* history.forSubmission(b.submissionId)
          expect([acceptedA?.sequence, acceptedB?.sequence]).toEqual([1, 2])
          const r3 = yield* history.append(a.submissionId, { _tag: "InputApplied" }, unowned(a, 1_400), 1_400)
          const step = { _tag: "StepCompleted", step: 0, name: "s", result: [1, "x", null] } as const
          const r4 = yield* history.append(c.submissionId, step, unowned(c, 1_500), 1_500)
          expect([r3.sequence, r4.sequence]).toEqual([3, 2])
          expect([r3.threadId, r4.threadId]).toEqual(["t", "u"])
          expect(r3.recordedAt).toBe(1_400)
          expect(r4.entry).toEqual(step)
          // Records appended together are consecutive.
          const [r5, r6] = yield* history.appendAll(
            b.submissionId,
            [{ _tag: "InputApplied" }, { ...step, result: 2 }],
            unowned(b, 1_600),
            1_600,
          )
          expect([r5?.sequence, r6?.sequence]).toEqual([4, 5])
          expect(yield* history.forSubmission(a.submissionId)).toEqual([acceptedA, r3])
          expect(yield* history.forSubmission(b.submissionId)).toEqual([acceptedB, r5, r6])
          expect((yield* history.forSubmission(c.submissionId)).map((record) => record.sequence)).toEqual([
            1, 2,
          ])
          expect(yield* history.forSubmission(SubmissionId.make("none"))).toEqual([])
          const page = yield* history.page(ThreadId.make("t"), { limit: 10 })
          expect(page).toEqual({ records: [acceptedA, acceptedB, r3, r5, r6] })
          const nothing = yield* Effect.flip(history.appendAll(a.submissionId, [], unowned(a, 1_700), 1_700))
          expect(nothing._tag).toBe("ThreadStoreError")
        }),
      ),
    )

    it.effect("lists a Submission's records after a sequence, from inside records appended together", () =>
      harness.run(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          // a: 1, then 3 to 5 together, then 7 (after b's 6); b: 2 and 6. Other Threads: "u".
          const a = yield* admitNew(request("t", "a"))
          const b = yield* admitNew(request("t", "b"))
          const c = yield* admitNew(request("u", "c"))
          const step = { _tag: "StepCompleted", step: 0, name: "s", result: 1 } as const
          yield* history.appendAll(
            a.submissionId,
            [{ _tag: "InputApplied" }, step, { ...step, step: 1 }],
            unowned(a, 1_400),
            1_400,
          )
          yield* history.append(b.submissionId, { _tag: "InputApplied" }, unowned(b, 1_500), 1_500)
          yield* history.append(c.submissionId, { _tag: "InputApplied" }, unowned(c, 1_500), 1_500)
          yield* history.append(a.submissionId, { _tag: "AbortRequested" }, unowned(a, 1_600), 1_600)
          const all = yield* history.forSubmission(a.submissionId)
          expect(all.map((record) => record.sequence)).toEqual([1, 3, 4, 5, 7])
          for (const after of [-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1_000]) {
            expect(yield* history.forSubmissionAfter(a.submissionId, after)).toEqual({
              records: all.filter((record) => record.sequence > after),
              lastSequence: 7,
            })
          }
          expect(yield* history.forSubmissionAfter(b.submissionId, 2)).toEqual({
            records: (yield* history.forSubmission(b.submissionId)).slice(1),
            lastSequence: 6,
          })
          expect(yield* history.forSubmissionAfter(SubmissionId.make("none"), 0)).toEqual({
            records: [],
            lastSequence: 0,
          })
        }),
      ),
    )

    it.effect("feeds every Thread's records in commit order, records appended together included", () =>
      harness.run(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          expect(yield* history.feedEnd).toBe(0)
          expect(yield* history.feed({ after: 0, limit: 5 })).toEqual({ entries: [], last: 0 })
          yield* appendMixed
          expect(yield* history.feedEnd).toBe(6)
          const all = yield* history.feed({ after: 0, limit: 100 })
          expect(all.entries.map((entry) => entry.position)).toEqual([1, 2, 3, 4, 5, 6])
          expect(all.entries.map((entry) => [entry.record.threadId, entry.record.entry._tag])).toEqual([
            ["t", "SubmissionAccepted"],
            ["u", "SubmissionAccepted"],
            ["t", "InputApplied"],
            ["t", "StepCompleted"],
            ["t", "AbortRequested"],
            ["u", "InputApplied"],
          ])
          expect(all.last).toBe(6)
          // From the middle of the records one append wrote.
          const middle = yield* history.feed({ after: 3, limit: 2 })
          expect([middle.entries.map((entry) => entry.position), middle.last]).toEqual([[4, 5], 5])
          expect(yield* history.feed({ after: 6, limit: 2 })).toEqual({ entries: [], last: 6 })
          const pageFromMiddle = yield* history.page(ThreadId.make("t"), { after: 2, limit: 1 })
          expect([pageFromMiddle.records.map((record) => record.sequence), pageFromMiddle.next]).toEqual([
            [3],
            3,
          ])
        }),
      ),
    )

    it.effect("feeds only the record kinds asked for, its cursor covering the others", () =>
      harness.run(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          yield* appendMixed
          const kinds = (page: { readonly entries: ReadonlyArray<{ readonly position: number }> }) =>
            page.entries.map((entry) => entry.position)
          // Positions 1 and 2 are acceptances, 3 and 6 inputs, 4 a step, 5 an abort.
          const inputs = yield* history.feed({ after: 0, limit: 100, kinds: ["InputApplied"] })
          expect([kinds(inputs), inputs.last]).toEqual([[3, 6], 6])
          expect(inputs.entries.map((entry) => entry.record.threadId)).toEqual(["t", "u"])
          const two = yield* history.feed({
            after: 0,
            limit: 100,
            kinds: ["AbortRequested", "SubmissionAccepted"],
          })
          expect(two.entries.map((entry) => entry.record.entry._tag)).toEqual([
            "SubmissionAccepted",
            "SubmissionAccepted",
            "AbortRequested",
          ])
          // The limit bounds the records covered: a page may hold none of the kinds asked for.
          const none = yield* history.feed({ after: 3, limit: 1, kinds: ["InputApplied"] })
          expect([kinds(none), none.last]).toEqual([[], 4])
          const next = yield* history.feed({ after: none.last, limit: 2, kinds: ["InputApplied"] })
          expect([kinds(next), next.last]).toEqual([[6], 6])
          expect(yield* history.feed({ after: 6, limit: 5, kinds: ["InputApplied"] })).toEqual({
            entries: [],
            last: 6,
          })
          // The records a page holds are the ones the unfiltered feed holds there.
          const all = yield* history.feed({ after: 0, limit: 100 })
          expect(inputs.entries).toEqual(
            all.entries.filter((entry) => entry.record.entry._tag === "InputApplied"),
          )
          const empty = yield* Effect.flip(history.feed({ after: 0, limit: 5, kinds: [] }))
          expect(empty.message).toContain("at least one record kind")
          const unknown = yield* Effect.flip(
            history.feed({ after: 0, limit: 5, kinds: ["Nonsense" as HistoryEntry["_tag"]] }),
          )
          expect(unknown.message).toContain('"Nonsense"')
        }),
      ),
    )

    it.effect("round-trips every entry kind", () =>
      harness.run(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          const row = yield* admitNew(request("t", "a"))
          const entries: ReadonlyArray<HistoryEntry> = [
            {
              _tag: "SubmissionAccepted",
              agentId: row.agentId,
              agentDigest: "d",
              input: { nested: { deep: [true] } },
            },
            { _tag: "InputApplied" },
            { _tag: "StepCompleted", step: 0, name: "fetch", result: { rows: 2 } },
            { _tag: "StepFailed", step: 1, name: "parse", error: "bad" },
            { _tag: "UncertainStepStarted", step: 2, name: "charge" },
            { _tag: "UnknownOutcomeRecorded", step: 2, name: "charge" },
            { _tag: "UnknownOutcomeResolved", step: 2, resolution: { _tag: "Succeeded", value: 42 } },
            { _tag: "ApprovalRequested", step: 3, payload: { amount: 10 } },
            { _tag: "ApprovalResolved", step: 3, approved: false, note: "no" },
            { _tag: "AbortRequested" },
            { _tag: "SubmissionSettled", outcome: "failed", error: "denied" },
          ]
          for (const [i, entry] of entries.entries()) {
            yield* history.append(row.submissionId, entry, unowned(row, 2_000), 2_000 + i)
          }
          // And again, all in one append.
          yield* history.appendAll(row.submissionId, entries, unowned(row, 3_000), 3_000)
          const stored = yield* history.forSubmission(row.submissionId)
          // The admission recorded its own acceptance first.
          expect(stored.map((record) => record.entry)).toEqual([
            expect.objectContaining({ _tag: "SubmissionAccepted" }),
            ...entries,
            ...entries,
          ])
          expect(stored.map((record) => record.sequence)).toEqual(
            Array.from({ length: 1 + 2 * entries.length }, (_, i) => i + 1),
          )
        }),
      ),
    )

    it.effect(
      "answers the event that took an id, the first record keeping it, until retention removes it",
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            const history = yield* ThreadHistory
            const received = (event: string, eventId: string) =>
              ({ _tag: "EventReceived", event, eventId, payload: { eventId } }) as const
            const a = yield* admitNew(request("t", "a"))
            yield* history.append(a.submissionId, received("x", "1"), unowned(a, 2_000), 2_000)
            // Appended together with other records; a second record of an id does not take it.
            yield* history.appendAll(
              a.submissionId,
              [received("y", "2"), { _tag: "AbortRequested" }, received("z", "1")],
              unowned(a, 2_100),
              2_100,
            )
            // Recorded by the ledger's resumption of a parked Submission, in another Thread.
            yield* admitNew(request("u", "b"))
            const { suspended } = yield* parkHead("u", grant(1, 2_200))
            yield* ledger.transition(unowned(suspended, 2_300), "ready", {
              entries: [received("x", "1"), received("w", "3")],
              now: 2_300,
            })
            const b = suspended.submissionId
            const taken = (submissionId: typeof b, eventId: string) =>
              history.eventReceived(submissionId, eventId)
            expect(yield* taken(a.submissionId, "1")).toEqual(Option.some("x"))
            expect(yield* taken(a.submissionId, "2")).toEqual(Option.some("y"))
            expect(yield* taken(a.submissionId, "3")).toEqual(Option.none())
            expect(yield* taken(b, "1")).toEqual(Option.some("x"))
            expect(yield* taken(b, "3")).toEqual(Option.some("w"))
            expect(yield* taken(SubmissionId.make("none"), "1")).toEqual(Option.none())
            // Retention removes a settled Submission's ids with its records, and no other's.
            const claim = yield* claimHead("t", grant(2, 2_400))
            const done = yield* ledger.settle(owner(claim), settlementOf(claim, "completed", 2_500))
            expect(
              yield* ledger.removeSettled([{ submissionId: done.submissionId, receiptId: done.receiptId }]),
            ).toEqual([done.submissionId])
            expect(yield* taken(a.submissionId, "1")).toEqual(Option.none())
            expect(yield* taken(a.submissionId, "2")).toEqual(Option.none())
            expect(yield* taken(b, "1")).toEqual(Option.some("x"))
          }),
        ),
    )

    it.effect("refuses an append from a stale owner and appends nothing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          yield* admitReady(request("t", "a"))
          const stale = yield* claimHead("t", grant(1, 2_000, 100))
          const step = { _tag: "StepCompleted", step: 0, name: "s", result: 1 } as const
          const first = yield* history.append(stale.submissionId, step, owner(stale), 2_050)
          const fresh = yield* claimHead("t", grant(2, 2_100, 100))
          const before = yield* rowOf(stale.submissionId)
          const refused = yield* Effect.flip(history.append(stale.submissionId, step, owner(stale), 2_150))
          expect(refused._tag).toBe("FenceRejected")
          expect((yield* history.forSubmission(stale.submissionId)).slice(1)).toEqual([first])
          expect(yield* rowOf(stale.submissionId)).toEqual(before)
          const next = yield* history.append(fresh.submissionId, step, owner(fresh), 2_160)
          expect(next.sequence).toBe(3)
          yield* ledger.park(fresh, "suspended")
          const parked = yield* Effect.flip(history.append(fresh.submissionId, step, owner(fresh), 2_170))
          expect(parked._tag).toBe("OwnershipLost")
          expect((yield* history.page(ThreadId.make("t"), { limit: 10 })).records.length).toBe(3)
        }),
      ),
    )

    it.effect(
      "refuses a recovery append under a live lease, a foreign fence, an unknown submission or a bad time",
      () =>
        harness.run(
          Effect.gen(function* () {
            const history = yield* ThreadHistory
            const a = yield* admitReady(request("t", "a"))
            const other = yield* admitNew(request("u", "b"))
            yield* claimHead("t", grant(1, 2_000, 1_000))
            const running = yield* rowOf(a.submissionId)
            const entry = { _tag: "AbortRequested" } as const
            const live = yield* Effect.flip(
              history.append(a.submissionId, entry, unowned(running, 2_500), 2_500),
            )
            expect(live._tag).toBe("FenceRejected")
            const foreign = yield* Effect.flip(
              history.append(a.submissionId, entry, unowned(other, 2_500), 2_500),
            )
            expect(foreign._tag).toBe("FenceRejected")
            const missingId = SubmissionId.make("missing")
            const missing = yield* Effect.flip(
              history.append(
                missingId,
                entry,
                { _tag: "Unowned", submissionId: missingId, producerEpoch: 0, now: 1 },
                1,
              ),
            )
            expect(missing._tag).toBe("SubmissionNotFound")
            // Only the acceptance records of the two admissions.
            const tags = (thread: string) =>
              Effect.map(history.page(ThreadId.make(thread), { limit: 10 }), (page) =>
                page.records.map((record) => record.entry._tag),
              )
            expect(yield* tags("t")).toEqual(["SubmissionAccepted"])
            expect(yield* tags("u")).toEqual(["SubmissionAccepted"])
            const nan = yield* Effect.flip(
              history.append(other.submissionId, entry, unowned(other, 1), Number.NaN),
            )
            expect(nan._tag).toBe("ThreadStoreError")
            expect(yield* tags("u")).toEqual(["SubmissionAccepted"])
          }),
        ),
    )

    it.effect("pages a thread's records after a sequence", () =>
      harness.run(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          // The acceptance is record 1; four steps follow.
          const row = yield* admitNew(request("t", "a"))
          for (let i = 0; i < 4; i++) {
            yield* history.append(
              row.submissionId,
              { _tag: "StepCompleted", step: i, name: `s${i}`, result: i },
              unowned(row, 2_000),
              2_000,
            )
          }
          const t = ThreadId.make("t")
          const sequences = (page: { readonly records: ReadonlyArray<{ readonly sequence: number }> }) =>
            page.records.map((record) => record.sequence)
          const p1 = yield* history.page(t, { limit: 2 })
          expect([sequences(p1), p1.next]).toEqual([[1, 2], 2])
          const p2 = yield* history.page(t, { after: 2, limit: 2 })
          expect([sequences(p2), p2.next]).toEqual([[3, 4], 4])
          const p3 = yield* history.page(t, { after: 4, limit: 2 })
          expect(sequences(p3)).toEqual([5])
          expect("next" in p3).toBe(false)
          const exact = yield* history.page(t, { after: 3, limit: 2 })
          expect([sequences(exact), "next" in exact]).toEqual([[4, 5], false])
          expect(yield* history.page(t, { after: 5, limit: 2 })).toEqual({ records: [] })
          expect(yield* history.page(ThreadId.make("empty"), { limit: 2 })).toEqual({ records: [] })
          const bad = yield* Effect.flip(history.page(t, { limit: 0 }))
          expect(bad._tag).toBe("ThreadStoreError")
          const negative = yield* Effect.flip(history.page(t, { after: -1, limit: 1 }))
          expect(negative._tag).toBe("ThreadStoreError")
        }),
      ),
    )

    it.effect("keeps sequences gap-free under concurrent appends", () =>
      harness.run(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          const rows = yield* Effect.forEach(["a", "b", "c", "d"], (key) => admitNew(request("t", key)))
          const records = yield* Effect.forEach(
            Array.from({ length: 24 }, (_, i) => i),
            (i) => {
              const row = rows[i % rows.length]!
              return history.append(
                row.submissionId,
                { _tag: "StepCompleted", step: i, name: "s", result: i },
                unowned(row, 3_000),
                3_000,
              )
            },
            { concurrency: "unbounded" },
          )
          // The four acceptance records come first.
          expect(records.map((record) => record.sequence).sort((x, y) => x - y)).toEqual(
            Array.from({ length: 24 }, (_, i) => i + 5),
          )
          const page = yield* history.page(ThreadId.make("t"), { limit: 100 })
          expect(page.records.map((record) => record.sequence)).toEqual(
            Array.from({ length: 28 }, (_, i) => i + 1),
          )
        }),
      ),
    )
  })
