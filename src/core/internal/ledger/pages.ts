/**
 * Operator pages over the ledger: one lane's Submissions filtered by state and agent, a lane's
 * counts, and the Object's Threads a page at a time. Every page examines a bounded window of
 * positions (`PAGE_WINDOW`), whatever the filter: a sparse filter answers a short page and a
 * cursor to go on from, never a read of every row of a large lane.
 *
 * Two walks serve a lane. A filter of unsettled states only walks the unsettled rows (the
 * ledger's lane indexes) in queue order, so the head and the waits are found at once even
 * behind thousands of settled rows. Any other filter walks the lane's admissions newest first
 * (the acceptance records of its history): settled rows have no index of their own.
 */
import type { AgentId, ThreadId } from "../../Identifiers.ts"
import type { SubmissionSnapshot, SubmissionState } from "./model.ts"

/** The most positions one page examines. @internal */
export const PAGE_WINDOW = 1_000

/** Counts of a lane's unsettled rows stop here. @internal */
export const COUNT_CAP = 1_000

/** Which Submissions of a lane a page lists: any of `states` (all when absent), of `agentId`. */
export interface LaneFilter {
  readonly states?: ReadonlyArray<SubmissionState>
  readonly agentId?: AgentId
}

/**
 * How a filter walks its lane: `unsettled` in queue order over the unsettled rows, `admissions`
 * newest first over every admission.
 */
export type LaneWalk = "unsettled" | "admissions"

/** The walk a filter takes: only a filter naming unsettled states alone can skip settled rows. @internal */
export const laneWalk = (filter: LaneFilter): LaneWalk =>
  filter.states !== undefined && filter.states.length > 0 && !filter.states.includes("settled")
    ? "unsettled"
    : "admissions"

/** A page request: the filter, where the previous page of the same filter stopped, and a size. */
export interface LaneQuery {
  readonly filter: LaneFilter
  /** The `next` of the previous page of the same filter; the first page without it. */
  readonly cursor?: number
  readonly limit: number
}

/** A page of one lane's Submissions. */
export interface LaneQueryPage {
  readonly rows: ReadonlyArray<SubmissionSnapshot>
  /** Pass as `cursor` for the next page; absent when the lane has nothing further. */
  readonly next?: number
  /** The page's order: `unsettled` pages are in queue order, `admissions` pages newest first. */
  readonly walk: LaneWalk
}

/** What a lane holds, from its counters and its unsettled rows. */
export interface LaneCounts {
  readonly threadId: ThreadId
  /** Every Submission the lane admitted. */
  readonly admitted: number
  /** Submissions of the lane removed since: forgotten, or by retention. */
  readonly removed: number
  /** Unsettled rows that queue or run (counted up to `COUNT_CAP`). */
  readonly open: number
  /** Unsettled rows parked in a wait (counted up to `COUNT_CAP`). */
  readonly parked: number
  /** Whether a count stopped at `COUNT_CAP`: the lane holds at least that many. */
  readonly capped: boolean
}

/** The next cursor of a walk in queue order: after the last row of a full page, else after the window. @internal */
export const nextInQueueOrder = (
  rows: ReadonlyArray<SubmissionSnapshot>,
  limit: number,
  windowEnd: number,
): number => (rows.length === limit ? (rows.at(-1)?.queueSequence ?? windowEnd) : windowEnd)
