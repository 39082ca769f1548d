/**
 * The operator pages of the in-memory ledger (see `pages.ts`), with the SQLite ledger's
 * positions and windows: queue positions for the unsettled walk, the acceptance record's
 * Thread sequence for the admissions walk.
 */
import { Effect } from "effect"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { ThreadId } from "../../Identifiers.ts"
import { spanned } from "../spanned.ts"
import { type MemoryStore, storedTextOrder } from "./memoryStore.ts"
import type { SubmissionSnapshot } from "./model.ts"
import { COUNT_CAP, type LaneFilter, laneWalk, PAGE_WINDOW } from "./pages.ts"
import * as Rules from "./rules.ts"

type Pages = Pick<typeof SubmissionLedger.Service, "queryLane" | "laneCounts" | "threadPage">

const matches = (filter: LaneFilter) => (row: SubmissionSnapshot) =>
  (filter.states === undefined || filter.states.includes(row.state)) &&
  (filter.agentId === undefined || row.agentId === filter.agentId)

/** Builds the pages over a store. @internal */
export const makeMemoryPages = (store: MemoryStore): Pages => {
  const unsettled = (threadId: ThreadId) =>
    (store.lanes.get(threadId)?.nonterminal ?? [])
      .flatMap((id) => store.rows.get(id) ?? [])
      .sort((a, b) => a.queueSequence - b.queueSequence)

  /** A lane's rows with the Thread sequence of their acceptance record, newest first. */
  const admissions = (threadId: ThreadId) =>
    [...store.rows.values()]
      .filter((row) => row.threadId === threadId)
      .flatMap((row) => {
        const accepted = store.historyBySubmission
          .get(row.submissionId)
          ?.find((record) => record.entry._tag === "SubmissionAccepted")
        return accepted === undefined ? [] : [{ row, position: accepted.sequence }]
      })
      .sort((a, b) => b.position - a.position)

  return {
    queryLane: spanned("SubmissionLedger.queryLane")(function* (threadId, { filter, cursor, limit }) {
      return yield* Effect.sync(() => {
        if (laneWalk(filter) === "unsettled") {
          const lane = unsettled(threadId)
          const start = lane.find((row) => row.queueSequence > (cursor ?? 0))?.queueSequence
          if (start === undefined) return { rows: [], walk: "unsettled" as const }
          const last = start + PAGE_WINDOW - 1
          const rows = lane
            .filter((row) => row.queueSequence >= start && row.queueSequence <= last)
            .filter(matches(filter))
            .slice(0, limit)
          const next =
            rows.length === limit
              ? rows.at(-1)?.queueSequence
              : lane.some((row) => row.queueSequence > last)
                ? last
                : undefined
          return { rows, walk: "unsettled" as const, ...(next === undefined ? {} : { next }) }
        }
        const before = cursor ?? (store.history.get(threadId)?.length ?? 0) + 1
        const first = Math.max(1, before - PAGE_WINDOW)
        const page = admissions(threadId)
          .filter(({ position }) => position >= first && position < before)
          .filter(({ row }) => matches(filter)(row))
          .slice(0, limit)
        const last = page.at(-1)?.position ?? 1
        const next = page.length === limit ? (last > 1 ? last : undefined) : first > 1 ? first : undefined
        return {
          rows: page.map(({ row }) => row),
          walk: "admissions" as const,
          ...(next === undefined ? {} : { next }),
        }
      })
    }),

    laneCounts: spanned("SubmissionLedger.laneCounts")(function* (threadId) {
      return yield* Effect.sync(() => {
        const rows = unsettled(threadId)
        const parked = Math.min(COUNT_CAP, rows.filter(Rules.isParked).length)
        const open = Math.min(COUNT_CAP, rows.length - rows.filter(Rules.isParked).length)
        return {
          threadId,
          admitted: store.lanes.get(threadId)?.lastSequence ?? 0,
          removed: store.lanes.get(threadId)?.removed ?? 0,
          open,
          parked,
          capped: open >= COUNT_CAP || parked >= COUNT_CAP,
        }
      })
    }),

    threadPage: spanned("SubmissionLedger.threadPage")(function* ({ after, limit }) {
      // Threads that still hold a Submission, as `threadIds`: retention may have removed a lane's all.
      return yield* Effect.sync(() =>
        [...new Set([...store.rows.values()].map((row) => row.threadId))]
          .filter((threadId) => after === undefined || storedTextOrder(threadId, after) > 0)
          .sort(storedTextOrder)
          .slice(0, limit),
      )
    }),
  }
}
