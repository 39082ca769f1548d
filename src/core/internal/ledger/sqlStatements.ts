/**
 * The statements of the Submission Ledger on SQLite (schema in `schema.ts`) and the decoding of
 * its rows.
 *
 * Lane queries go through `lane_key`, the Thread id as 4-hex-digit UTF-16 code units: SQLite's
 * BINARY collation compares UTF-8 bytes, which orders astral characters after U+E000–U+FFFF
 * while JavaScript orders them before; comparing the hex form reproduces JavaScript order,
 * so lane order agrees with the in-memory ledger.
 *
 * A statement sets `lane_status` only when a row parks, resumes or settles: setting a column an
 * index depends on rewrites the index entry, a billed row. Statements are plain strings with
 * `?` parameters so tests can ask for their plans.
 */
import { Effect, Schema } from "effect"
import { LedgerError, SubmissionSnapshot } from "./model.ts"
import {
  HISTORY_TABLE,
  LEGACY_KEYS_TABLE,
  META_TABLE,
  RECOVERY_CANDIDATE,
  SUBMISSIONS_TABLE,
} from "../schema.ts"
import { threadEndFigure } from "../history/sqlRows.ts"
import { rowLimit } from "../sqlLimit.ts"

const t = SUBMISSIONS_TABLE
const h = HISTORY_TABLE

/** Rows per page of the ledger's keyset scans. @internal */
export const SCAN_PAGE_SIZE = 128

/** The Thread id as an order-preserving key (see the module header). @internal */
export const laneKey = (threadId: string): string => {
  let key = ""
  for (let i = 0; i < threadId.length; i++) key += threadId.charCodeAt(i).toString(16).padStart(4, "0")
  return key
}

const CLEAR_OWNERSHIP =
  "attempt_id = NULL, ownership_token = NULL, lease_expires_at = NULL, owner_incarnation = NULL"

/**
 * No live lease for the fence: none, expired, or taken by an earlier incarnation than the
 * fence's (`hasLiveLease`: ids compare as text, which orders them).
 */
const NO_LIVE_LEASE = `(lease_expires_at IS NULL OR lease_expires_at <= ?
  OR (? IS NOT NULL AND owner_incarnation IS NOT NULL AND owner_incarnation < ?))`

/**
 * A fenced update in both fence flavours. Parameters: the `SET` parameters, then the
 * submission id, the epoch, and the ownership token (owner) or `now` and the incarnation
 * twice (unowned), then `extra`.
 */
const fenced = (set: string, extra: string) => ({
  Owner: `UPDATE ${t} SET ${set} WHERE submission_id = ? AND producer_epoch = ? AND state = 'running' AND ownership_token = ?${extra} RETURNING *`,
  Unowned: `UPDATE ${t} SET ${set} WHERE submission_id = ? AND producer_epoch = ? AND ${NO_LIVE_LEASE}${extra} RETURNING *`,
})

/** One lane's first or last row among `status` rows. */
const laneEnd = (status: "open" | "parked", end: "min" | "max") =>
  `(SELECT ${end}(queue_sequence) FROM ${t} WHERE lane_key = ? AND lane_status = '${status}')`

/**
 * The lane seek's walk carries a lane's head as one value, `<queue sequence>:<lane key>` (a
 * recursive step yields one column from one index entry); these take it apart.
 */
const laneOf = (head: string) => `substr(${head}, instr(${head}, ':') + 1)`
const sequenceOf = (head: string) => `CAST(substr(${head}, 1, instr(${head}, ':') - 1) AS INTEGER)`

/** The first open row of the first lane after `after`, as a walk's head, from the open index. */
const NEXT_OPEN_HEAD = (after: string) => `(SELECT queue_sequence || ':' || lane_key FROM ${t}
  WHERE lane_status = 'open' AND lane_key > ${after} ORDER BY lane_key, queue_sequence LIMIT 1)`

/** @internal */
export const statements = {
  byId: `SELECT * FROM ${t} WHERE submission_id = ?`,
  salt: `SELECT value FROM ${META_TABLE} WHERE key = ?`,
  // Records that incarnations up to a number have begun (the count never goes back). Parameters:
  // the key, the number.
  recordIncarnation: `INSERT INTO ${META_TABLE} (key, value) VALUES (?, ?)
    ON CONFLICT (key) DO UPDATE SET value = CAST(max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER)) AS TEXT)`,
  hasLegacyKeys: `SELECT 1 AS found FROM ${LEGACY_KEYS_TABLE} WHERE lane_key >= '' LIMIT 1`,
  legacyKey: `SELECT submission_id FROM ${LEGACY_KEYS_TABLE} WHERE lane_key = ? AND idempotency_key = ?`,
  // The live span of a lane and the lane tail its Thread's end carries. Parameters: lane key ×4,
  // thread id ×2.
  laneCounters: `SELECT ${laneEnd("open", "min")} AS open_head, ${laneEnd("parked", "min")} AS parked_head,
      ${laneEnd("open", "max")} AS open_last, ${laneEnd("parked", "max")} AS parked_last,
      ${threadEndFigure("lane_tail")} AS lane_tail`,
  // Live rows of a lane, counting at most `limit` open ones. Parameters: lane key ×2.
  laneDepth: (limit: number) => `SELECT
      (SELECT count(*) FROM (SELECT 1 FROM ${t} WHERE lane_key = ? AND lane_status = 'open' LIMIT ${rowLimit(limit)}))
      + (SELECT count(*) FROM ${t} WHERE lane_key = ? AND lane_status = 'parked') AS depth`,
  insert: `INSERT INTO ${t} (submission_id, thread_id, lane_key, queue_sequence, idempotency_key,
      agent_id, agent_digest, input_payload, input_digest, receipt_id, state, lane_status, producer_epoch,
      abort_requested, created_at, ready_at, history_from, parent_link, host_submission_id, due_at, wait)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?, ?)`,
  markJoined: `UPDATE ${t} SET state = 'joined' WHERE submission_id = ? AND state = 'joining' RETURNING *`,
  // Parameters: now, submission id.
  revertJoining: `UPDATE ${t} SET state = 'ready', host_submission_id = NULL, ready_at = coalesce(ready_at, ?)
    WHERE submission_id = ? AND state = 'joining' RETURNING *`,
  // The joins of a host among its lane's recovery candidates. Parameters: lane key, host.
  joinsOf: `SELECT * FROM ${t} WHERE ${RECOVERY_CANDIDATE} AND lane_key = ? AND state IN ('joining', 'joined')
    AND host_submission_id = ? ORDER BY queue_sequence`,
  // Whether the settlement of the child started at a step is among a Submission's records after
  // a Thread sequence (0 for all). Parameters: after, submission id, step.
  childSettled: `SELECT 1 AS found FROM ${t} AS l
    JOIN ${h} AS r ON r.thread_id = l.thread_id AND r.sequence >= max(l.history_from, ? + 1)
      AND r.submission_id = l.submission_id,
      json_each(r.entries) AS e
    WHERE l.submission_id = ? AND json_extract(e.value, '$._tag') = 'ChildSettled'
      AND json_extract(e.value, '$.step') = ? LIMIT 1`,
  // How many events of a name are among a Submission's records after a Thread sequence (0 for
  // all). Parameters: after, submission id, event.
  eventsReceived: `SELECT count(*) AS found FROM ${t} AS l
    JOIN ${h} AS r ON r.thread_id = l.thread_id AND r.sequence >= max(l.history_from, ? + 1)
      AND r.submission_id = l.submission_id,
      json_each(r.entries) AS e
    WHERE l.submission_id = ? AND json_extract(e.value, '$._tag') = 'EventReceived'
      AND json_extract(e.value, '$.event') = ?`,
  markReady: `UPDATE ${t} SET state = 'ready', ready_at = ? WHERE submission_id = ? AND state = 'admitted' RETURNING *`,
  // The open head and the parked row of a lane; the lane's head is the earlier. Parameters: lane key ×2.
  head: `SELECT * FROM (SELECT * FROM ${t} WHERE lane_key = ? AND lane_status = 'open' ORDER BY queue_sequence LIMIT 1)
    UNION ALL SELECT * FROM (SELECT * FROM ${t} WHERE lane_key = ? AND lane_status = 'parked' ORDER BY queue_sequence LIMIT 1)`,
  // Parameters: lane key ×2.
  count: `SELECT (SELECT count(*) FROM ${t} WHERE lane_key = ? AND lane_status = 'open')
      + (SELECT count(*) FROM ${t} WHERE lane_key = ? AND lane_status = 'parked') AS depth`,
  // The open head of a lane unless a wait parks the lane, once due (a delayed head is not). A
  // lane claim clears the due time: a running row with one was claimed in place by the due path.
  // Parameters: attempt id, token, lease expiry, incarnation, lane key ×2, now, incarnation ×2,
  // now.
  claim: `UPDATE ${t} SET state = 'running', producer_epoch = producer_epoch + 1,
      attempt_id = ?, ownership_token = ?, lease_expires_at = ?, owner_incarnation = ?, due_at = NULL
    WHERE submission_id = (
      SELECT submission_id FROM ${t} WHERE lane_key = ? AND lane_status = 'open' ORDER BY queue_sequence LIMIT 1)
    AND NOT EXISTS (SELECT 1 FROM ${t} AS parked WHERE parked.lane_key = ? AND parked.lane_status = 'parked')
    AND (state = 'ready' OR (state = 'running' AND ${NO_LIVE_LEASE}))
    AND (due_at IS NULL OR due_at <= ?)
    RETURNING *`,
  renew: fenced("lease_expires_at = ?", ""),
  // A row claimed in place goes back to waiting, due, so its lane stays parked.
  release: fenced(`state = CASE WHEN due_at IS NULL THEN 'ready' ELSE 'waiting' END, ${CLEAR_OWNERSHIP}`, ""),
  // A stable wait. Parameters: state, wait, then the fence.
  park: fenced(`state = ?, lane_status = 'parked', due_at = NULL, wait = ?, ${CLEAR_OWNERSHIP}`, ""),
  // The same, from a row claimed in place, whose lane is parked already.
  parkInPlace: fenced(`state = ?, due_at = NULL, wait = ?, ${CLEAR_OWNERSHIP}`, ""),
  // A timed wait from a lane-claimed row. Parameters: due at, wait, epoch step, then the fence.
  parkTimedOpen: fenced(
    `state = 'waiting', lane_status = 'parked', due_at = ?, wait = ?, producer_epoch = producer_epoch + ?,
      ${CLEAR_OWNERSHIP}`,
    " AND lane_status = 'open' AND state = 'running'",
  ),
  // A timed wait of a row whose lane is parked already (claimed in place, unknown, waiting).
  // Parameters: due at, wait, epoch step of a running row, then the fence.
  parkTimedParked: fenced(
    `state = 'waiting', due_at = ?, wait = ?,
      producer_epoch = producer_epoch + CASE WHEN state = 'running' THEN ? ELSE 0 END, ${CLEAR_OWNERSHIP}`,
    " AND lane_status = 'parked' AND state IN ('running', 'unknown', 'waiting')",
  ),
  // A due row claimed in place. Parameters: attempt id, token, lease expiry, incarnation,
  // submission id, now.
  claimDue: `UPDATE ${t} SET state = 'running', producer_epoch = producer_epoch + 1,
      attempt_id = ?, ownership_token = ?, lease_expires_at = ?, owner_incarnation = ?
    WHERE submission_id = ? AND lane_status = 'parked' AND state = 'waiting' AND due_at <= ?
    RETURNING *`,
  // A due row whose Claim is not live, taken over; it goes behind the rows due before now.
  // Parameters: attempt id, token, lease expiry, incarnation, now, submission id, now,
  // incarnation ×2.
  takeOverDue: `UPDATE ${t} SET producer_epoch = producer_epoch + 1,
      attempt_id = ?, ownership_token = ?, lease_expires_at = ?, owner_incarnation = ?, due_at = ?
    WHERE submission_id = ? AND lane_status = 'parked' AND state = 'running' AND due_at IS NOT NULL
      AND ${NO_LIVE_LEASE}
    RETURNING *`,
  // Parameters: due at, submission id, epoch, state.
  wake: `UPDATE ${t} SET state = 'waiting', due_at = ?
    WHERE submission_id = ? AND producer_epoch = ? AND state = ? AND lane_status = 'parked'
      AND state IN ('suspended', 'waiting')
    RETURNING *`,
  // An open head whose notBefore is later parks itself. Extra parameter: now.
  deferHead: fenced(
    "state = 'waiting', lane_status = 'parked'",
    ` AND lane_status = 'open' AND state = 'ready' AND due_at > ?
      AND NOT EXISTS (SELECT 1 FROM ${t} AS earlier WHERE earlier.lane_key = ${t}.lane_key
        AND earlier.lane_status = 'open' AND earlier.queue_sequence < ${t}.queue_sequence)`,
  ),
  toReady: fenced(
    `state = 'ready', lane_status = 'open', due_at = NULL,
      producer_epoch = CASE WHEN state = 'running' THEN producer_epoch + 1 ELSE producer_epoch END,
      ready_at = CASE WHEN state = 'admitted' THEN ? ELSE ready_at END, ${CLEAR_OWNERSHIP}`,
    " AND state IN ('running', 'suspended', 'waiting', 'unknown', 'admitted')",
  ),
  toUnknown: fenced(
    `state = 'unknown', lane_status = 'parked', due_at = NULL,
      producer_epoch = CASE WHEN state = 'running' THEN producer_epoch + 1 ELSE producer_epoch END,
      ${CLEAR_OWNERSHIP}`,
    " AND state IN ('running', 'ready')",
  ),
  // Extra parameters: the settlement's submission id and thread id.
  reserve: fenced(
    `state = 'terminalizing', lane_status = 'open', settlement = ?, ${CLEAR_OWNERSHIP}`,
    " AND state NOT IN ('terminalizing', 'settled') AND submission_id = ? AND thread_id = ?",
  ),
  // Extra set parameters: the settlement's time, from which retention counts (NULL while retention
  // is off: an undated row adds no retention index entry), and its thread id twice: the records
  // this settlement appends start at the Thread's end.
  settle: fenced(
    `state = 'settled', lane_status = 'closed', settlement = ?, prune_after = ?,
      history_to = ${threadEndFigure("next_sequence")}, ${CLEAR_OWNERSHIP}`,
    " AND state NOT IN ('terminalizing', 'settled') AND submission_id = ? AND thread_id = ?",
  ),
  requestAbort: `UPDATE ${t} SET abort_requested = 1
    WHERE submission_id = ? AND state <> 'settled' AND abort_requested = 0 RETURNING *`,
  // Parameters: whether retention is on (1, the row is dated from its settlement) or off (0),
  // submission id.
  finalize: `UPDATE ${t} SET state = 'settled', lane_status = 'closed',
      prune_after = CASE WHEN ? THEN json_extract(settlement, '$.settledAt') END
    WHERE submission_id = ? AND state = 'terminalizing' RETURNING *`,
  // At most `rows` due rows in due order. Parameters: now, (after due at, after id).
  nextDue: (rows: number) => `SELECT * FROM ${t}
    WHERE lane_status = 'parked' AND due_at IS NOT NULL AND due_at <= ?
      AND (due_at, submission_id) > (?, ?)
    ORDER BY due_at, submission_id LIMIT ${rowLimit(rows)}`,
  // The first `rows` timed waits, due or not.
  earliestDue: (rows: number) => `SELECT * FROM ${t} WHERE lane_status = 'parked' AND due_at IS NOT NULL
    ORDER BY due_at, submission_id LIMIT ${rowLimit(rows)}`,
  // Whether any timed wait is stored.
  anyDue: `SELECT 1 AS found FROM ${t} WHERE lane_status = 'parked' AND due_at IS NOT NULL LIMIT 1`,
  // Keyset page of every live row, open and parked. Parameters: (last lane key, last queue
  // sequence) ×2.
  scanPage: `SELECT * FROM (SELECT * FROM ${t} WHERE lane_status = 'open' AND (lane_key, queue_sequence) > (?, ?)
      ORDER BY lane_key, queue_sequence LIMIT ${SCAN_PAGE_SIZE})
    UNION ALL SELECT * FROM (SELECT * FROM ${t} WHERE lane_status = 'parked' AND (lane_key, queue_sequence) > (?, ?)
      ORDER BY lane_key, queue_sequence LIMIT ${SCAN_PAGE_SIZE})
    ORDER BY lane_key, queue_sequence LIMIT ${SCAN_PAGE_SIZE}`,
  // Keyset page of the recovery candidates. Parameters: last lane key, last queue sequence.
  recoveryPage: `SELECT * FROM ${t} WHERE ${RECOVERY_CANDIDATE} AND (lane_key, queue_sequence) > (?, ?)
    ORDER BY lane_key, queue_sequence LIMIT ${SCAN_PAGE_SIZE}`,
  // The first open row of the first lane after a lane key ('' for the first lane), and whether a
  // wait before it parks its lane (one statement: the same two seeks).
  nextOpen: `SELECT *, EXISTS (SELECT 1 FROM ${t} AS p WHERE p.lane_key = o.lane_key
      AND p.lane_status = 'parked' AND p.queue_sequence < o.queue_sequence) AS parked_before
    FROM ${t} AS o WHERE lane_status = 'open' AND lane_key > ? ORDER BY lane_key, queue_sequence LIMIT 1`,
  // As `nextOpen`, past every lane a wait parks (a parked row before its first open row): the
  // walk over them runs inside SQLite, two index entries per lane passed over, so a seek behind
  // many lanes whose head waits (an approval, a child, a timer) with work queued behind it is one
  // statement, not one per lane. Costlier than `nextOpen` for the lane it stops at, so only read
  // once that found a parked lane. Parameters: lane key.
  nextUnparked: `WITH RECURSIVE seek(head) AS (
      SELECT ${NEXT_OPEN_HEAD("?")}
      UNION ALL
      SELECT ${NEXT_OPEN_HEAD(laneOf("seek.head"))} FROM seek
      WHERE EXISTS (SELECT 1 FROM ${t} AS p WHERE p.lane_key = ${laneOf("seek.head")}
        AND p.lane_status = 'parked' AND p.queue_sequence < ${sequenceOf("seek.head")}))
    SELECT * FROM ${t} AS o WHERE lane_status = 'open' AND lane_key = (SELECT max(${laneOf("head")}) FROM seek)
      AND NOT EXISTS (SELECT 1 FROM ${t} AS p WHERE p.lane_key = o.lane_key
        AND p.lane_status = 'parked' AND p.queue_sequence < o.queue_sequence)
    ORDER BY queue_sequence LIMIT 1`,
  // Operator reads, settled rows included, from seeks the ledger already pays for: no index is
  // written for them. Keyset page of every row by id. Parameters: last id.
  allPage: `SELECT * FROM ${t} WHERE submission_id > ? ORDER BY submission_id LIMIT ${SCAN_PAGE_SIZE}`,
  // A lane's Submissions in queue order, found from their acceptance records in the Thread's
  // history (each admission appends one row that starts with it) from a history sequence on, at
  // most `rows` of them. Parameters: thread id, from sequence, after queue sequence.
  lanePage: (rows: number) => `SELECT s.*
    FROM ${HISTORY_TABLE} AS a JOIN ${t} AS s ON s.submission_id = a.submission_id
    WHERE a.thread_id = ? AND a.sequence >= ?
      AND json_extract(a.entries, '$[0]._tag') = 'SubmissionAccepted' AND s.queue_sequence > ?
    ORDER BY a.sequence LIMIT ${rowLimit(rows)}`,
  // The lane tail a Thread's history carries at its first row from a sequence on: one seek.
  // Parameters: thread id, from sequence.
  laneTailFrom: `SELECT lane_tail FROM ${HISTORY_TABLE} WHERE thread_id = ? AND sequence >= ?
    ORDER BY sequence LIMIT 1`,
  // The first Thread after a Thread id ('' for the first), from the history's Thread index.
  nextThread: `SELECT thread_id FROM ${HISTORY_TABLE} WHERE thread_id > ? ORDER BY thread_id LIMIT 1`,
} as const

/** A raw row as the driver returns it. @internal */
export type Row = Readonly<Record<string, unknown>>

const decodeSnapshotUnknown = Schema.decodeUnknownEffect(SubmissionSnapshot)

const nullable = (value: unknown) => (value === null ? undefined : value)

const flag = (value: unknown): unknown => (value === 0 ? false : value === 1 ? true : value)

/** A JSON column of a stored row, parsed; `undefined` when it is NULL. */
const jsonColumn = (operation: string, row: Row, column: string, what: string) =>
  row[column] === null || row[column] === undefined
    ? Effect.succeed(undefined)
    : Effect.try({
        try: () => JSON.parse(String(row[column])) as unknown,
        catch: (cause) =>
          new LedgerError({
            operation,
            message: `stored ${what} of ${String(row.submission_id)} is not JSON`,
            cause,
          }),
      })

/** Decodes a stored row; a row that does not decode is an error, never skipped. @internal */
export const decodeRow = (operation: string) => (row: Row) =>
  Effect.gen(function* () {
    const settlement = yield* jsonColumn(operation, row, "settlement", "settlement")
    const parent = yield* jsonColumn(operation, row, "parent_link", "parent link")
    const wait = yield* jsonColumn(operation, row, "wait", "wait")
    const owned = row.attempt_id !== null || row.ownership_token !== null || row.lease_expires_at !== null
    const encoded = {
      submissionId: row.submission_id,
      threadId: row.thread_id,
      queueSequence: row.queue_sequence,
      idempotencyKey: row.idempotency_key,
      agentId: row.agent_id,
      agentDigest: row.agent_digest,
      inputPayload: row.input_payload,
      inputDigest: row.input_digest,
      receiptId: row.receipt_id,
      state: row.state,
      producerEpoch: row.producer_epoch,
      abortRequested: flag(row.abort_requested),
      createdAt: row.created_at,
      ...(owned
        ? {
            ownership: {
              attemptId: row.attempt_id,
              ownershipToken: row.ownership_token,
              leaseExpiresAt: row.lease_expires_at,
              ...(nullable(row.owner_incarnation) === undefined
                ? {}
                : { incarnation: row.owner_incarnation }),
            },
          }
        : {}),
      ...(settlement === undefined ? {} : { settlement }),
      ...(nullable(row.ready_at) === undefined ? {} : { readyAt: row.ready_at }),
      ...(parent === undefined ? {} : { parent }),
      ...(nullable(row.host_submission_id) === undefined ? {} : { host: row.host_submission_id }),
      ...(nullable(row.due_at) === undefined ? {} : { dueAt: row.due_at }),
      ...(wait === undefined ? {} : { wait }),
    }
    return yield* decodeSnapshotUnknown(encoded).pipe(
      Effect.mapError(
        (cause) =>
          new LedgerError({
            operation,
            message: `stored submission ${String(row.submission_id)} does not decode: ${cause.message}`,
            cause,
          }),
      ),
    )
  })
