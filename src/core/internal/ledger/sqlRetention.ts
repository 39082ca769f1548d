/**
 * Retention on the SQLite ledger: the earliest settled row by `prune_after` (one seek on the
 * retention index), a range of candidates with their lanes' tails, and the removal of settled
 * Submissions with their history rows, their event ids and idempotency keys. A settlement dates
 * its row only while retention is on; `openRetention` dates the rows settled while it was off,
 * once it is on again.
 *
 * A removal that takes a Thread's newest history row first records where the Thread continues
 * (its tails row), and one that takes the Object's newest row where the feed continues (the
 * floor), so no later append reuses a sequence, a queue sequence or a feed position. Every
 * removal adds the Submissions it takes to its Thread's removed count (the same tails row, one
 * row written per Thread per batch), which the Thread's settled count leaves out.
 */
import type { StorageClock } from "../directRows.ts"
import { forgetEnds } from "../history/ends.ts"
import { spanned } from "../spanned.ts"
import { Effect, Option } from "effect"
import type { IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import { eventIdStatements } from "../history/eventIds.ts"
import { rowStatements } from "../history/sqlRows.ts"
import {
  HISTORY_FLOOR_TABLE,
  HISTORY_TABLE,
  LEGACY_KEYS_TABLE,
  META_KEYS,
  META_TABLE,
  RETENTION_CANDIDATE,
  SUBMISSIONS_TABLE,
  THREAD_TAILS_TABLE,
} from "../schema.ts"
import type { LedgerError } from "./model.ts"
import type { RetentionOps } from "./parts.ts"
import { namesSettled } from "./retention.ts"
import { type LedgerTransaction, numberOr, type SqlQueries } from "./sqlQueries.ts"
import { rowLimit } from "../sqlLimit.ts"
import { decodeRow, laneKey, type Row, statements } from "./sqlStatements.ts"

const t = SUBMISSIONS_TABLE
const h = HISTORY_TABLE

/** @internal */
export const retentionStatements = {
  start: `SELECT prune_after FROM ${t} WHERE ${RETENTION_CANDIDATE} ORDER BY prune_after LIMIT 1`,
  // At most `rows` of them. Parameters: counted before.
  candidates: (rows: number) =>
    `SELECT * FROM ${t} WHERE ${RETENTION_CANDIDATE} AND prune_after <= ? ORDER BY prune_after LIMIT ${rowLimit(rows)}`,
  // Parameters: from, submission id.
  defer: `UPDATE ${t} SET prune_after = ? WHERE submission_id = ? AND lane_status = 'closed'`,
  // Parameters: thread id.
  threadNewest: `SELECT submission_id, sequence + records AS next_sequence, lane_tail FROM ${h}
    WHERE thread_id = ? ORDER BY sequence DESC LIMIT 1`,
  objectNewest: `SELECT submission_id, position + records AS next_position, admitted, settled FROM ${h}
    WHERE position = (SELECT max(position) FROM ${h})`,
  // The Thread's ends the removal takes with its newest row (NULL when it keeps that row; the
  // figures only grow), and the Submissions it removes added to the Thread's count: one row.
  // Parameters: thread id, next sequence, lane tail, removed.
  keepTail: `INSERT INTO ${THREAD_TAILS_TABLE} (thread_id, next_sequence, lane_tail, removed)
    VALUES (?1, coalesce(?2, 1), coalesce(?3, 0), ?4)
    ON CONFLICT (thread_id) DO UPDATE SET next_sequence = max(next_sequence, excluded.next_sequence),
      lane_tail = max(lane_tail, excluded.lane_tail), removed = removed + excluded.removed`,
  // Parameters: next position, admitted, settled.
  keepFloor: `INSERT OR REPLACE INTO ${HISTORY_FLOOR_TABLE} (id, next_position, admitted, settled) VALUES (1, ?, ?, ?)`,
  // The rows of some Submissions of one Thread, within the range their records span.
  // Parameters: thread id, from, to, then the submission ids.
  deleteRecords: (count: number) =>
    `DELETE FROM ${h} WHERE thread_id = ? AND sequence >= ? AND sequence <= ?
      AND submission_id IN (${Array.from({ length: count }, () => "?").join(", ")})`,
  deleteRow: `DELETE FROM ${t} WHERE submission_id = ?`,
  // Parameters: lane key, idempotency key, submission id.
  deleteLegacyKey: `DELETE FROM ${LEGACY_KEYS_TABLE} WHERE lane_key = ? AND idempotency_key = ? AND submission_id = ?`,
  // Reads every settled row, once: when retention is first on, or on again after running without.
  dateUndated: `UPDATE ${t} SET prune_after = json_extract(settlement, '$.settledAt')
    WHERE lane_status = 'closed' AND prune_after IS NULL`,
  // Written once per Object: an ignored insert writes no row.
  markRemoved: `INSERT OR IGNORE INTO ${META_TABLE} (key, value) VALUES ('${META_KEYS.historyRemoved}', '1')`,
  markDated: `INSERT OR REPLACE INTO ${META_TABLE} (key, value) VALUES ('${META_KEYS.settledDated}', '1')`,
  clearDated: `DELETE FROM ${META_TABLE} WHERE key = '${META_KEYS.settledDated}'`,
} as const

/**
 * Brings the stored rows in step with retention when the ledger opens, before it can settle
 * anything. The mark (`META_KEYS.settledDated`) says every settled row is dated: an open with
 * retention on that does not find it dates the rows settled without it from their settlement
 * and sets it, in one transaction; an open with retention off that finds it removes it, since
 * its settlements will not date their rows. Writes nothing when the setting did not change, so
 * an Object that always keeps everything (the default) never pays for the mark.
 * @internal
 */
export const openRetention = (
  { query }: SqlQueries,
  options: {
    readonly enabled: boolean
    /** Whether the mark was found. */
    readonly dated: boolean
    readonly transaction: LedgerTransaction
  },
): Effect.Effect<void, LedgerError> => {
  const operation = "SubmissionLedger.open"
  if (options.enabled === options.dated) return Effect.void
  if (!options.enabled) return Effect.asVoid(query(operation, retentionStatements.clearDated, []))
  return options.transaction(
    operation,
    Effect.andThen(
      query(operation, retentionStatements.dateUndated, []),
      query(operation, retentionStatements.markDated, []),
    ).pipe(Effect.asVoid),
  )
}

/** Builds the retention part over an opened ledger. @internal */
export const makeSqlRetention = (
  { query }: SqlQueries,
  options: {
    readonly legacyKeys: boolean
    /** The storage's clock, whose remembered history ends a removal drops. */
    readonly clock: StorageClock | undefined
    readonly transaction: LedgerTransaction
    /** Removes the events still kept under a removed Submission's key. */
    readonly forgetEarly: (
      operation: string,
      threadId: ThreadId,
      idempotencyKey: IdempotencyKey,
    ) => Effect.Effect<void, LedgerError>
  },
): RetentionOps => {
  /**
   * Removes the Submissions of stored rows, one Thread at a time: their records in one range
   * delete over the span they cover (rows of other Submissions inside it are read, not
   * removed), after keeping the Thread's and the Object's ends they carried. The caller holds
   * the transaction.
   */
  const removeRows = (operation: string, rows: ReadonlyArray<Row>) =>
    Effect.gen(function* () {
      forgetEnds(options.clock)
      yield* query(operation, retentionStatements.markRemoved, [])
      const ids = new Set(rows.map((row) => String(row.submission_id)))
      const [objectNewest] = yield* query(operation, retentionStatements.objectNewest, [])
      if (objectNewest !== undefined && ids.has(String(objectNewest.submission_id))) {
        yield* query(operation, retentionStatements.keepFloor, [
          objectNewest.next_position,
          objectNewest.admitted,
          objectNewest.settled,
        ])
      }
      const byThread = new Map<string, Array<Row>>()
      for (const row of rows) {
        const threadId = String(row.thread_id)
        byThread.set(threadId, [...(byThread.get(threadId) ?? []), row])
      }
      for (const [threadId, group] of byThread) {
        const [threadNewest] = yield* query(operation, retentionStatements.threadNewest, [threadId])
        const takesNewest = threadNewest !== undefined && ids.has(String(threadNewest.submission_id))
        yield* query(operation, retentionStatements.keepTail, [
          threadId,
          takesNewest ? threadNewest.next_sequence : null,
          takesNewest ? threadNewest.lane_tail : null,
          group.length,
        ])
        const from = Math.min(...group.map((row) => numberOr(row.history_from, 1)))
        // A row settled by an older release does not know where its records end.
        const to = group.some((row) => row.history_to === null || row.history_to === undefined)
          ? Number.MAX_SAFE_INTEGER
          : Math.max(...group.map((row) => numberOr(row.history_to, 0)))
        yield* query(operation, retentionStatements.deleteRecords(group.length), [
          threadId,
          from,
          to,
          ...group.map((row) => row.submission_id),
        ])
        for (const row of group) {
          yield* query(operation, retentionStatements.deleteRow, [row.submission_id])
          yield* query(operation, eventIdStatements.forget, [row.submission_id])
          yield* options.forgetEarly(
            operation,
            threadId as ThreadId,
            String(row.idempotency_key) as IdempotencyKey,
          )
          if (options.legacyKeys) {
            yield* query(operation, retentionStatements.deleteLegacyKey, [
              laneKey(threadId),
              row.idempotency_key,
              row.submission_id,
            ])
          }
        }
      }
    })

  return {
    retentionStart: Effect.map(
      query("SubmissionLedger.retentionStart", retentionStatements.start, []),
      (rows) => (rows[0] === undefined ? Option.none() : Option.some(numberOr(rows[0].prune_after, 0))),
    ),

    retentionCandidates: spanned("SubmissionLedger.retentionCandidates")(function* (request) {
      const operation = "SubmissionLedger.retentionCandidates"
      const rows = yield* query(operation, retentionStatements.candidates(request.limit), [
        request.countedBefore,
      ])
      const tails = new Map<string, number>()
      for (const threadId of new Set(rows.map((row) => String(row.thread_id)))) {
        const [end] = yield* query(operation, rowStatements.threadEnd, [threadId, threadId])
        tails.set(threadId, numberOr(end?.lane_tail, 0))
      }
      return yield* Effect.forEach(rows, (row) =>
        Effect.map(decodeRow(operation)(row), (snapshot) => ({
          snapshot,
          laneTail: Math.max(snapshot.queueSequence, tails.get(snapshot.threadId) ?? 0),
        })),
      )
    }),

    deferRetention: spanned("SubmissionLedger.deferRetention")(function* (submissionIds, from) {
      const operation = "SubmissionLedger.deferRetention"
      if (submissionIds.length === 0) return
      yield* options.transaction(
        operation,
        Effect.forEach(submissionIds, (id) => query(operation, retentionStatements.defer, [from, id]), {
          discard: true,
        }),
      )
    }),

    removeSettled: spanned("SubmissionLedger.removeSettled")(function* (items) {
      const operation = "SubmissionLedger.removeSettled"
      if (items.length === 0) return []
      return yield* options.transaction(
        operation,
        Effect.gen(function* () {
          const rows: Array<Row> = []
          for (const item of items) {
            const [row] = yield* query(operation, statements.byId, [item.submissionId])
            if (row !== undefined && namesSettled(item, yield* decodeRow(operation)(row))) rows.push(row)
          }
          if (rows.length > 0) yield* removeRows(operation, rows)
          return rows.map((row) => String(row.submission_id) as SubmissionId)
        }),
      )
    }),
  }
}
