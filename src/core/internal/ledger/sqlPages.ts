/**
 * The operator pages of the SQLite ledger (see `pages.ts`), from seeks the ledger already pays
 * for: the lane indexes of unsettled rows and the history's Thread index. They add no index,
 * so no admission or transition writes a row more for them. Each statement bounds the
 * positions it reads to one window; statements are plain strings so tests can ask their plans.
 */
import { Effect } from "effect"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { ThreadId } from "../../Identifiers.ts"
import { spanned } from "../spanned.ts"
import { HISTORY_TABLE, SUBMISSIONS_TABLE, THREAD_TAILS_TABLE } from "../schema.ts"
import { rowLimit } from "../sqlLimit.ts"
import { threadEndFigure } from "../history/sqlRows.ts"
import { COUNT_CAP, laneWalk, PAGE_WINDOW } from "./pages.ts"
import { numberOr, type SqlQueries } from "./sqlQueries.ts"
import { decodeRow, laneKey, statements } from "./sqlStatements.ts"

const t = SUBMISSIONS_TABLE
const h = HISTORY_TABLE

/** One lane index's rows in a window of queue positions. Parameters: lane key, first, last. */
const unsettledIn = (status: "open" | "parked") =>
  `SELECT * FROM ${t} WHERE lane_key = ? AND lane_status = '${status}' AND queue_sequence BETWEEN ? AND ?`

/** @internal */
export const pageStatements = {
  // The first unsettled queue position after a position. Parameters: (lane key, after) ×2.
  unsettledStart: `SELECT min(q) AS start FROM (
      SELECT min(queue_sequence) AS q FROM ${t} WHERE lane_key = ? AND lane_status = 'open' AND queue_sequence > ?
      UNION ALL SELECT min(queue_sequence) FROM ${t} WHERE lane_key = ? AND lane_status = 'parked' AND queue_sequence > ?)`,
  // At most `rows` unsettled rows of a window in queue order. Parameters: (lane key, first,
  // last) ×2, states (JSON array), agent ×2.
  unsettledPage: (rows: number) => `SELECT * FROM (${unsettledIn("open")} UNION ALL ${unsettledIn("parked")})
    WHERE state IN (SELECT value FROM json_each(?) AS e) AND (? IS NULL OR agent_id = ?)
    ORDER BY queue_sequence LIMIT ${rowLimit(rows)}`,
  // The Thread's newest history position. Parameters: thread id.
  newestRecord: `SELECT max(sequence) AS newest FROM ${h} WHERE thread_id = ?`,
  // At most `rows` admissions of a window of history positions, newest first, each with its
  // ledger row. Parameters: thread id, first, before, agent ×2, states (JSON array or NULL) ×2.
  admissionsPage: (rows: number) => `SELECT s.*, a.sequence AS accepted_sequence FROM ${h} AS a
    JOIN ${t} AS s ON s.submission_id = a.submission_id
    WHERE a.thread_id = ? AND a.sequence >= ? AND a.sequence < ?
      AND json_extract(a.entries, '$[0]._tag') = 'SubmissionAccepted'
      AND (? IS NULL OR json_extract(a.entries, '$[0].agentId') = ?)
      AND (? IS NULL OR s.state IN (SELECT value FROM json_each(?) AS e))
    ORDER BY a.sequence DESC LIMIT ${rowLimit(rows)}`,
  // A lane's admissions (its tail queue position, kept in its tails row once retention removed
  // the row that carried it), its removed Submissions and unsettled rows, counted up to the cap.
  // Parameters: thread id ×3, lane key ×2.
  laneCounts: `SELECT
      ${threadEndFigure("lane_tail")} AS admitted,
      (SELECT removed FROM ${THREAD_TAILS_TABLE} WHERE thread_id = ?) AS removed,
      (SELECT count(*) FROM (SELECT 1 FROM ${t} WHERE lane_key = ? AND lane_status = 'open' LIMIT ${COUNT_CAP})) AS open,
      (SELECT count(*) FROM (SELECT 1 FROM ${t} WHERE lane_key = ? AND lane_status = 'parked' LIMIT ${COUNT_CAP})) AS parked`,
} as const

type Pages = Pick<typeof SubmissionLedger.Service, "queryLane" | "laneCounts" | "threadPage">

/** Builds the pages over the ledger's query helpers. @internal */
export const makeSqlPages = ({ query }: SqlQueries): Pages => {
  const unsettledStart = (operation: string, lane: string, after: number) =>
    Effect.map(query(operation, pageStatements.unsettledStart, [lane, after, lane, after]), (rows) =>
      rows[0]?.start === null || rows[0]?.start === undefined ? undefined : Number(rows[0].start),
    )

  return {
    queryLane: spanned("SubmissionLedger.queryLane")(function* (threadId, { filter, cursor, limit }) {
      const operation = "SubmissionLedger.queryLane"
      const agent = filter.agentId ?? null
      if (laneWalk(filter) === "unsettled") {
        const lane = laneKey(threadId)
        const start = yield* unsettledStart(operation, lane, cursor ?? 0)
        if (start === undefined) return { rows: [], walk: "unsettled" as const }
        const last = start + PAGE_WINDOW - 1
        const found = yield* query(operation, pageStatements.unsettledPage(limit), [
          lane,
          start,
          last,
          lane,
          start,
          last,
          JSON.stringify(filter.states ?? []),
          agent,
          agent,
        ])
        const rows = yield* Effect.forEach(found, decodeRow(operation))
        const next =
          rows.length === limit
            ? rows.at(-1)?.queueSequence
            : (yield* unsettledStart(operation, lane, last)) === undefined
              ? undefined
              : last
        return { rows, walk: "unsettled" as const, ...(next === undefined ? {} : { next }) }
      }
      const before =
        cursor ??
        numberOr((yield* query(operation, pageStatements.newestRecord, [threadId]))[0]?.newest, 0) + 1
      const first = Math.max(1, before - PAGE_WINDOW)
      const states = filter.states === undefined ? null : JSON.stringify(filter.states)
      const found = yield* query(operation, pageStatements.admissionsPage(limit), [
        threadId,
        first,
        before,
        agent,
        agent,
        states,
        states,
      ])
      const rows = yield* Effect.forEach(found, decodeRow(operation))
      // The Thread's first record is an admission: nothing comes before it.
      const last = Number(found.at(-1)?.accepted_sequence)
      const next = found.length === limit ? (last > 1 ? last : undefined) : first > 1 ? first : undefined
      return { rows, walk: "admissions" as const, ...(next === undefined ? {} : { next }) }
    }),

    laneCounts: spanned("SubmissionLedger.laneCounts")(function* (threadId) {
      const lane = laneKey(threadId)
      const [row] = yield* query("SubmissionLedger.laneCounts", pageStatements.laneCounts, [
        threadId,
        threadId,
        threadId,
        lane,
        lane,
      ])
      const open = numberOr(row?.open, 0)
      const parked = numberOr(row?.parked, 0)
      return {
        threadId,
        admitted: numberOr(row?.admitted, 0),
        removed: numberOr(row?.removed, 0),
        open,
        parked,
        capped: open >= COUNT_CAP || parked >= COUNT_CAP,
      }
    }),

    threadPage: spanned("SubmissionLedger.threadPage")(function* ({ after, limit }) {
      const threads: Array<ThreadId> = []
      let from: string = after ?? ""
      while (threads.length < limit) {
        const [row] = yield* query("SubmissionLedger.threadPage", statements.nextThread, [from])
        if (row === undefined) break
        from = String(row.thread_id)
        threads.push(from as ThreadId)
      }
      return threads
    }),
  }
}
