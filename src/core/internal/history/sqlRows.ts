/**
 * Rows of the canonical history on SQLite (see `schema.ts`): one row per append, holding the
 * records that append wrote for one Submission. The writer is shared by the history and by the
 * ledger, which records a Submission's acceptance and its settlement in the same transaction as
 * the row change they describe, and indexes the ids of the events the row records
 * (`eventIds.ts`). Callers hold a transaction and have checked the fence.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { SubmissionId, ThreadId } from "../../Identifiers.ts"
import { ThreadStoreError } from "../runtime/shared/model.ts"
import { HISTORY_FLOOR_TABLE, HISTORY_TABLE, SUBMISSIONS_TABLE, THREAD_TAILS_TABLE } from "../schema.ts"
import { decodeRecord, historyError } from "./codec.ts"
import type { HistoryEntry, HistoryRecord } from "./model.ts"
import { rowsRunner, storageClock } from "../directRows.ts"
import { rowLimit } from "../sqlLimit.ts"
import { forgetEnds, knownEnds, rememberEnds } from "./ends.ts"
import { indexEventIds } from "./eventIds.ts"

const h = HISTORY_TABLE

/**
 * The Object's newest row and the floor retention left when it removed the newest row, each at
 * most one row (unnamed: a plan shows them as the subqueries they are). Every figure they carry
 * only grows with the feed, so the later of the two is the larger of each.
 */
const objectEnds = `LEFT JOIN (SELECT position + records AS np, admitted AS na, settled AS ns FROM ${h}
    WHERE position = (SELECT max(position) FROM ${h}))
  LEFT JOIN (SELECT next_position AS fp, admitted AS fa, settled AS fs FROM ${HISTORY_FLOOR_TABLE} WHERE id = 1)`

/**
 * A Thread's newest row and the tail retention left when it removed that row. Parameters:
 * thread id ×2.
 */
const threadEnds = `LEFT JOIN (SELECT sequence + records AS tn, lane_tail AS tl FROM ${h} WHERE thread_id = ?
    ORDER BY sequence DESC LIMIT 1)
  LEFT JOIN (SELECT next_sequence AS un, lane_tail AS ul FROM ${THREAD_TAILS_TABLE} WHERE thread_id = ?)`

/**
 * One figure of a Thread's end as a scalar: the newest row's and the tail's, each one seek (a
 * join of the two would read a row more to carry them). Parameters: thread id ×2. @internal
 */
export const threadEndFigure = (figure: "next_sequence" | "lane_tail") =>
  figure === "next_sequence"
    ? `max(coalesce((SELECT sequence + records FROM ${h} WHERE thread_id = ? ORDER BY sequence DESC LIMIT 1), 1),
        coalesce((SELECT next_sequence FROM ${THREAD_TAILS_TABLE} WHERE thread_id = ?), 1))`
    : `max(coalesce((SELECT lane_tail FROM ${h} WHERE thread_id = ? ORDER BY sequence DESC LIMIT 1), 0),
        coalesce((SELECT lane_tail FROM ${THREAD_TAILS_TABLE} WHERE thread_id = ?), 0))`

/** The later of two ends of a figure that only grows. */
const later = (a: string, b: string, none: number) => `max(coalesce(${a}, ${none}), coalesce(${b}, ${none}))`

/** The Object's end: the next feed position and the counts so far. */
const objectEnd = `SELECT ${later("np", "fp", 1)} AS next_position, ${later("na", "fa", 0)} AS admitted,
    ${later("ns", "fs", 0)} AS settled
  FROM (SELECT 1) ${objectEnds}`

/** A Thread's end: the next sequence and the lane tail. Parameters: thread id ×2. */
const threadEnd = `SELECT ${later("tn", "un", 1)} AS next_sequence, ${later("tl", "ul", 0)} AS lane_tail
  FROM (SELECT 1) ${threadEnds}`

/**
 * Appends one row continuing the Object's end (feed position, counts) and the Thread's
 * (sequence, lane tail), read by the same statement: one call instead of reads and an insert.
 * Each end is a seek on the newest row and one on what retention left (usually no row), so the
 * statement reads a few rows more than a bare insert, a thousandth of the price of the time
 * saved. Parameters: thread id, records, submission id, recorded at, entries JSON, queue
 * sequence, admits, settles, thread id ×2.
 */
const append = `INSERT INTO ${h} (position, thread_id, sequence, records, submission_id, recorded_at, entries,
    lane_tail, admitted, settled)
  SELECT ${later("np", "fp", 1)}, ?, ${later("tn", "un", 1)}, ?, ?, ?, ?,
    max(${later("tl", "ul", 0)}, ?), ${later("na", "fa", 0)} + ?, ${later("ns", "fs", 0)} + ?
  FROM (SELECT 1) ${objectEnds} ${threadEnds}
  RETURNING position, sequence, lane_tail, admitted, settled`

/** Appends one row at ends the caller knows: no row read. */
const insertKnown = `INSERT INTO ${h} (position, thread_id, sequence, records, submission_id, recorded_at,
    entries, lane_tail, admitted, settled) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

/** @internal */
export const rowStatements = {
  append,
  /** Admissions and settlements counted so far. */
  counts: `SELECT admitted, settled FROM (${objectEnd})`,
  /**
   * A Submission's rows after a sequence (0 for all), from its first record in its Thread to its
   * last once it settled: a seek on the ledger row, then the Thread's rows in that range (other
   * Submissions' rows in between are read and dropped). The ledger row's figures and the
   * Thread's last sequence (one seek) come first, with NULL row columns when no row is in the
   * range; no result at all means no ledger row. Parameters: after, submission id.
   */
  forSubmission: `SELECT l.history_from AS journal_from, l.history_to IS NOT NULL AS journal_closed,
      (SELECT max(sequence) FROM ${h} WHERE thread_id = l.thread_id) AS thread_last, h.*
    FROM ${SUBMISSIONS_TABLE} AS l
    LEFT JOIN ${h} AS h ON h.thread_id = l.thread_id AND h.sequence >= max(l.history_from, ? + 1)
      AND h.sequence <= coalesce(l.history_to, 9007199254740991) AND h.submission_id = l.submission_id
    WHERE l.submission_id = ? ORDER BY h.sequence`,
  /**
   * A Submission's rows holding its records after a sequence, from the last of its rows that
   * starts at or before it (which holds its newest record when nothing follows): a seek on the
   * ledger row, one backwards from that sequence to the Submission's row, then the Thread's rows
   * from there to its last once it settled (other Submissions' rows in between are read and
   * dropped). NULL row columns when there is none; no result at all means no ledger row.
   * Parameters: after, submission id.
   */
  forSubmissionAfter: `SELECT h.* FROM ${SUBMISSIONS_TABLE} AS l
    LEFT JOIN ${h} AS h ON h.thread_id = l.thread_id
      AND h.sequence >= coalesce((SELECT max(p.sequence) FROM ${h} AS p WHERE p.thread_id = l.thread_id
          AND p.sequence >= l.history_from AND p.sequence <= min(?, coalesce(l.history_to, 9007199254740991))
          AND p.submission_id = l.submission_id), l.history_from)
      AND h.sequence <= coalesce(l.history_to, 9007199254740991) AND h.submission_id = l.submission_id
    WHERE l.submission_id = ? ORDER BY h.sequence`,
  /**
   * At most `rows` rows of a Thread holding a sequence from `after + 1` on: from the one holding
   * it, or the next one when retention removed it (the row before then ends earlier and is passed
   * over, so each row counted holds a record the page returns). Parameters: thread ×2, after + 1 ×2.
   */
  page: (rows: number) => `SELECT * FROM ${h} WHERE thread_id = ? AND sequence >=
      coalesce((SELECT max(sequence) FROM ${h} WHERE thread_id = ? AND sequence <= ?), 1)
      AND sequence + records > ?
    ORDER BY sequence LIMIT ${rowLimit(rows)}`,
  /** At most `rows` rows holding a position from `after + 1` on (as `page`). Parameters: after + 1 ×2. */
  feed: (rows: number) => `SELECT * FROM ${h}
    WHERE position >= coalesce((SELECT max(position) FROM ${h} WHERE position <= ?), 1)
      AND position + records > ?
    ORDER BY position LIMIT ${rowLimit(rows)}`,
  feedEnd: `SELECT next_position - 1 AS position FROM (${objectEnd})`,
  /** A Thread's end. Parameters: thread id ×2. */
  threadEnd,
  objectEnd,
} as const

/** A stored history row as the driver returns it. @internal */
export interface StoredRow {
  readonly position: unknown
  readonly thread_id: unknown
  readonly sequence: unknown
  readonly records: unknown
  readonly submission_id: unknown
  readonly recorded_at: unknown
  readonly entries: unknown
}

/**
 * The records of a stored row with their feed positions; a row that does not decode is an error.
 * With `kinds`, only records of those kinds: the others are passed over without being decoded.
 * @internal
 */
export const decodeRow = (operation: string, row: StoredRow, kinds?: ReadonlySet<string>) =>
  Effect.gen(function* () {
    const label = `history row ${String(row.thread_id)}#${String(row.sequence)}`
    const entries = yield* Effect.try({
      try: () => JSON.parse(String(row.entries)) as unknown,
      catch: historyError(operation, `${label} is not JSON`),
    })
    const count = Number(row.records)
    if (!Array.isArray(entries) || entries.length !== count || count < 1) {
      return yield* new ThreadStoreError({
        operation,
        message: `${label} does not hold its ${count} records`,
      })
    }
    const first = Number(row.sequence)
    const position = Number(row.position)
    // An entry is decoded unless it names a kind not asked for (one without a kind is decoded, to fail).
    const asked = (entry: unknown) => {
      if (kinds === undefined) return true
      const kind = kindOf(entry)
      return kind === undefined || kinds.has(kind)
    }
    const wanted = entries.flatMap((entry: unknown, index) => (asked(entry) ? [index] : []))
    return yield* Effect.forEach(wanted, (index) =>
      Effect.map(
        decodeRecord(operation, {
          thread_id: row.thread_id,
          sequence: first + index,
          submission_id: row.submission_id,
          recorded_at: row.recorded_at,
          entry: entries[index],
        }),
        (record) => ({ position: position + index, record }),
      ),
    )
  })

/** The tag of a stored entry, when it has one (an entry without is decoded, to report it). */
const kindOf = (entry: unknown): string | undefined =>
  typeof entry === "object" && entry !== null && typeof (entry as { _tag?: unknown })._tag === "string"
    ? (entry as { _tag: string })._tag
    : undefined

/** What one append writes. @internal */
export interface RowAppend {
  readonly threadId: ThreadId
  readonly submissionId: SubmissionId
  /** The Submission's queue sequence, carried into the Thread's lane tail. */
  readonly queueSequence: number
  /** Encoded entries (`encodeEntry`), oldest first; at least one. */
  readonly entries: ReadonlyArray<{ readonly json: string; readonly stored: HistoryEntry }>
  readonly now: number
  /** 1 when the row records a new admission. */
  readonly admits: 0 | 1
}

type Query = (
  text: string,
  params: ReadonlyArray<unknown>,
) => Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError>

/** The row an append writes, with both ends it continues. */
interface PlannedRow {
  readonly position: number
  readonly sequence: number
  readonly laneTail: number
  readonly admitted: number
  readonly settled: number
}

/**
 * Writes the row at ends the memory holds: a plain insert, no row read. Fails on the key when a
 * writer the memory did not see took the position or the sequence.
 */
const insertAt = (query: Query, append: RowAppend, entriesJson: string, row: PlannedRow) =>
  query(insertKnown, [
    row.position,
    append.threadId,
    row.sequence,
    append.entries.length,
    append.submissionId,
    append.now,
    entriesJson,
    row.laneTail,
    row.admitted,
    row.settled,
  ])

/** Writes the row after reading both ends; returns what the ends became. */
const insertReading = (query: Query, append: RowAppend, entriesJson: string, settles: number) =>
  Effect.map(
    query(rowStatements.append, [
      append.threadId,
      append.entries.length,
      append.submissionId,
      append.now,
      entriesJson,
      append.queueSequence,
      append.admits,
      settles,
      append.threadId,
      append.threadId,
    ]),
    (rows): PlannedRow | undefined => {
      const [row] = rows
      const planned = {
        position: Number(row?.position),
        sequence: Number(row?.sequence),
        laneTail: Number(row?.lane_tail),
        admitted: Number(row?.admitted),
        settled: Number(row?.settled),
      }
      return Object.values(planned).every(Number.isSafeInteger) ? planned : undefined
    },
  )

/**
 * Whether a statement failed on a unique key. workerd's errors name the constraint in their
 * message (`UNIQUE constraint failed: …: SQLITE_CONSTRAINT`) rather than in a code, so Effect
 * may classify them as unknown.
 */
const isKeyCollision = (error: SqlError): boolean =>
  error.reason._tag === "ConstraintError" ||
  /UNIQUE constraint failed|SQLITE_CONSTRAINT/.test(`${String(error.reason.cause)} ${error.message}`)

/** Writes one row; returns its records. Run inside the caller's transaction. @internal */
export const writeRow = (sql: SqlClient, operation: string, append: RowAppend) =>
  Effect.gen(function* () {
    const query: Query = rowsRunner(sql)
    const clock = storageClock(sql)
    const records = append.entries.length
    const settles = append.entries.filter((entry) => entry.stored._tag === "SubmissionSettled").length
    const entriesJson = `[${append.entries.map((entry) => entry.json).join(",")}]`
    const known = clock === undefined ? undefined : knownEnds(clock, append.threadId)
    const planned =
      known === undefined
        ? undefined
        : {
            position: known.object.nextPosition,
            sequence: known.thread.nextSequence,
            laneTail: Math.max(known.thread.laneTail, append.queueSequence),
            admitted: known.object.admitted + append.admits,
            settled: known.object.settled + settles,
          }
    const fast =
      planned === undefined
        ? false
        : yield* insertAt(query, append, entriesJson, planned).pipe(
            Effect.as(true),
            // Someone the memory did not see wrote here: forget it and read the ends. Any other
            // failure is the append's (a retry could write its records twice).
            Effect.catch((error) =>
              isKeyCollision(error)
                ? Effect.sync(() => forgetEnds(clock)).pipe(Effect.as(false))
                : Effect.fail(error),
            ),
            Effect.mapError(historyError(operation, "storage failed")),
          )
    const written = fast
      ? planned
      : yield* insertReading(query, append, entriesJson, settles).pipe(
          Effect.mapError(historyError(operation, "storage failed")),
        )
    if (written === undefined) {
      return yield* new ThreadStoreError({ operation, message: "the history insert returned no row" })
    }
    yield* indexEventIds(
      query,
      append.submissionId,
      append.entries.map((entry) => entry.stored),
    ).pipe(Effect.mapError(historyError(operation, "storage failed")))
    if (clock !== undefined) {
      rememberEnds(
        clock,
        append.threadId,
        { nextPosition: written.position + records, admitted: written.admitted, settled: written.settled },
        { nextSequence: written.sequence + records, laneTail: written.laneTail },
      )
    }
    const first = written.sequence
    const out: Array<HistoryRecord> = []
    for (const [index, entry] of append.entries.entries()) {
      out.push(
        yield* decodeRecord(operation, {
          thread_id: append.threadId,
          sequence: first + index,
          submission_id: append.submissionId,
          recorded_at: append.now,
          entry: JSON.parse(entry.json) as unknown,
        }),
      )
    }
    return out
  })
