/**
 * Conformance cases: the operator pages (a lane filtered by state and agent, its counts, the
 * Threads a page at a time). Paging a filter to its end lists every matching row once, in the
 * filter's order, and no page examines more than a window of positions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId, ThreadId } from "../../src/core/Identifiers.ts"
import {
  type LaneFilter,
  PAGE_WINDOW,
  SubmissionLedger,
  type SubmissionSnapshot,
} from "../../src/core/SubmissionLedger.ts"
import {
  admitReady,
  grant,
  parkHead,
  request,
  settleHead,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

const lane = ThreadId.make("lane")

/** Every page of a filter, followed to its end: the rows, and each page's size. */
const pageThrough = (filter: LaneFilter, limit: number) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const rows: Array<SubmissionSnapshot> = []
    const sizes: Array<number> = []
    let cursor: number | undefined
    for (let page = 0; page < 100; page++) {
      const answer = yield* ledger.queryLane(lane, {
        filter,
        limit,
        ...(cursor === undefined ? {} : { cursor }),
      })
      rows.push(...answer.rows)
      sizes.push(answer.rows.length)
      if (answer.next === undefined) return { rows, sizes, walk: answer.walk }
      cursor = answer.next
    }
    return yield* Effect.die(new Error("the pages never ended"))
  })

const keys = (rows: ReadonlyArray<SubmissionSnapshot>) =>
  rows.map((row) => `${row.queueSequence}:${row.state}`)

/**
 * A lane of 8 rows: 1–3 settled, 4 parked waiting, 5–8 queued behind it; even positions by the
 * agent `other`.
 */
const mixedLane = Effect.gen(function* () {
  for (let i = 1; i <= 8; i++) {
    yield* admitReady(
      request("lane", `k${i}`, { agentId: AgentId.make(i % 2 === 0 ? "other" : "echo"), now: 1_000 + i }),
    )
  }
  for (let i = 1; i <= 3; i++) yield* settleHead("lane", 2_000 + i)
  yield* parkHead("lane", grant(4, 3_000))
})

/** Registers the cases of the operator pages. */
export const pageCases = (harness: LedgerHarness) => {
  describe("operator pages", () => {
    it.effect("are empty for an unknown lane", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          expect(yield* ledger.queryLane(lane, { filter: {}, limit: 10 })).toEqual({
            rows: [],
            walk: "admissions",
          })
          expect(yield* ledger.queryLane(lane, { filter: { states: ["ready"] }, limit: 10 })).toEqual({
            rows: [],
            walk: "unsettled",
          })
          expect(yield* ledger.laneCounts(lane)).toEqual({
            threadId: lane,
            admitted: 0,
            removed: 0,
            open: 0,
            parked: 0,
            capped: false,
          })
          expect(yield* ledger.threadPage({ limit: 10 })).toEqual([])
        }),
      ),
    )

    it.effect("list every admission newest first, filtered by state and agent, across pages", () =>
      harness.run(
        Effect.gen(function* () {
          yield* mixedLane
          const all = yield* pageThrough({}, 3)
          expect(all.walk).toBe("admissions")
          expect(keys(all.rows)).toEqual([
            "8:ready",
            "7:ready",
            "6:ready",
            "5:ready",
            "4:suspended",
            "3:settled",
            "2:settled",
            "1:settled",
          ])
          expect(all.sizes.slice(0, 2)).toEqual([3, 3])
          const settledByOther = yield* pageThrough(
            { states: ["settled"], agentId: AgentId.make("other") },
            10,
          )
          expect(keys(settledByOther.rows)).toEqual(["2:settled"])
          const settledOrWaiting = yield* pageThrough({ states: ["settled", "suspended"] }, 2)
          expect(keys(settledOrWaiting.rows)).toEqual(["4:suspended", "3:settled", "2:settled", "1:settled"])
        }),
      ),
    )

    it.effect("list unsettled states in queue order, the waiting head first, without settled rows", () =>
      harness.run(
        Effect.gen(function* () {
          yield* mixedLane
          const unsettled = yield* pageThrough({ states: ["ready", "suspended", "running"] }, 2)
          expect(unsettled.walk).toBe("unsettled")
          expect(keys(unsettled.rows)).toEqual(["4:suspended", "5:ready", "6:ready", "7:ready", "8:ready"])
          const waiting = yield* pageThrough({ states: ["suspended"] }, 10)
          expect(keys(waiting.rows)).toEqual(["4:suspended"])
          const queuedOther = yield* pageThrough({ states: ["ready"], agentId: AgentId.make("other") }, 10)
          expect(keys(queuedOther.rows)).toEqual(["6:ready", "8:ready"])
        }),
      ),
    )

    it.effect("count a lane's admissions, open and parked rows, and page the Threads", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* mixedLane
          yield* admitReady(request("a", "1"))
          yield* admitReady(request("z", "1"))
          expect(yield* ledger.laneCounts(lane)).toEqual({
            threadId: lane,
            admitted: 8,
            removed: 0,
            open: 4,
            parked: 1,
            capped: false,
          })
          expect(yield* ledger.threadPage({ limit: 2 })).toEqual(["a", "lane"])
          expect(yield* ledger.threadPage({ after: ThreadId.make("lane"), limit: 2 })).toEqual(["z"])
          expect(yield* ledger.threadPage({ after: ThreadId.make("z"), limit: 2 })).toEqual([])
        }),
      ),
    )

    it.effect("page the Threads in the order SQLite stores their ids, astral ids included", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (const thread of ["\u{1F600}", "\uFF5E", "b"]) yield* admitReady(request(thread, "1"))
          // Code point order: the astral Thread after U+FF5E (UTF-16 order would put it before).
          const order = ["b", "\uFF5E", "\u{1F600}"]
          expect(yield* ledger.threadIds).toEqual(order)
          expect(yield* ledger.threadPage({ limit: 10 })).toEqual(order)
          expect(yield* ledger.threadPage({ after: ThreadId.make("b"), limit: 1 })).toEqual(["\uFF5E"])
          expect(yield* ledger.threadPage({ after: ThreadId.make("\uFF5E"), limit: 1 })).toEqual([
            "\u{1F600}",
          ])
          expect(yield* ledger.threadPage({ after: ThreadId.make("\u{1F600}"), limit: 1 })).toEqual([])
        }),
      ),
    )

    it.effect(
      "examine one window of positions per page: a sparse filter answers short pages that go on",
      () =>
        harness.run(
          Effect.gen(function* () {
            // One admission by `rare` under a window's worth by `echo`: the newest window holds none.
            yield* admitReady(request("lane", "rare", { agentId: AgentId.make("rare") }))
            for (let i = 0; i < PAGE_WINDOW + 10; i++) yield* admitReady(request("lane", `k${i}`))
            const rare = yield* pageThrough({ agentId: AgentId.make("rare") }, 10)
            expect(rare.rows.map((row) => row.idempotencyKey)).toEqual(["rare"])
            expect(rare.sizes[0]).toBe(0)
            expect(rare.sizes.at(-1)).toBe(1)
            // In queue order the window starts at the first unsettled row: the rare one is first.
            const queued = yield* pageThrough({ states: ["ready"], agentId: AgentId.make("rare") }, 10)
            expect(queued.rows.map((row) => row.idempotencyKey)).toEqual(["rare"])
            expect(queued.sizes).toEqual([1, 0])
          }),
          { limits: { maxQueueDepthPerLane: 2 * PAGE_WINDOW, maxInputBytes: 1_024 } },
        ),
    )
  })
}
