/** Conformance cases: a child's link to its parent, joins into a host, and input records. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import { IdempotencyKey, SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { Settlement, SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { type HistoryEntry, ThreadHistory } from "../../src/core/ThreadHistory.ts"
import {
  admitNew,
  admitReady,
  claimHead,
  grant,
  owner,
  recordTags,
  request,
  rowOf,
  scanAll,
  settleHead,
  settlementOf,
  unowned,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

const parent = {
  address: { namespace: "THREADS", objectId: "a".repeat(64) },
  threadId: ThreadId.make("parent-thread"),
  submissionId: SubmissionId.make("parent-1"),
  step: 4,
}

const recovering = Effect.gen(function* () {
  const ledger = yield* SubmissionLedger
  return (yield* Stream.runCollect(ledger.scanRecoveryCandidates)).map((row) => row.submissionId)
})

/** Appends an input record to a running Submission (epoch 1), as a receiver would. */
const input = (submissionId: SubmissionId, entry: HistoryEntry, at: number) =>
  Effect.gen(function* () {
    const history = yield* ThreadHistory
    yield* history.append(
      submissionId,
      entry,
      { _tag: "Input", submissionId, producerEpoch: 1, state: "running" },
      at,
    )
  })

/** The Thread sequence of a Submission's last record: how far a read of its journal covered. */
const lastSequence = (submissionId: SubmissionId) =>
  Effect.gen(function* () {
    const history = yield* ThreadHistory
    const records = yield* history.forSubmission(submissionId)
    return records[records.length - 1]!.sequence
  })

/** Registers the link, join and input-fence cases. */
export const linkCases = (harness: LedgerHarness) => {
  describe("links and joins", () => {
    it.effect("stores a child's parent link with its admission and finds the child by its key", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          const child = yield* admitNew(request("child", "parent:parent-1:4", { parent }))
          expect([child.state, child.parent]).toEqual(["ready", parent])
          expect((yield* rowOf(child.submissionId)).parent).toEqual(parent)
          const [accepted] = yield* history.forSubmission(child.submissionId)
          expect(accepted?.entry).toMatchObject({ _tag: "SubmissionAccepted", parent })
          const found = yield* ledger.lookupByKey(
            ThreadId.make("child"),
            IdempotencyKey.make("parent:parent-1:4"),
          )
          expect(Option.getOrThrow(found)).toEqual(child)
          expect(
            yield* ledger.lookupByKey(ThreadId.make("other"), IdempotencyKey.make("parent:parent-1:4")),
          ).toEqual(Option.none())
          const plain = yield* admitNew(request("child", "k"))
          expect(plain.parent).toBeUndefined()
        }),
      ),
    )

    it.effect("admits a join of a live host as joining, marks it joined and lists a host's joins", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          const host = yield* admitReady(request("t", "host"))
          const other = yield* admitReady(request("u", "other"))
          const first = yield* admitNew(request("t", "j1", { host: host.submissionId }))
          const second = yield* admitNew(request("t", "j2", { host: host.submissionId }))
          expect([first.state, first.host]).toEqual(["joining", host.submissionId])
          const [accepted] = yield* history.forSubmission(first.submissionId)
          expect(accepted?.entry).toMatchObject({ _tag: "SubmissionAccepted", host: host.submissionId })
          const joined = yield* ledger.markJoined(first.submissionId)
          expect(joined.state).toBe("joined")
          expect(yield* ledger.markJoined(first.submissionId)).toEqual(joined)
          const joins = yield* ledger.joinsOf(ThreadId.make("t"), host.submissionId)
          expect(joins.map((row) => [row.submissionId, row.state])).toEqual([
            [first.submissionId, "joined"],
            [second.submissionId, "joining"],
          ])
          expect(yield* ledger.joinsOf(ThreadId.make("u"), other.submissionId)).toEqual([])
          // Joins are recovery candidates: the host's settlement finishes them in a later write.
          expect((yield* recovering).sort()).toEqual([first.submissionId, second.submissionId].sort())
          // A join is never claimed: the lane's head stays the host.
          const claim = yield* claimHead("t", grant(1, 2_000))
          expect(claim.submissionId).toBe(host.submissionId)
        }),
      ),
    )

    it.effect("admits a join as ordinary input when its host settled or is being aborted", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const settled = yield* admitReady(request("t", "host"))
          yield* settleHead("t", 1_500)
          const late = yield* admitNew(request("t", "late", { host: settled.submissionId }))
          expect([late.state, late.host]).toEqual(["ready", undefined])
          const aborting = yield* admitReady(request("u", "host"))
          yield* ledger.requestAbort(aborting.submissionId)
          const refused = yield* admitNew(request("u", "j", { host: aborting.submissionId }))
          expect([refused.state, refused.host]).toEqual(["ready", undefined])
          const history = yield* ThreadHistory
          const [accepted] = yield* history.forSubmission(refused.submissionId)
          expect(accepted?.entry).not.toHaveProperty("host")
        }),
      ),
    )

    it.effect("reverts a join to ordinary queued input that claims like any other", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const host = yield* admitReady(request("t", "host"))
          const join = yield* admitNew(request("t", "j", { host: host.submissionId }))
          const reverted = yield* ledger.revertJoining(join.submissionId, 3_000)
          expect(reverted).toMatchObject({ state: "ready" })
          expect(reverted.host).toBeUndefined()
          expect(yield* ledger.revertJoining(join.submissionId, 4_000)).toEqual(reverted)
          expect((yield* Effect.flip(ledger.markJoined(join.submissionId)))._tag).toBe("InvalidTransition")
          expect(yield* recovering).toEqual([])
          const hostClaim = yield* claimHead("t", grant(1, 3_100))
          yield* ledger.settle(owner(hostClaim), settlementOf(hostClaim))
          const claim = yield* claimHead("t", grant(2, 3_200))
          expect(claim.submissionId).toBe(join.submissionId)
          expect(yield* ledger.joinsOf(ThreadId.make("t"), host.submissionId)).toEqual([])
        }),
      ),
    )

    it.effect("settles a joined submission with its host's settlement naming the host", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const host = yield* admitReady(request("t", "host"))
          const join = yield* admitNew(request("t", "j", { host: host.submissionId }))
          const joined = yield* ledger.markJoined(join.submissionId)
          const settlement = settlementOf(joined)
          const final = yield* ledger.settle(
            unowned(joined, 5_000),
            new Settlement({ ...settlement, host: host.submissionId }),
          )
          expect([final.state, final.settlement?.host]).toEqual(["settled", host.submissionId])
          expect(yield* recordTags(join.submissionId)).toEqual(["SubmissionAccepted", "SubmissionSettled"])
          expect((yield* scanAll).map((row) => row.submissionId)).toEqual([host.submissionId])
          expect(yield* recovering).toEqual([])
        }),
      ),
    )

    it.effect("accepts input records only at the state and epoch their sender read", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          const row = yield* admitReady(request("t", "a"))
          const claim = yield* claimHead("t", grant(1, 2_000))
          const input = (state: "ready" | "running" | "settled", producerEpoch: number) =>
            ({ _tag: "Input", submissionId: row.submissionId, producerEpoch, state }) as const
          // A live owner holds the row: an input record still lands, an unowned one does not.
          const record = yield* history.append(
            row.submissionId,
            { _tag: "AbortRequested" },
            input("running", claim.producerEpoch),
            2_100,
          )
          expect(record.submissionId).toBe(row.submissionId)
          expect(
            (yield* Effect.flip(ledger.checkFence(unowned(yield* rowOf(row.submissionId), 2_100))))._tag,
          ).toBe("FenceRejected")
          // The row moved since the sender read it: refused, so the sender decides again.
          const stale = yield* Effect.flip(
            history.append(row.submissionId, { _tag: "AbortRequested" }, input("ready", 0), 2_150),
          )
          expect(stale).toMatchObject({ _tag: "FenceRejected", expectedEpoch: 0, actualEpoch: 1 })
          yield* ledger.settle(owner(claim), settlementOf(claim))
          const late = yield* Effect.flip(
            history.append(
              row.submissionId,
              { _tag: "AbortRequested" },
              input("settled", claim.producerEpoch),
              2_200,
            ),
          )
          expect(late).toMatchObject({ _tag: "FenceRejected" })
          expect(late.message).toContain("takes no more input")
          const missing = yield* Effect.flip(
            ledger.checkFence({
              _tag: "Input",
              submissionId: SubmissionId.make("nobody"),
              producerEpoch: 0,
              state: "ready",
            }),
          )
          expect(missing._tag).toBe("SubmissionNotFound")
        }),
      ),
    )

    it.effect("parks a wait for a child unless the child's settlement is recorded, in one write", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          yield* admitReady(request("t", "waits"))
          const waits = yield* claimHead("t", grant(1, 2_000))
          expect(yield* ledger.park(waits, "suspended", { child: 0 })).toBe("suspended")
          expect(yield* rowOf(waits.submissionId)).toMatchObject({ state: "suspended" })
          expect(yield* ledger.laneHeads).toEqual([])

          yield* admitReady(request("u", "answered"))
          const answered = yield* claimHead("u", grant(2, 2_000))
          // The child's settlement lands while the owner runs, before it parks on that child.
          yield* history.append(
            answered.submissionId,
            { _tag: "ChildSettled", step: 0, outcome: "completed", output: 1 },
            { _tag: "Input", submissionId: answered.submissionId, producerEpoch: 1, state: "running" },
            2_100,
          )
          // The park finds it: the row is left ready for the next Attempt, not parked forever.
          expect(yield* ledger.park(answered, "suspended", { child: 0 })).toBe("ready")
          const row = yield* rowOf(answered.submissionId)
          expect([row.state, row.ownership]).toEqual(["ready", undefined])
          expect((yield* ledger.laneHeads).map((head) => head.submissionId)).toEqual([answered.submissionId])
          expect(yield* recovering).toEqual([])
        }),
      ),
    )

    it.effect("parks a wait for a child unless its settlement was recorded after the records read", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const settledChild = (submissionId: SubmissionId, step: number, at: number) =>
            input(submissionId, { _tag: "ChildSettled", step, outcome: "completed", output: step }, at)

          // The settlement of child 0 was read; the park waits for child 1's, which is not there.
          yield* admitReady(request("t", "read-it"))
          const readIt = yield* claimHead("t", grant(1, 2_000))
          yield* settledChild(readIt.submissionId, 0, 2_100)
          const through = yield* lastSequence(readIt.submissionId)
          expect(yield* ledger.park(readIt, "suspended", { child: 1, after: through })).toBe("suspended")

          // A settlement recorded at or before `after` was in the read: it does not wake the park.
          yield* admitReady(request("u", "before-it"))
          const beforeIt = yield* claimHead("u", grant(2, 2_000))
          yield* settledChild(beforeIt.submissionId, 0, 2_100)
          const readThrough = yield* lastSequence(beforeIt.submissionId)
          expect(yield* ledger.park(beforeIt, "suspended", { child: 0, after: readThrough })).toBe(
            "suspended",
          )

          // One recorded after the read does.
          yield* admitReady(request("v", "after-it"))
          const afterIt = yield* claimHead("v", grant(3, 2_000))
          const before = yield* lastSequence(afterIt.submissionId)
          yield* settledChild(afterIt.submissionId, 0, 2_100)
          expect(yield* ledger.park(afterIt, "suspended", { child: 0, after: before })).toBe("ready")
        }),
      ),
    )

    it.effect("parks a wait for an event unless one was recorded after the records its Attempt read", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const received = (submissionId: SubmissionId, eventId: string, at: number) =>
            input(submissionId, { _tag: "EventReceived", event: "poke", eventId, payload: null }, at)

          yield* admitReady(request("t", "read-it"))
          const readIt = yield* claimHead("t", grant(1, 2_000))
          yield* received(readIt.submissionId, "e-1", 2_100)
          // The Attempt read its journal through the event: it waits for the next one.
          const through = yield* lastSequence(readIt.submissionId)
          expect(yield* ledger.park(readIt, "suspended", { event: "poke", seen: 1, after: through })).toBe(
            "suspended",
          )

          yield* admitReady(request("u", "missed-it"))
          const missedIt = yield* claimHead("u", grant(2, 2_000))
          const before = yield* lastSequence(missedIt.submissionId)
          // An event lands after the Attempt read its journal, before it parks.
          yield* received(missedIt.submissionId, "e-2", 2_100)
          expect(yield* ledger.park(missedIt, "suspended", { event: "poke", seen: 0, after: before })).toBe(
            "ready",
          )
          // With `after`, only what came after counts: an event read before it does not wake.
          yield* admitReady(request("w", "before-it"))
          const beforeIt = yield* claimHead("w", grant(4, 2_000))
          yield* received(beforeIt.submissionId, "e-4", 2_100)
          const readThrough = yield* lastSequence(beforeIt.submissionId)
          expect(
            yield* ledger.park(beforeIt, "suspended", { event: "poke", seen: 0, after: readThrough }),
          ).toBe("suspended")
          // Counted from the acceptance instead, the same two answers.
          yield* admitReady(request("v", "counted"))
          const counted = yield* claimHead("v", grant(3, 2_000))
          yield* received(counted.submissionId, "e-3", 2_100)
          expect(yield* ledger.park(counted, "suspended", { event: "poke", seen: 0 })).toBe("ready")
        }),
      ),
    )
  })
}
