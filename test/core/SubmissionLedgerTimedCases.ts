/**
 * Conformance cases: timed waits. A row parked until a due time blocks its lane, is never
 * claimable before it, is found in due order once due, and is claimed in place, so its lane
 * stays parked until it settles or parks again; a dead incarnation's in-place Claim is taken
 * over behind the rows due before it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { SubmissionLedger, type Claim, type WaitRecord } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import {
  admitReady,
  claimHead,
  grant,
  owner,
  recordTags,
  request,
  rowOf,
  settlementOf,
  unowned,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

/** The wait of a sleep at call `step`. */
const sleep = (step: number, dueAt: number, since = 2_000): WaitRecord => ({
  _tag: "Sleep",
  step,
  name: `nap-${step}`,
  dueAt,
  since,
})

/** Claims the head of `lane` and parks it until `dueAt`. */
const parkUntil = (lane: string, n: number, now: number, dueAt: number) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const claim = yield* claimHead(lane, grant(n, now))
    return yield* ledger.parkTimed(owner(claim), { wait: sleep(0, dueAt, now), dueAt, now })
  })

/** Claims a due row in place, which must succeed. */
const claimDue = (row: { readonly submissionId: Claim["submissionId"] }, g: ReturnType<typeof grant>) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const claimed = yield* ledger.claimDue(row.submissionId, g)
    expect(Option.isSome(claimed)).toBe(true)
    return Option.getOrThrow(claimed)
  })

const dueIds = (rows: ReadonlyArray<{ readonly submissionId: string }>) => rows.map((row) => row.submissionId)

/** Registers the timed-wait cases. */
export const timedCases = (harness: LedgerHarness) => {
  describe("timed waits", () => {
    it.effect("park a row until its due time, blocking its lane and every claim before it", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const follower = yield* admitReady(request("t", "b"))
          const parked = yield* parkUntil("t", 1, 2_000, 10_000)
          expect([parked.state, parked.dueAt, parked.producerEpoch, parked.ownership]).toEqual([
            "waiting",
            10_000,
            1,
            undefined,
          ])
          expect(parked.wait).toEqual(sleep(0, 10_000))
          expect(yield* rowOf(parked.submissionId)).toEqual(parked)
          // The lane is parked: no head to serve, nothing for the lane claim, the follower waits.
          expect(yield* ledger.laneHeads).toEqual([])
          expect(yield* ledger.nextLaneHead(undefined)).toEqual(Option.none())
          expect(yield* ledger.claim(ThreadId.make("t"), grant(2, 20_000))).toEqual(Option.none())
          expect((yield* rowOf(follower.submissionId)).state).toBe("ready")
          // Never claimable or listed as due before its time, at any instant before it.
          for (const now of [2_000, 9_999]) {
            expect(yield* ledger.nextDue(now, { limit: 10 })).toEqual([])
            expect(yield* ledger.claimDue(parked.submissionId, grant(3, now))).toEqual(Option.none())
          }
          expect(yield* ledger.earliestDue(10)).toEqual([parked])
          expect(yield* ledger.nextDue(10_000, { limit: 10 })).toEqual([parked])
          expect(yield* ledger.countAllNonterminal).toBe(2)
        }),
      ),
    )

    it.effect("claim a due row in place: its lane stays parked until it settles", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const follower = yield* admitReady(request("t", "b"))
          const parked = yield* parkUntil("t", 1, 2_000, 10_000)
          const claim = yield* claimDue(parked, grant(2, 10_500))
          expect([claim.producerEpoch, claim.dueAt, claim.leaseExpiresAt]).toEqual([2, 10_000, 11_500])
          const running = yield* rowOf(parked.submissionId)
          expect([running.state, running.dueAt]).toEqual(["running", 10_000])
          expect(yield* ledger.laneHeads).toEqual([])
          expect(yield* ledger.claim(ThreadId.make("t"), grant(3, 20_000))).toEqual(Option.none())
          // A claim held by a live lease of this incarnation is not claimable again.
          expect(yield* ledger.claimDue(parked.submissionId, grant(4, 10_600))).toEqual(Option.none())
          yield* ledger.settle(owner(claim), settlementOf(claim))
          expect(yield* ledger.earliestDue(10)).toEqual([])
          expect(dueIds(yield* ledger.laneHeads)).toEqual([follower.submissionId])
        }),
      ),
    )

    it.effect("park again from an in-place Claim, and release it back to the due order", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const parked = yield* parkUntil("t", 1, 2_000, 10_000)
          const first = yield* claimDue(parked, grant(2, 10_000))
          const again = yield* ledger.parkTimed(owner(first), {
            wait: sleep(1, 30_000, 10_000),
            dueAt: 30_000,
            now: 10_000,
          })
          expect([again.state, again.dueAt, again.producerEpoch, again.wait]).toEqual([
            "waiting",
            30_000,
            2,
            sleep(1, 30_000, 10_000),
          ])
          expect(yield* ledger.nextDue(29_999, { limit: 10 })).toEqual([])
          const second = yield* claimDue(again, grant(3, 30_001))
          // A yield leaves it due, still parked: the due path serves it next.
          yield* ledger.release(second)
          const released = yield* rowOf(parked.submissionId)
          expect([released.state, released.dueAt, released.ownership]).toEqual(["waiting", 30_000, undefined])
          expect(yield* ledger.laneHeads).toEqual([])
          expect(yield* ledger.nextDue(30_001, { limit: 10 })).toEqual([released])
          // A stable wait from an in-place Claim leaves the due order.
          const third = yield* claimDue(released, grant(4, 30_002))
          const approval: WaitRecord = { _tag: "Approval", step: 2, dueAt: 90_000, since: 30_002 }
          expect(yield* ledger.park(third, "suspended", undefined, approval)).toBe("suspended")
          const suspended = yield* rowOf(parked.submissionId)
          expect([suspended.state, suspended.dueAt, suspended.wait]).toEqual([
            "suspended",
            undefined,
            approval,
          ])
          expect(yield* ledger.earliestDue(10)).toEqual([])
        }),
      ),
    )

    it.effect("list due rows in due order across lanes, a page at a time", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const dues = { a: 7_000, b: 5_000, c: 7_000, d: 6_000, e: 50_000 }
          const parked = []
          for (const [lane, dueAt] of Object.entries(dues)) {
            yield* admitReady(request(lane, "1"))
            parked.push(yield* parkUntil(lane, parked.length + 1, 2_000, dueAt))
          }
          const order = [...parked]
            .filter((row) => (row.dueAt ?? 0) <= 7_000)
            .sort((x, y) =>
              x.dueAt !== y.dueAt
                ? (x.dueAt ?? 0) - (y.dueAt ?? 0)
                : x.submissionId < y.submissionId
                  ? -1
                  : 1,
            )
          expect(dueIds(yield* ledger.nextDue(7_000, { limit: 10 }))).toEqual(dueIds(order))
          const page = yield* ledger.nextDue(7_000, { limit: 2 })
          expect(dueIds(page)).toEqual(dueIds(order.slice(0, 2)))
          const last = page[1]
          if (last?.dueAt === undefined) throw new Error("a due row has a due time")
          const rest = yield* ledger.nextDue(7_000, {
            limit: 10,
            after: { dueAt: last.dueAt, submissionId: last.submissionId },
          })
          expect(dueIds(rest)).toEqual(dueIds(order.slice(2)))
          // What the alarm must cover includes what is not due yet.
          expect((yield* ledger.earliestDue(10)).map((row) => row.dueAt)).toEqual([
            5_000, 6_000, 7_000, 7_000, 50_000,
          ])
          expect(yield* ledger.earliestDue(1)).toHaveLength(1)
        }),
      ),
    )

    it.effect("take over an in-place Claim of a dead incarnation, behind the rows due before it", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("a", "1"))
          yield* admitReady(request("b", "1"))
          const dying = yield* parkUntil("a", 1, 2_000, 5_000)
          const other = yield* parkUntil("b", 2, 2_000, 8_000)
          const [replaced, current] = [yield* ledger.beginIncarnation, yield* ledger.beginIncarnation]
          const dead = yield* claimDue(dying, grant(3, 9_000, 60_000, replaced))
          // Its lease is live, but a later incarnation treats it as expired.
          expect(yield* ledger.claimDue(dying.submissionId, grant(4, 9_100, 1_000, replaced))).toEqual(
            Option.none(),
          )
          expect(dueIds(yield* ledger.nextDue(9_100, { limit: 10 }))).toEqual([
            dying.submissionId,
            other.submissionId,
          ])
          const taken = yield* claimDue(dying, grant(5, 9_100, 1_000, current))
          expect([taken.producerEpoch, taken.dueAt, taken.incarnation]).toEqual([3, 9_100, current])
          // The replaced incarnation, still running, cannot take it back while the lease is live.
          expect(yield* ledger.claimDue(dying.submissionId, grant(6, 9_200, 1_000, replaced))).toEqual(
            Option.none(),
          )
          expect(dueIds(yield* ledger.nextDue(9_100, { limit: 10 }))).toEqual([
            other.submissionId,
            dying.submissionId,
          ])
          const stale = yield* Effect.flip(
            ledger.parkTimed(owner(dead), { wait: sleep(1, 20_000), dueAt: 20_000, now: 9_200 }),
          )
          expect(stale._tag).toBe("FenceRejected")
          expect((yield* rowOf(dying.submissionId)).ownership?.attemptId).toBe("attempt-5")
        }),
      ),
    )

    it.effect(
      "park under a recovery fence only without a live lease, advancing the epoch of a running row",
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            yield* admitReady(request("t", "a"))
            const claim = yield* claimHead("t", grant(1, 2_000, 1_000))
            const running = yield* rowOf(claim.submissionId)
            const wait: WaitRecord = { _tag: "Reconcile", step: 2, dueAt: 9_000, since: 2_500 }
            const live = yield* Effect.flip(
              ledger.parkTimed(unowned(running, 2_500), { wait, dueAt: 9_000, now: 2_500 }),
            )
            expect(live._tag).toBe("FenceRejected")
            const parked = yield* ledger.parkTimed(unowned(running, 3_000), {
              wait,
              dueAt: 9_000,
              now: 3_000,
            })
            expect([parked.state, parked.producerEpoch, parked.dueAt, parked.ownership]).toEqual([
              "waiting",
              2,
              9_000,
              undefined,
            ])
            expect((yield* Effect.flip(ledger.renew(claim, 9_000)))._tag).toBe("FenceRejected")
            // Parked again (a later backoff), then an unknown row parked until its reconcile.
            const later = yield* ledger.parkTimed(unowned(parked, 3_100), { wait, dueAt: 12_000, now: 3_100 })
            expect([later.producerEpoch, later.dueAt]).toEqual([2, 12_000])
            yield* admitReady(request("u", "a"))
            const unknown = yield* claimHead("u", grant(2, 3_200))
            yield* ledger.park(unknown, "unknown")
            const marked = yield* rowOf(unknown.submissionId)
            const due = yield* ledger.parkTimed(unowned(marked, 3_300), { wait, dueAt: 4_000, now: 3_300 })
            expect([due.state, due.producerEpoch, due.dueAt]).toEqual(["waiting", 1, 4_000])
            // A queued row is not a wait.
            const queued = yield* admitReady(request("q", "a"))
            const refused = yield* Effect.flip(
              ledger.parkTimed(unowned(queued, 3_400), { wait, dueAt: 4_000, now: 3_400 }),
            )
            expect(refused._tag).toBe("InvalidTransition")
          }),
        ),
    )

    it.effect(
      "append a park's records with it, and leave a row due at once when its child settled first",
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            yield* admitReady(request("t", "a"))
            const claim = yield* claimHead("t", grant(1, 2_000))
            const failed = { _tag: "StepFailed", step: 0, name: "fetch", error: "timeout" } as const
            const parked = yield* ledger.parkTimed(owner(claim), {
              wait: { _tag: "Retry", step: 0, name: "fetch", attempt: 1, dueAt: 6_000, since: 2_100 },
              dueAt: 6_000,
              now: 2_100,
              entries: [failed],
            })
            expect(parked.dueAt).toBe(6_000)
            expect(yield* recordTags(claim.submissionId)).toEqual(["SubmissionAccepted", "StepFailed"])
            // The awaited child's settlement landed while the owner ran: the park leaves the row due now.
            yield* admitReady(request("p", "a"))
            const parent = yield* claimHead("p", grant(2, 3_000))
            const history = yield* ThreadHistory
            const nap: WaitRecord = { _tag: "Sleep", step: 2, name: "nap", dueAt: 60_000, since: 3_100 }
            const waiting = yield* ledger.parkTimed(owner(parent), {
              wait: nap,
              dueAt: 60_000,
              now: 3_100,
              awaiting: { child: 1 },
            })
            expect(waiting.dueAt).toBe(60_000)
            const next = yield* claimDue(waiting, grant(3, 60_000))
            yield* history.append(
              next.submissionId,
              { _tag: "ChildSettled", step: 1, outcome: "completed", output: 1 },
              {
                _tag: "Input",
                submissionId: next.submissionId,
                producerEpoch: next.producerEpoch,
                state: "running",
              },
              60_000,
            )
            const resumed = yield* ledger.parkTimed(owner(next), {
              wait: { ...nap, step: 3, dueAt: 90_000 },
              dueAt: 90_000,
              now: 60_100,
              awaiting: { child: 1 },
            })
            expect([resumed.state, resumed.dueAt]).toEqual(["waiting", 60_100])
          }),
        ),
    )
  })
}
