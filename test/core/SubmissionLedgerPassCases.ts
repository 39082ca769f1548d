/**
 * Conformance cases: what a maintenance pass reads instead of the whole queue, namely lane
 * heads, the recovery candidates and the nonterminal count. Each agrees with `scanNonterminal`
 * over the same store, whatever mix of states it holds.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { isParked, isRecoveryCandidate } from "../../src/core/internal/ledger/rules.ts"
import { SubmissionLedger, type SubmissionSnapshot } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import { settledEntry } from "../../src/core/internal/ledger/rules.ts"
import {
  admitNew,
  admitReady,
  claimHead,
  grant,
  owner,
  request,
  scanAll,
  settleHead,
  settlementOf,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

const ids = (rows: ReadonlyArray<SubmissionSnapshot>) => rows.map((row) => row.submissionId)

/**
 * What each pass read must equal, derived from the full scan: the heads are the first row of
 * every lane whose first row does not wait for an outside actor.
 */
const expectAgreesWithScan = Effect.gen(function* () {
  const ledger = yield* SubmissionLedger
  const all = yield* scanAll
  const firstOfLane = all.filter(
    (row, index) => (index === 0 || all[index - 1]?.threadId !== row.threadId) && !isParked(row),
  )
  expect(ids(yield* ledger.laneHeads)).toEqual(ids(firstOfLane))
  expect(ids(yield* Stream.runCollect(ledger.scanRecoveryCandidates))).toEqual(
    ids(all.filter(isRecoveryCandidate)),
  )
  expect(yield* ledger.countAllNonterminal).toBe(all.length)
  // Seeking lane by lane from the first visits exactly the heads.
  const seeked: Array<SubmissionSnapshot> = []
  let next = yield* ledger.nextLaneHead(undefined)
  while (Option.isSome(next)) {
    seeked.push(next.value)
    next = yield* ledger.nextLaneHead(next.value.threadId)
  }
  expect(ids(seeked)).toEqual(ids(firstOfLane))
  return all
})

/** Registers the cases of the pass reads. */
export const passReadCases = (harness: LedgerHarness) => {
  describe("pass reads", () => {
    it.effect("are empty for an empty ledger", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          expect(yield* ledger.laneHeads).toEqual([])
          expect(yield* Stream.runCollect(ledger.scanRecoveryCandidates)).toEqual([])
          expect(yield* ledger.countAllNonterminal).toBe(0)
        }),
      ),
    )

    it.effect("take only accepted aborts as candidates and keep one head per lane", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          // Lane "a": a claimed head, a queued follower, an aborted follower.
          yield* admitReady(request("a", "1"))
          yield* admitReady(request("a", "2"))
          const abortedA = yield* admitNew(request("a", "3"))
          yield* ledger.requestAbort(abortedA.submissionId)
          yield* claimHead("a", grant(1, 2_000))
          // Lane "b": a plain queued head and an aborted follower.
          const queued = yield* admitReady(request("b", "1"))
          const aborted = yield* admitReady(request("b", "2"))
          yield* ledger.requestAbort(aborted.submissionId)
          // Lane "c": two plain queued rows; lane "d" settles completely.
          yield* admitReady(request("c", "1"))
          yield* admitReady(request("c", "2"))
          yield* admitReady(request("d", "1"))
          yield* settleHead("d", 3_000)

          const all = yield* expectAgreesWithScan
          expect(all).toHaveLength(7)
          const candidates = yield* Stream.runCollect(ledger.scanRecoveryCandidates)
          // The running head is its owner's (or the next Attempt's); queued input is the Attempt's.
          expect(candidates.map((row) => [row.threadId, row.queueSequence])).toEqual([
            ["a", 3],
            ["b", 2],
          ])
          expect(ids(candidates)).not.toContain(queued.submissionId)
          expect((yield* ledger.laneHeads).map((row) => row.threadId)).toEqual(["a", "b", "c"])
        }),
      ),
    )

    it.effect("follow released and reserved heads, skip parked lanes, and count recorded settlements", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (const lane of ["x", "y", "z"]) {
            yield* admitReady(request(lane, "1"))
            yield* admitReady(request(lane, "2"))
          }
          yield* expectAgreesWithScan
          yield* ledger.release(yield* claimHead("x", grant(1, 2_000)))
          yield* ledger.park(yield* claimHead("y", grant(2, 2_000)), "suspended")
          // A reservation an older release made: settled in steps, it counts once recorded.
          const reserving = yield* claimHead("z", grant(3, 2_000))
          const reserved = yield* ledger.reserveSettlement(owner(reserving), settlementOf(reserving))
          const rows = yield* expectAgreesWithScan
          expect(rows.filter(isRecoveryCandidate).map((row) => row.state)).toEqual(["terminalizing"])
          expect(yield* ledger.countAllNonterminal).toBe(6)
          const history = yield* ThreadHistory
          yield* history.append(
            reserved.submissionId,
            settledEntry(settlementOf(reserving)),
            {
              _tag: "Unowned",
              submissionId: reserved.submissionId,
              producerEpoch: reserved.producerEpoch,
              now: 0,
            },
            3_000,
          )
          yield* ledger.finalizeSettlement(reserving.submissionId)
          expect(yield* ledger.countAllNonterminal).toBe(5)
          yield* settleHead("x", 4_000)
          yield* settleHead("z", 4_000)
          yield* expectAgreesWithScan
          expect(yield* ledger.countAllNonterminal).toBe(3)
          // Lane "z" has nothing left; lane "y" waits for its approval behind its head.
          expect((yield* ledger.laneHeads).map((row) => [row.threadId, row.queueSequence])).toEqual([
            ["x", 2],
          ])
          expect(Option.map(yield* ledger.head(ThreadId.make("y")), (row) => row.state)).toEqual(
            Option.some("suspended"),
          )
        }),
      ),
    )

    it.effect("never read a parked Submission: lanes parked behind a wait are skipped", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (const lane of ["p1", "p2", "p3"]) {
            yield* admitReady(request(lane, "1"))
            yield* ledger.park(
              yield* claimHead(lane, grant(1, 2_000)),
              lane === "p2" ? "unknown" : "suspended",
            )
          }
          // A follower queued behind a wait is not a head to serve either.
          yield* admitReady(request("p3", "2"))
          yield* admitReady(request("q", "1"))
          yield* expectAgreesWithScan
          expect((yield* ledger.laneHeads).map((row) => row.threadId)).toEqual(["q"])
          expect(Option.map(yield* ledger.nextLaneHead(undefined), (row) => row.threadId)).toEqual(
            Option.some("q"),
          )
          expect(yield* Stream.runCollect(ledger.scanRecoveryCandidates)).toEqual([])
          expect(Option.isNone(yield* ledger.claim(ThreadId.make("p3"), grant(2, 3_000)))).toBe(true)
          // Resuming a wait brings its lane back.
          const parked = Option.getOrThrow(yield* ledger.head(ThreadId.make("p3")))
          yield* ledger.transition(
            {
              _tag: "Unowned",
              submissionId: parked.submissionId,
              producerEpoch: parked.producerEpoch,
              now: 3_000,
            },
            "ready",
          )
          expect((yield* ledger.laneHeads).map((row) => [row.threadId, row.queueSequence])).toEqual([
            ["p3", 1],
            ["q", 1],
          ])
          yield* expectAgreesWithScan
        }),
      ),
    )

    it.effect("order lanes as the scan does, astral Thread ids included", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (const lane of ["\u{1F600}", "\uFF5E", "b", "a"]) yield* admitReady(request(lane, "1"))
          yield* expectAgreesWithScan
          expect((yield* ledger.laneHeads).map((row) => row.threadId)).toEqual([
            ThreadId.make("a"),
            ThreadId.make("b"),
            ThreadId.make("\u{1F600}"),
            ThreadId.make("\uFF5E"),
          ])
        }),
      ),
    )

    it.effect("seek the head of the next lane strictly after a Thread, in lane order", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const threadOf = (row: Option.Option<SubmissionSnapshot>) =>
            Option.getOrUndefined(Option.map(row, (head) => [head.threadId, head.queueSequence] as const))
          expect(yield* ledger.nextLaneHead(undefined)).toEqual(Option.none())
          for (const lane of ["\u{1F600}", "\uFF5E", "b", "d"]) yield* admitReady(request(lane, "1"))
          yield* admitReady(request("b", "2"))
          yield* admitReady(request("c", "1"))
          yield* settleHead("c", 2_000)
          yield* settleHead("b", 2_000)
          expect(threadOf(yield* ledger.nextLaneHead(undefined))).toEqual(["b", 2])
          // Not the lane itself, and a lane with no nonterminal row ("c") is skipped.
          expect(threadOf(yield* ledger.nextLaneHead(ThreadId.make("b")))).toEqual(["d", 1])
          // A Thread without a lane seeks from its place in the order.
          expect(threadOf(yield* ledger.nextLaneHead(ThreadId.make("a")))).toEqual(["b", 2])
          expect(threadOf(yield* ledger.nextLaneHead(ThreadId.make("bb")))).toEqual(["d", 1])
          // UTF-16 order: the astral Thread sorts before U+FF5E.
          expect(threadOf(yield* ledger.nextLaneHead(ThreadId.make("d")))).toEqual(["\u{1F600}", 1])
          expect(threadOf(yield* ledger.nextLaneHead(ThreadId.make("\u{1F600}")))).toEqual(["\uFF5E", 1])
          expect(yield* ledger.nextLaneHead(ThreadId.make("\uFF5E"))).toEqual(Option.none())
          yield* expectAgreesWithScan
        }),
      ),
    )

    it.effect("admit up to the queue-depth limit however far apart the nonterminal rows are", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          // Settling an aborted follower out of order leaves a gap inside the lane's span.
          yield* admitReady(request("t", "1"))
          const middle = yield* admitReady(request("t", "2"))
          yield* admitReady(request("t", "3"))
          yield* ledger.requestAbort(middle.submissionId)
          yield* ledger.settle(
            { _tag: "Unowned", submissionId: middle.submissionId, producerEpoch: 0, now: 2_000 },
            settlementOf(middle, "aborted"),
          )
          expect(yield* ledger.countAllNonterminal).toBe(2)
          yield* admitNew(request("t", "4"))
          const refused = yield* Effect.flip(ledger.admit(request("t", "5")))
          expect(refused._tag).toBe("AdmissionRefused")
          if (refused._tag === "AdmissionRefused") {
            expect(refused.reason).toBe("queue-depth")
            expect(refused.message).toContain("already has 3 unsettled submissions")
          }
          yield* expectAgreesWithScan
        }),
        { limits: { maxQueueDepthPerLane: 3, maxInputBytes: 1_024 } },
      ),
    )
  })
}
