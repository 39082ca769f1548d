/**
 * The canonical history on Durable Object SQLite. An append runs the ledger's fence check and
 * the insert in one storage transaction; the insert takes the next sequence from the Thread's
 * primary-key tail, so sequences stay 1-based and gap-free. The appended record is built from
 * what was inserted rather than read back: every row read is billed.
 *
 * The tail read is skipped when this instance appended to the Thread last: it remembers the
 * next sequence once its own transaction committed, and inserts there directly. A stale memory
 * can only be too low (sequences only grow and have no gaps), so the insert then hits the
 * primary key and the append falls back to reading the tail. An append inside a caller's
 * transaction neither uses nor keeps the memory, since that transaction may still roll back.
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { ThreadStoreError } from "../runtime/model.ts"
import type { ThreadHistory } from "../../ThreadHistory.ts"
import { SubmissionLedger } from "../../SubmissionLedger.ts"
import { decodeRecord, encodeEntry, foreignFence, pageOptions, requireInstant } from "./codec.ts"
import type { Migration } from "../migrations.ts"
import { runMigrations } from "../migrations.ts"

/** @internal */
export const historyTable = "effect_agent_history"

const h = historyTable

/** @internal */
export const historyMigrations: ReadonlyArray<Migration> = [
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
]

/** @internal */
export const historyStatements = {
  // The next sequence of a Thread, from its primary-key tail.
  nextSequence: `SELECT coalesce(max(sequence), 0) + 1 AS sequence FROM ${h} WHERE thread_id = ?`,
  // Parameters: thread id, sequence, submission id, recorded at, entry JSON.
  append: `INSERT INTO ${h} (thread_id, sequence, submission_id, recorded_at, entry) VALUES (?, ?, ?, ?, ?)`,
  forSubmission: `SELECT * FROM ${h} WHERE submission_id = ? ORDER BY sequence`,
  page: `SELECT * FROM ${h} WHERE thread_id = ? AND sequence > ? ORDER BY sequence LIMIT ?`,
  // The implicit rowid only grows (no row is ever deleted), so it orders commits.
  feed: `SELECT rowid AS position, * FROM ${h} WHERE rowid > ? ORDER BY rowid LIMIT ?`,
  feedEnd: `SELECT coalesce(max(rowid), 0) AS position FROM ${h}`,
} as const

interface RecordRow {
  readonly position?: unknown
  readonly thread_id: unknown
  readonly sequence: unknown
  readonly submission_id: unknown
  readonly recorded_at: unknown
  readonly entry: unknown
}

const storeError = (operation: string) => (cause: SqlError) =>
  new ThreadStoreError({ operation, message: `storage failed: ${cause.message}`, cause })

/** Builds the SQLite history and runs its migrations. @internal */
export const makeSqlHistory = Effect.gen(function* () {
  const sql = yield* SqlClient
  const ledger = yield* SubmissionLedger
  yield* runMigrations(historyMigrations).pipe(Effect.mapError(storeError("ThreadHistory.migrate")))

  const query = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    sql.unsafe<RecordRow>(text, params).pipe(Effect.mapError(storeError(operation)))

  /** Next sequence per Thread as of this instance's last committed append; bounded. */
  const nextSequence = new Map<string, number>()
  const rememberedThreads = 1_024
  const remember = (threadId: string, next: number) => {
    nextSequence.delete(threadId)
    if (nextSequence.size >= rememberedThreads) {
      const oldest = nextSequence.keys().next()
      if (oldest.done !== true) nextSequence.delete(oldest.value)
    }
    nextSequence.set(threadId, next)
  }

  const decodeAll = (operation: string, rows: ReadonlyArray<RecordRow>) =>
    Effect.forEach(rows, (row) => decodeRecord(operation, row))

  const service: typeof ThreadHistory.Service = {
    append: Effect.fn("ThreadHistory.append")(function* (submissionId, entry, fence, now) {
      const operation = "ThreadHistory.append"
      yield* requireInstant("ThreadHistory.append", now)
      const foreign = foreignFence(submissionId, fence)
      if (foreign !== undefined) return yield* foreign
      const { json } = yield* encodeEntry(operation, entry)
      const nested = Option.isSome(yield* Effect.serviceOption(sql.transactionService))
      const appended = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const snapshot = yield* ledger.checkFence(fence)
            const insert = (sequence: number) =>
              query(operation, historyStatements.append, [
                snapshot.threadId,
                sequence,
                submissionId,
                now,
                json,
              ]).pipe(Effect.as(sequence))
            const remembered = nested ? undefined : nextSequence.get(snapshot.threadId)
            const fromTail = Effect.gen(function* () {
              const [next] = yield* query(operation, historyStatements.nextSequence, [snapshot.threadId])
              return yield* insert(Number(next?.sequence ?? 1))
            })
            const sequence = yield* remembered === undefined
              ? fromTail
              : insert(remembered).pipe(Effect.catch(() => fromTail))
            const record = yield* decodeRecord(operation, {
              thread_id: snapshot.threadId,
              sequence,
              submission_id: submissionId,
              recorded_at: now,
              entry: json,
            })
            return record
          }),
        )
        .pipe(Effect.catchTag("SqlError", (cause) => Effect.fail(storeError(operation)(cause))))
      if (nested) nextSequence.delete(appended.threadId)
      else remember(appended.threadId, appended.sequence + 1)
      return appended
    }),

    forSubmission: Effect.fn("ThreadHistory.forSubmission")(function* (submissionId) {
      const operation = "ThreadHistory.forSubmission"
      return yield* decodeAll(
        operation,
        yield* query(operation, historyStatements.forSubmission, [submissionId]),
      )
    }),

    page: Effect.fn("ThreadHistory.page")(function* (threadId, options) {
      const operation = "ThreadHistory.page"
      const { after, limit } = yield* pageOptions(options)
      const rows = yield* query(operation, historyStatements.page, [threadId, after, limit + 1])
      const records = yield* decodeAll(operation, rows.slice(0, limit))
      const last = records[records.length - 1]
      return rows.length > limit && last !== undefined ? { records, next: last.sequence } : { records }
    }),

    feed: Effect.fn("ThreadHistory.feed")(function* (options) {
      const operation = "ThreadHistory.feed"
      const { after, limit } = yield* pageOptions(options)
      const rows = yield* query(operation, historyStatements.feed, [after, limit])
      const entries = yield* Effect.forEach(rows, (row) =>
        Effect.map(decodeRecord(operation, row), (record) => ({ position: Number(row.position), record })),
      )
      return { entries, last: entries[entries.length - 1]?.position ?? after }
    }),

    feedEnd: Effect.map(query("ThreadHistory.feedEnd", historyStatements.feedEnd, []), (rows) =>
      Number(rows[0]?.position ?? 0),
    ),
  }
  return service
})
