/**
 * The SQLite schema and statements of the Submission Ledger, and the decoding of its rows.
 *
 * Lane queries go through `lane_key`, the Thread id as 4-hex-digit UTF-16 code units: SQLite's
 * BINARY collation compares UTF-8 bytes, which orders astral characters after U+E000–U+FFFF
 * while JavaScript orders them before; comparing the hex form reproduces JavaScript order,
 * so `scanNonterminal` agrees with the in-memory ledger. One partial index over nonterminal
 * rows serves `head`, `claim`, `countNonterminal`, the scan and the lane-by-lane seek of
 * `laneHeads`, so none of them reads settled rows; a second one holds only the rows recovery
 * must look at (not plain queued input), so a pass over a long queue reads none of it.
 *
 * Counting without reading the rows: rows are never deleted, so the largest rowid is the number
 * of Submissions ever admitted, and finalizing a settlement numbers it (`settled_ordinal`,
 * 1, 2, …); the nonterminal count is their difference, two index seeks.
 * Statements are plain strings with `?` parameters so tests can ask for their plans.
 */
import { Effect, Schema } from "effect"
import { LedgerError, SubmissionSnapshot } from "./model.ts"
import type { Migration } from "../migrations.ts"

/** @internal */
export const submissionsTable = "effect_agent_submissions"

const t = submissionsTable

/**
 * Nonterminal rows whose recovery decision is not "plain queued input": any state but `ready`,
 * or a `ready` row with an accepted abort or a past Claim (see `Rules.isRecoveryCandidate`).
 * Queries repeat it verbatim so that SQLite uses the partial index.
 */
const recoveryCandidate = `state <> 'settled' AND (state <> 'ready' OR abort_requested <> 0 OR producer_epoch <> 0)`

/** @internal */
export const ledgerMigrations: ReadonlyArray<Migration> = [
  {
    name: "submission-ledger/001-create",
    statements: [
      `CREATE TABLE IF NOT EXISTS ${t} (
        submission_id TEXT PRIMARY KEY NOT NULL,
        thread_id TEXT NOT NULL,
        lane_key TEXT NOT NULL,
        queue_sequence INTEGER NOT NULL,
        idempotency_key TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        agent_digest TEXT NOT NULL,
        input_payload TEXT NOT NULL,
        input_digest TEXT NOT NULL,
        receipt_id TEXT NOT NULL,
        state TEXT NOT NULL,
        producer_epoch INTEGER NOT NULL,
        attempt_id TEXT,
        ownership_token TEXT,
        lease_expires_at REAL,
        abort_requested INTEGER NOT NULL,
        settlement TEXT,
        created_at REAL NOT NULL,
        ready_at REAL
      )`,
      `CREATE UNIQUE INDEX IF NOT EXISTS ${t}_key ON ${t} (lane_key, idempotency_key)`,
      `CREATE UNIQUE INDEX IF NOT EXISTS ${t}_sequence ON ${t} (lane_key, queue_sequence)`,
      `CREATE INDEX IF NOT EXISTS ${t}_nonterminal ON ${t} (lane_key, queue_sequence) WHERE state <> 'settled'`,
    ],
  },
  {
    // Counting and recovery without reading queued rows (see the module header). Rows settled
    // before this migration are numbered 1, 2, … here once, so the count stays exact.
    name: "submission-ledger/002-pass-indexes",
    statements: [
      `ALTER TABLE ${t} ADD COLUMN settled_ordinal INTEGER`,
      `UPDATE ${t} SET settled_ordinal =
        (SELECT count(*) FROM ${t} AS earlier WHERE earlier.state = 'settled' AND earlier.rowid <= ${t}.rowid)
        WHERE state = 'settled'`,
      `CREATE INDEX IF NOT EXISTS ${t}_recovery ON ${t} (lane_key, queue_sequence) WHERE ${recoveryCandidate}`,
      `CREATE UNIQUE INDEX IF NOT EXISTS ${t}_settled ON ${t} (settled_ordinal)`,
    ],
  },
  {
    // A child's link to its parent and the host of a join: plain columns, in no index.
    name: "submission-ledger/003-links",
    statements: [
      `ALTER TABLE ${t} ADD COLUMN parent_link TEXT`,
      `ALTER TABLE ${t} ADD COLUMN host_submission_id TEXT`,
    ],
  },
]

/** The Thread id as an order-preserving key (see the module header). @internal */
export const laneKey = (threadId: string): string => {
  let key = ""
  for (let i = 0; i < threadId.length; i++) key += threadId.charCodeAt(i).toString(16).padStart(4, "0")
  return key
}

const clearOwnership = "attempt_id = NULL, ownership_token = NULL, lease_expires_at = NULL"

/**
 * A fenced update in both fence flavours. Parameters: the `SET` parameters, then the
 * submission id, the epoch, and the ownership token (owner) or `now` (unowned), then `extra`.
 */
const fenced = (set: string, extra: string) => ({
  Owner: `UPDATE ${t} SET ${set} WHERE submission_id = ? AND producer_epoch = ? AND state = 'running' AND ownership_token = ?${extra} RETURNING *`,
  Unowned: `UPDATE ${t} SET ${set} WHERE submission_id = ? AND producer_epoch = ? AND (lease_expires_at IS NULL OR lease_expires_at <= ?)${extra} RETURNING *`,
})

/** @internal */
export const statements = {
  byId: `SELECT * FROM ${t} WHERE submission_id = ?`,
  byKey: `SELECT * FROM ${t} WHERE lane_key = ? AND idempotency_key = ?`,
  // The span from the lane head to its tail bounds the depth; only a lane whose span reaches
  // the limit (out-of-order settlements inside it) counts rows. Parameters: lane key ×2.
  laneCounters: `SELECT
      (SELECT queue_sequence FROM ${t} WHERE lane_key = ? AND state <> 'settled'
        ORDER BY queue_sequence LIMIT 1) AS head_sequence,
      (SELECT max(queue_sequence) FROM ${t} WHERE lane_key = ?) AS last_sequence`,
  // The lane's nonterminal row at a 0-based position, if the lane is that deep. Parameters:
  // lane key, position.
  laneRowAt: `SELECT queue_sequence FROM ${t} WHERE lane_key = ? AND state <> 'settled'
    ORDER BY queue_sequence LIMIT 1 OFFSET ?`,
  insert: `INSERT INTO ${t} (submission_id, thread_id, lane_key, queue_sequence, idempotency_key,
      agent_id, agent_digest, input_payload, input_digest, receipt_id, state, producer_epoch,
      abort_requested, created_at, parent_link, host_submission_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'admitted', 0, 0, ?, ?, ?)`,
  markReady: `UPDATE ${t} SET state = 'ready', ready_at = ?, host_submission_id = NULL
    WHERE submission_id = ? AND state = 'admitted' RETURNING *`,
  // Parameters: host, submission id.
  claimJoining: `UPDATE ${t} SET state = 'joining', host_submission_id = ?
    WHERE submission_id = ? AND state = 'admitted' RETURNING *`,
  markJoined: `UPDATE ${t} SET state = 'joined' WHERE submission_id = ? AND state = 'joining' RETURNING *`,
  // Parameters: now, submission id.
  revertJoining: `UPDATE ${t} SET state = 'ready', host_submission_id = NULL, ready_at = coalesce(ready_at, ?)
    WHERE submission_id = ? AND state = 'joining' RETURNING *`,
  // The joins of a host among its lane's nonterminal rows. Parameters: lane key, host.
  joinsOf: `SELECT * FROM ${t} WHERE lane_key = ? AND state <> 'settled' AND state IN ('joining', 'joined')
    AND host_submission_id = ? ORDER BY queue_sequence`,
  head: `SELECT * FROM ${t} WHERE lane_key = ? AND state <> 'settled' ORDER BY queue_sequence LIMIT 1`,
  count: `SELECT count(*) AS depth FROM ${t} WHERE lane_key = ? AND state <> 'settled'`,
  // Parameters: attempt id, token, lease expiry, lane key, now.
  claim: `UPDATE ${t} SET state = 'running', producer_epoch = producer_epoch + 1,
      attempt_id = ?, ownership_token = ?, lease_expires_at = ?
    WHERE submission_id = (
      SELECT submission_id FROM ${t} WHERE lane_key = ? AND state <> 'settled'
      ORDER BY queue_sequence LIMIT 1)
    AND (state = 'ready' OR (state = 'running' AND lease_expires_at <= ?))
    RETURNING *`,
  renew: fenced("lease_expires_at = ?", ""),
  relinquish: fenced(`state = ?, ${clearOwnership}`, ""),
  toReady: fenced(
    `state = 'ready',
      producer_epoch = CASE WHEN state = 'running' THEN producer_epoch + 1 ELSE producer_epoch END,
      ready_at = CASE WHEN state = 'admitted' THEN ? ELSE ready_at END, ${clearOwnership}`,
    " AND state IN ('running', 'suspended', 'unknown', 'admitted')",
  ),
  toUnknown: fenced(
    `state = 'unknown',
      producer_epoch = CASE WHEN state = 'running' THEN producer_epoch + 1 ELSE producer_epoch END,
      ${clearOwnership}`,
    " AND state IN ('running', 'ready')",
  ),
  // Extra parameters: the settlement's submission id and thread id.
  reserve: fenced(
    `state = 'terminalizing', settlement = ?, ${clearOwnership}`,
    " AND state NOT IN ('terminalizing', 'settled') AND submission_id = ? AND thread_id = ?",
  ),
  requestAbort: `UPDATE ${t} SET abort_requested = 1
    WHERE submission_id = ? AND state <> 'settled' AND abort_requested = 0 RETURNING *`,
  finalize: `UPDATE ${t} SET state = 'settled',
      settled_ordinal = (SELECT coalesce(max(settled_ordinal), 0) + 1 FROM ${t})
    WHERE submission_id = ? AND state = 'terminalizing' RETURNING *`,
  // Keyset page of the scan. Parameters: last lane key, last queue sequence, page size.
  scanPage: `SELECT * FROM ${t} WHERE state <> 'settled' AND (lane_key, queue_sequence) > (?, ?)
    ORDER BY lane_key, queue_sequence LIMIT ?`,
  // Keyset page of the recovery candidates. Parameters: last lane key, last queue sequence, page size.
  recoveryPage: `SELECT * FROM ${t} WHERE ${recoveryCandidate} AND (lane_key, queue_sequence) > (?, ?)
    ORDER BY lane_key, queue_sequence LIMIT ?`,
  // The head of the first lane after a lane key ('' for the first lane), one index seek.
  nextHead: `SELECT * FROM ${t} WHERE state <> 'settled' AND lane_key > ?
    ORDER BY lane_key, queue_sequence LIMIT 1`,
  nonterminalTotal: `SELECT (SELECT coalesce(max(rowid), 0) FROM ${t})
      - (SELECT coalesce(max(settled_ordinal), 0) FROM ${t}) AS total`,
} as const

/** A raw row as the driver returns it. @internal */
export type Row = Readonly<Record<string, unknown>>

const decodeSnapshotUnknown = Schema.decodeUnknownEffect(SubmissionSnapshot)

const nullable = (value: unknown) => (value === null ? undefined : value)

const flag = (value: unknown): unknown => (value === 0 ? false : value === 1 ? true : value)

/** Decodes a stored row; a row that does not decode is an error, never skipped. @internal */
export const decodeRow = (operation: string) => (row: Row) =>
  Effect.gen(function* () {
    const settlement =
      row.settlement === null || row.settlement === undefined
        ? undefined
        : yield* Effect.try({
            try: () => JSON.parse(String(row.settlement)) as unknown,
            catch: (cause) =>
              new LedgerError({
                operation,
                message: `stored settlement of ${String(row.submission_id)} is not JSON`,
                cause,
              }),
          })
    const parent =
      row.parent_link === null || row.parent_link === undefined
        ? undefined
        : yield* Effect.try({
            try: () => JSON.parse(String(row.parent_link)) as unknown,
            catch: (cause) =>
              new LedgerError({
                operation,
                message: `stored parent link of ${String(row.submission_id)} is not JSON`,
                cause,
              }),
          })
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
            },
          }
        : {}),
      ...(settlement === undefined ? {} : { settlement }),
      ...(nullable(row.ready_at) === undefined ? {} : { readyAt: row.ready_at }),
      ...(parent === undefined ? {} : { parent }),
      ...(nullable(row.host_submission_id) === undefined ? {} : { host: row.host_submission_id }),
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
