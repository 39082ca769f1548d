/**
 * The SQLite schema of the Submission Ledger and the canonical history, designed for the bill:
 * Cloudflare bills every row written, index entries included (an insert into an index is a row
 * written, a removal from one is not), so each table is keyed the way it is read, an index
 * exists only where no other seek answers, partial indexes hold only the rows that need them,
 * and no column that changes on every transition appears in an index or its `WHERE`.
 *
 * - The ledger is a `WITHOUT ROWID` table keyed by `submission_id`, which is derived from the
 *   Thread and idempotency key, so one seek answers both. `lane_status` (`open`, `parked`,
 *   `closed`) changes only when a Submission parks in a wait, resumes, or settles; the
 *   lane index holds open rows, the parked index the waits, the due index the waits with a due
 *   time, the recovery index only rows that recovery must look at. A Claim, a renewal or a
 *   release rewrites the row alone.
 * - A history row holds the records one transaction appended for one Submission (`entries`, a
 *   JSON array; record `i` has feed position `position + i` and thread sequence
 *   `sequence + i`). Its rowid is the feed position; one index orders each Thread; a
 *   Submission's records are found from its first sequence (`history_from` in the ledger).
 *   Every row carries forward the Thread's highest queue sequence (`lane_tail`) and the Object's
 *   counts of admissions and settlements since this schema (`admitted`, `settled`), so the
 *   tail rows answer "next queue sequence" and "how many nonterminal" with no row to maintain.
 *
 * Migrations are named and run once each; `thread-store/003-billed-rows` rebuilds the tables of
 * the earlier schema in place (see `rebuild`), `thread-store/004-subagent-links` adds what
 * subagents and joins store (see `links`), `thread-store/005-durable-waits` the due times of
 * timed waits (see `durableWaits`), `thread-store/006-retention` what retention reads (see
 * `retention`), `thread-store/007-schedules` the schedules (see `schedules`), and
 * `thread-store/009-retention-when-used` leaves undated rows out of the retention index (see
 * `retentionWhenUsed`), and `thread-store/011-event-ids` indexes the event ids each Submission
 * took (see `eventIds`).
 */
import type { FreshSchema, Migration } from "./migrations.ts"
import { incarnationId } from "./ledger/fences.ts"

/** @internal */
export const SUBMISSIONS_TABLE = "effect_agent_submissions"
/** @internal */
export const HISTORY_TABLE = "effect_agent_history"
/** @internal */
export const META_TABLE = "effect_agent_meta"
/**
 * Where a Thread's history continues once retention removed its newest row: the next sequence
 * and the lane tail, as that row carried them. An append continues from whichever is later, its
 * Thread's newest row or this one. @internal
 */
export const THREAD_TAILS_TABLE = "effect_agent_thread_tails"
/**
 * Where the feed continues once retention removed the Object's newest history row: the next
 * position and the admissions and settlements counted so far (one row, `id` 1). @internal
 */
export const HISTORY_FLOOR_TABLE = "effect_agent_history_floor"
/** Recurring schedules, each admitting its occurrences as Submissions. @internal */
export const SCHEDULES_TABLE = "effect_agent_schedules"
/**
 * The event ids taken in each Submission: one row per `EventReceived` record, written with it,
 * keyed by Submission and id and holding the event's name, so an event's id is checked in one
 * seek whatever the journal's length. Retention removes a Submission's rows with its records.
 * @internal
 */
export const EVENT_IDS_TABLE = "effect_agent_event_ids"
/** Idempotency keys of Submissions admitted before derived ids; written only by the migration. @internal */
export const LEGACY_KEYS_TABLE = "effect_agent_submission_keys"

const t = SUBMISSIONS_TABLE
const h = HISTORY_TABLE

/**
 * Rows recovery must look at: an accepted abort, a row an older release left between the
 * writes of an admission (`admitted`) or a settlement (`terminalizing`), a wait of an older
 * release that may have been resolved without resuming (`open` while suspended or unknown),
 * and a join (`joining`, `joined`), which its host's settlement finishes in a later write.
 * Queries repeat it verbatim so that SQLite uses the partial index.
 * @internal
 */
export const RECOVERY_CANDIDATE = `lane_status <> 'closed' AND (abort_requested <> 0 OR state IN ('admitted', 'terminalizing', 'joining', 'joined') OR (lane_status = 'open' AND state IN ('suspended', 'unknown')))`

/** The recovery index as `thread-store/003-billed-rows` created it, before joins existed. */
const RECOVERY_CANDIDATE_003 = `lane_status <> 'closed' AND (abort_requested <> 0 OR state IN ('admitted', 'terminalizing') OR (lane_status = 'open' AND state IN ('suspended', 'unknown')))`

/**
 * Settled rows retention can find: a settlement dates its row (`prune_after`) only while
 * retention is on, so with it off no row enters the retention index. Queries repeat it verbatim
 * so that SQLite uses the partial index.
 * @internal
 */
export const RETENTION_CANDIDATE = "lane_status = 'closed' AND prune_after IS NOT NULL"

/** Meta keys. @internal */
export const META_KEYS = {
  salt: "submission-id-salt",
  /** How many incarnations of the Object have begun (`SubmissionLedger.beginIncarnation`). */
  incarnations: "incarnations",
  /** Admissions and settlements before the history counted them. */
  admittedBefore: "admitted-before-003",
  settledBefore: "settled-before-003",
  /**
   * Present while every settled row is dated: set by the first open with retention on, which
   * dates the rows settled while it was off, and removed by an open with it off. An Object that
   * always keeps everything never writes it.
   */
  settledDated: "settled-dated",
  /**
   * Present once retention or `forget` has removed a Submission: its records leave gaps in its
   * Thread's sequence and its lane's, which `verify` must not read as lost rows.
   */
  historyRemoved: "history-removed",
} as const

const LEDGER_COLUMNS = `
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
    lane_status TEXT NOT NULL,
    producer_epoch INTEGER NOT NULL,
    attempt_id TEXT,
    ownership_token TEXT,
    lease_expires_at REAL,
    owner_incarnation TEXT,
    abort_requested INTEGER NOT NULL,
    settlement TEXT,
    created_at REAL NOT NULL,
    ready_at REAL,
    history_from INTEGER`

const HISTORY_COLUMNS = `
    position INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    records INTEGER NOT NULL,
    submission_id TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    entries TEXT NOT NULL,
    lane_tail INTEGER NOT NULL,
    admitted INTEGER NOT NULL,
    settled INTEGER NOT NULL`

/** Statements both the migrations and the fresh schema run, so both say the same. */
const META_CREATE = `CREATE TABLE IF NOT EXISTS ${META_TABLE} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID`
const SALT_INSERT = `INSERT OR IGNORE INTO ${META_TABLE} (key, value) VALUES ('${META_KEYS.salt}', lower(hex(randomblob(16))))`
const LEGACY_KEYS_CREATE = `CREATE TABLE ${LEGACY_KEYS_TABLE} (
    lane_key TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    submission_id TEXT NOT NULL,
    PRIMARY KEY (lane_key, idempotency_key)
  ) WITHOUT ROWID`
const LANE_INDEX = `CREATE INDEX ${t}_lane ON ${t} (lane_key, queue_sequence) WHERE lane_status = 'open'`
const PARKED_INDEX = `CREATE INDEX ${t}_parked ON ${t} (lane_key, queue_sequence) WHERE lane_status = 'parked'`
const THREAD_INDEX = `CREATE UNIQUE INDEX ${h}_thread ON ${h} (thread_id, sequence)`
const RECOVERY_INDEX = `CREATE INDEX ${t}_recovery ON ${t} (lane_key, queue_sequence) WHERE ${RECOVERY_CANDIDATE}`
const DUE_INDEX = `CREATE INDEX ${t}_due ON ${t} (due_at) WHERE lane_status = 'parked' AND due_at IS NOT NULL`
const RETENTION_INDEX = `CREATE INDEX ${t}_retention ON ${t} (prune_after) WHERE ${RETENTION_CANDIDATE}`
const tailsWith = (laterColumns: string) => `CREATE TABLE ${THREAD_TAILS_TABLE} (
    thread_id TEXT PRIMARY KEY NOT NULL,
    next_sequence INTEGER NOT NULL,
    lane_tail INTEGER NOT NULL${laterColumns}
  ) WITHOUT ROWID`
const TAILS_CREATE = tailsWith("")
/** The Submissions of a Thread removed so far (forgotten or by retention). */
const TAILS_REMOVED = "removed INTEGER NOT NULL DEFAULT 0"
const EVENT_IDS_CREATE = `CREATE TABLE ${EVENT_IDS_TABLE} (
    submission_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (submission_id, event_id)
  ) WITHOUT ROWID`
const FLOOR_CREATE = `CREATE TABLE ${HISTORY_FLOOR_TABLE} (
    id INTEGER PRIMARY KEY,
    next_position INTEGER NOT NULL,
    admitted INTEGER NOT NULL,
    settled INTEGER NOT NULL
  )`

const tag = (alias: string) => `json_extract(${alias}.entry, '$._tag')`
const step = (alias: string) => `json_extract(${alias}.entry, '$.step')`

/** An old record of the same Submission as `s` (old history: one entry per row). */
const recordOf = (alias: string) => `FROM ${h} AS ${alias} WHERE ${alias}.submission_id = s.submission_id`

/** A suspended row of the old schema whose approval request has no decision yet. */
const awaitsApproval = `EXISTS (SELECT 1 ${recordOf("r")} AND ${tag("r")} = 'ApprovalRequested'
    AND NOT EXISTS (SELECT 1 ${recordOf("d")} AND ${tag("d")} = 'ApprovalResolved' AND ${step("d")} = ${step("r")}))`

/** An unknown row of the old schema with a recorded Unknown Outcome and no resolution or result. */
const awaitsResolution = `EXISTS (SELECT 1 ${recordOf("u")} AND ${tag("u")} = 'UnknownOutcomeRecorded'
    AND NOT EXISTS (SELECT 1 ${recordOf("x")} AND ${step("x")} = ${step("u")}
      AND ${tag("x")} IN ('StepCompleted', 'StepFailed', 'UnknownOutcomeResolved')))`

/**
 * Rebuilds both tables in place. Rows keep their ids, states, epochs and history positions (a
 * feed cursor stored by a host stays valid). A wait is parked only when its records show it is
 * still waiting; any other wait is left `open`, so the first pass's recovery resumes it if a
 * resolution was recorded without the resumption. A Claim of the old release names no
 * incarnation the new one could be: it is expired at once. The old idempotency keys move to
 * their own table, and the counts the history will carry from now on start from constants.
 */
const rebuild: ReadonlyArray<string> = [
  META_CREATE,
  SALT_INSERT,
  `INSERT OR REPLACE INTO ${META_TABLE} (key, value) VALUES ('${META_KEYS.admittedBefore}', (SELECT count(*) FROM ${t}))`,
  `INSERT OR REPLACE INTO ${META_TABLE} (key, value) VALUES ('${META_KEYS.settledBefore}', (SELECT count(*) FROM ${t} AS s
    WHERE s.state = 'settled' OR (s.state = 'terminalizing' AND EXISTS (SELECT 1 ${recordOf("r")} AND ${tag("r")} = 'SubmissionSettled'))))`,
  LEGACY_KEYS_CREATE,
  `INSERT INTO ${LEGACY_KEYS_TABLE} (lane_key, idempotency_key, submission_id)
    SELECT lane_key, idempotency_key, submission_id FROM ${t}`,
  `CREATE TABLE ${t}_next (${LEDGER_COLUMNS}) WITHOUT ROWID`,
  `INSERT INTO ${t}_next (submission_id, thread_id, lane_key, queue_sequence, idempotency_key, agent_id,
      agent_digest, input_payload, input_digest, receipt_id, state, lane_status, producer_epoch, attempt_id,
      ownership_token, lease_expires_at, owner_incarnation, abort_requested, settlement, created_at, ready_at,
      history_from)
    SELECT submission_id, thread_id, lane_key, queue_sequence, idempotency_key, agent_id, agent_digest,
      input_payload, input_digest, receipt_id, state,
      CASE
        WHEN state = 'settled' THEN 'closed'
        WHEN state = 'suspended' AND ${awaitsApproval} THEN 'parked'
        WHEN state = 'unknown' AND ${awaitsResolution} THEN 'parked'
        ELSE 'open'
      END,
      producer_epoch, attempt_id, ownership_token, lease_expires_at,
      CASE WHEN ownership_token IS NULL THEN NULL ELSE 'before-003' END,
      abort_requested, settlement, created_at, ready_at,
      -- A Submission without records yet gets its first one after its Thread's newest.
      coalesce((SELECT min(r.sequence) ${recordOf("r")}),
        (SELECT max(o.sequence) + 1 FROM ${h} AS o WHERE o.thread_id = s.thread_id), 1)
    FROM ${t} AS s`,
  `CREATE TABLE ${h}_next (${HISTORY_COLUMNS})`,
  `INSERT INTO ${h}_next (position, thread_id, sequence, records, submission_id, recorded_at, entries,
      lane_tail, admitted, settled)
    SELECT rowid, thread_id, sequence, 1, submission_id, recorded_at, '[' || entry || ']', 0, 0, 0 FROM ${h}`,
  // Only a Thread's newest row is ever read for its lane tail.
  `UPDATE ${h}_next SET lane_tail = coalesce(
      (SELECT max(s.queue_sequence) FROM ${t} AS s WHERE s.thread_id = ${h}_next.thread_id), 0)
    WHERE position IN (SELECT max(position) FROM ${h}_next GROUP BY thread_id)`,
  `DROP TABLE ${t}`,
  `DROP TABLE ${h}`,
  `ALTER TABLE ${t}_next RENAME TO ${t}`,
  `ALTER TABLE ${h}_next RENAME TO ${h}`,
  LANE_INDEX,
  PARKED_INDEX,
  `CREATE INDEX ${t}_recovery ON ${t} (lane_key, queue_sequence) WHERE ${RECOVERY_CANDIDATE_003}`,
  THREAD_INDEX,
]

/**
 * Subagents and joined input: a child's link to its parent and a join's host are plain columns
 * in no index (set once, at admission), and the recovery index takes the joins in. No row of
 * the earlier schema is a child or a join, and none is in a new state, so rebuilding the index
 * is the only data change.
 */
const links: ReadonlyArray<string> = [
  `ALTER TABLE ${t} ADD COLUMN parent_link TEXT`,
  `ALTER TABLE ${t} ADD COLUMN host_submission_id TEXT`,
  `DROP INDEX ${t}_recovery`,
  RECOVERY_INDEX,
]

/**
 * Timed waits: a due time (`due_at`) and what the wait is for (`wait`, JSON), plain columns set
 * by a park; the due index holds only parked rows with a due time, so waiting costs no read
 * until due. An `unknown` row parked by a failed reconcile was never woken by an older release:
 * each parked `unknown` row becomes due once (`due_at` 0, before any real time), so a replay
 * decides again; the uncertain effect never runs twice, a reconcile runs only if still allowed.
 */
const durableWaits: ReadonlyArray<string> = [
  `ALTER TABLE ${t} ADD COLUMN due_at REAL`,
  `ALTER TABLE ${t} ADD COLUMN wait TEXT`,
  DUE_INDEX,
  `UPDATE ${t} SET state = 'waiting', due_at = 0 WHERE lane_status = 'parked' AND state = 'unknown'`,
]

/**
 * Retention: `prune_after`, the instant from which retention counts a settled row's age (its
 * settlement time, moved forward when a pass had to keep it), and an index of closed rows by
 * it, so the earliest expiry is one seek and a batch one range. `history_to` is the Thread
 * sequence of the Submission's last history row, so its records are a bounded range of the
 * Thread's (`history_from` to it) rather than everything after its first. A settlement writes
 * both columns in the row it already rewrites; the index entry is the one row it adds (only
 * while retention is on, since `thread-store/009`). The tails table and the floor keep
 * sequences, lane tails and feed positions monotone once the newest rows that carried them are
 * gone. Rows settled before this migration count from their settlement time.
 */
const retention: ReadonlyArray<string> = [
  `ALTER TABLE ${t} ADD COLUMN prune_after REAL`,
  `ALTER TABLE ${t} ADD COLUMN history_to INTEGER`,
  `UPDATE ${t} SET prune_after = json_extract(settlement, '$.settledAt') WHERE lane_status = 'closed'`,
  `CREATE INDEX ${t}_retention ON ${t} (prune_after) WHERE lane_status = 'closed'`,
  TAILS_CREATE,
  FLOOR_CREATE,
]

/**
 * Schedules: one row each, keyed by its id; the index on the next occurrence lets a pass read
 * the schedules due and nothing else (an advance rewrites one entry).
 */
const schedulesWith = (laterColumns: string): ReadonlyArray<string> => [
  `CREATE TABLE ${SCHEDULES_TABLE} (
    schedule_id TEXT PRIMARY KEY NOT NULL,
    thread_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    input_payload TEXT NOT NULL,
    spec TEXT NOT NULL,
    missed TEXT NOT NULL,
    next_at REAL NOT NULL,
    last_occurrence REAL,
    last_submission_id TEXT,
    last_refusal TEXT,
    created_at REAL NOT NULL${laterColumns}
  ) WITHOUT ROWID`,
  `CREATE INDEX ${SCHEDULES_TABLE}_next ON ${SCHEDULES_TABLE} (next_at)`,
]
const schedules = schedulesWith("")

/** A schedule's overlap policy (`skip`; null: `queue`, as every schedule made before it). */
const scheduleOverlap: ReadonlyArray<string> = [`ALTER TABLE ${SCHEDULES_TABLE} ADD COLUMN overlap TEXT`]

/**
 * Ordered incarnation ids (`SubmissionLedger.beginIncarnation`): a Claim of an earlier release
 * names a random id, which would not sort before the new ones. Those incarnations ended before
 * this migration ran, so their Claims are marked as of incarnation zero, earlier than any.
 */
const orderedIncarnations: ReadonlyArray<string> = [
  `UPDATE ${t} SET owner_incarnation = '${incarnationId(0)}' WHERE owner_incarnation IS NOT NULL`,
]

/**
 * Retention's price only when retention is used: the index holds dated rows alone, so a
 * settlement with retention off (it writes no `prune_after`) adds no entry. Recreating the index
 * writes one entry for every settled row once; every row settled so far is dated.
 */
const retentionWhenUsed: ReadonlyArray<string> = [`DROP INDEX ${t}_retention`, RETENTION_INDEX]

/**
 * Event ids: the index of the ids each Submission's `EventReceived` records took (see
 * `EVENT_IDS_TABLE`), filled from the records stored so far, the first record of an id winning
 * as the journal reads it. One row read per history row once (only the rows naming the kind are
 * parsed), and one row written per event recorded.
 */
const eventIds: ReadonlyArray<string> = [
  EVENT_IDS_CREATE,
  `INSERT OR IGNORE INTO ${EVENT_IDS_TABLE} (submission_id, event_id, event)
    SELECT r.submission_id, json_extract(e.value, '$.eventId'), json_extract(e.value, '$.event')
    FROM ${h} AS r, json_each(r.entries) AS e
    WHERE instr(r.entries, '"EventReceived"') > 0 AND json_extract(e.value, '$._tag') = 'EventReceived'
    ORDER BY r.position, e.key`,
]

/**
 * Removed counts: how many Submissions of each Thread were removed (forgotten or by retention),
 * so that a Thread's settled count leaves them out. A removal adds to its Thread's tails row, in
 * its own transaction. An Object that removed Submissions before this migration counts them once
 * here: a lane's admissions (its tail) less the rows it still holds, once, reading each stored
 * Submission twice and a few rows per Thread, and writing one row per Thread that lost any; an
 * Object that never removed anything reads one row.
 */
const removedCounts: ReadonlyArray<string> = [
  `ALTER TABLE ${THREAD_TAILS_TABLE} ADD COLUMN ${TAILS_REMOVED}`,
  // Driven by the mark (CROSS JOIN keeps it the outer loop): without it nothing else is read. A
  // Thread that lost Submissions holds rows still, or lost its newest and so has a tails row.
  `INSERT INTO ${THREAD_TAILS_TABLE} (thread_id, next_sequence, lane_tail, removed)
    SELECT ends.thread_id, 1, 0, ends.lane_end - coalesce(kept.rows, 0)
    FROM ${META_TABLE} AS mark CROSS JOIN (
      SELECT e.thread_id,
        max(coalesce((SELECT lane_tail FROM ${h} WHERE thread_id = e.thread_id ORDER BY sequence DESC LIMIT 1), 0),
          coalesce((SELECT lane_tail FROM ${THREAD_TAILS_TABLE} WHERE thread_id = e.thread_id), 0)) AS lane_end
      FROM (SELECT thread_id FROM ${t} UNION SELECT thread_id FROM ${THREAD_TAILS_TABLE}) AS e
    ) AS ends
    LEFT JOIN (SELECT thread_id, count(*) AS rows FROM ${t} GROUP BY thread_id) AS kept
      ON kept.thread_id = ends.thread_id
    WHERE mark.key = '${META_KEYS.historyRemoved}' AND ends.lane_end > coalesce(kept.rows, 0)
    ON CONFLICT (thread_id) DO UPDATE SET removed = excluded.removed`,
]

/** Every migration of the ledger and the history, in order; both services run the list. @internal */
export const storeMigrations: ReadonlyArray<Migration> = [
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
    name: "submission-ledger/002-pass-indexes",
    statements: [
      `ALTER TABLE ${t} ADD COLUMN settled_ordinal INTEGER`,
      `UPDATE ${t} SET settled_ordinal =
        (SELECT count(*) FROM ${t} AS earlier WHERE earlier.state = 'settled' AND earlier.rowid <= ${t}.rowid)
        WHERE state = 'settled'`,
      `CREATE INDEX IF NOT EXISTS ${t}_recovery ON ${t} (lane_key, queue_sequence)
        WHERE state <> 'settled' AND (state <> 'ready' OR abort_requested <> 0 OR producer_epoch <> 0)`,
      `CREATE UNIQUE INDEX IF NOT EXISTS ${t}_settled ON ${t} (settled_ordinal)`,
    ],
  },
  {
    name: "thread-history/001-create",
    statements: [
      `CREATE TABLE IF NOT EXISTS ${h} (
        thread_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        submission_id TEXT NOT NULL,
        recorded_at REAL NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (thread_id, sequence)
      )`,
      `CREATE INDEX IF NOT EXISTS ${h}_submission ON ${h} (submission_id, sequence)`,
    ],
  },
  { name: "thread-store/003-billed-rows", statements: rebuild },
  { name: "thread-store/004-subagent-links", statements: links },
  { name: "thread-store/005-durable-waits", statements: durableWaits },
  { name: "thread-store/006-retention", statements: retention },
  { name: "thread-store/007-schedules", statements: schedules },
  { name: "thread-store/008-ordered-incarnations", statements: orderedIncarnations },
  { name: "thread-store/009-retention-when-used", statements: retentionWhenUsed },
  { name: "thread-store/010-schedule-overlap", statements: scheduleOverlap },
  { name: "thread-store/011-event-ids", statements: eventIds },
  { name: "thread-store/012-removed-counts", statements: removedCounts },
]

/**
 * The schema every migration above leads to, created at once on a storage that has none of it
 * (a new Object): the same tables, columns in the same order, and indexes, with every
 * migration recorded. Forty-odd DDL statements each make SQLite parse the schema again, which
 * was most of a new Object's first request; these are a dozen. `test/core/freshSchema.test.ts`
 * checks that both roads end at the same schema.
 * @internal
 */
export const freshStore: ReadonlyArray<string> = [
  META_CREATE,
  SALT_INSERT,
  `INSERT OR REPLACE INTO ${META_TABLE} (key, value) VALUES ('${META_KEYS.admittedBefore}', 0)`,
  `INSERT OR REPLACE INTO ${META_TABLE} (key, value) VALUES ('${META_KEYS.settledBefore}', 0)`,
  LEGACY_KEYS_CREATE,
  `CREATE TABLE ${t} (${LEDGER_COLUMNS}, parent_link TEXT, host_submission_id TEXT, due_at REAL, wait TEXT,
    prune_after REAL, history_to INTEGER) WITHOUT ROWID`,
  `CREATE TABLE ${h} (${HISTORY_COLUMNS})`,
  LANE_INDEX,
  PARKED_INDEX,
  THREAD_INDEX,
  RECOVERY_INDEX,
  DUE_INDEX,
  RETENTION_INDEX,
  tailsWith(`,\n    ${TAILS_REMOVED}`),
  FLOOR_CREATE,
  // The columns later migrations add, in their order.
  ...schedulesWith(",\n    overlap TEXT"),
  EVENT_IDS_CREATE,
]

/** The store's fresh schema, for `runMigrations`. @internal */
export const freshStoreSchema: FreshSchema = {
  statements: freshStore,
  tables: [SUBMISSIONS_TABLE, HISTORY_TABLE],
}
