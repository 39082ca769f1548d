/**
 * The outbox on Durable Object SQLite. The table is keyed by message id without a rowid (each
 * insert writes one table row and one index entry); a partial index over unacknowledged rows
 * ordered by due time serves both the due page and the next deadline, so acknowledged rows are
 * never read again. Rows are kept after acknowledgement: enqueueing an acknowledged id again
 * (a repaired fact) then sends nothing.
 *
 * Only this Object's own runtime enqueues, through this instance, so once a read finds nothing
 * left to send the instance remembers it until it enqueues again: a caught-up pass of an
 * Object that sends nothing reads no outbox row. A fresh incarnation reads once, as it opens.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option } from "effect"
import { nothingStored } from "../nothingStored.ts"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type { MessageOutbox } from "../../MessageOutbox.ts"
import { SubmissionLedger } from "../../SubmissionLedger.ts"
import { ThreadHistory } from "../../ThreadHistory.ts"
import { requireInstant } from "../history/codec.ts"
import { runMigrations, type Migration } from "../migrations.ts"
import {
  decodeReply,
  decodeStored,
  encodeNew,
  encodeReply,
  errorText,
  outboxError,
  requireFinite,
} from "./codec.ts"
import { messageIds, type NewMessage } from "./model.ts"
import type { RetentionItem } from "../ledger/retention.ts"
import { rowsRunner } from "../directRows.ts"
import { rowLimit } from "../sqlLimit.ts"

/** @internal */
export const OUTBOX_TABLE = "effect_agent_outbox"

const o = OUTBOX_TABLE

/** @internal The answers a receiver remembers. */
export const ANSWERS_TABLE = "effect_agent_answers"

const answers = ANSWERS_TABLE

/** @internal */
export const outboxMigrations: ReadonlyArray<Migration> = [
  {
    name: "message-outbox/001-create",
    statements: [
      `CREATE TABLE IF NOT EXISTS ${o} (
        message_id TEXT PRIMARY KEY NOT NULL,
        target TEXT NOT NULL,
        message TEXT NOT NULL,
        depends_on TEXT,
        attempts INTEGER NOT NULL,
        next_attempt_at REAL NOT NULL,
        created_at REAL NOT NULL,
        acknowledged_at REAL,
        last_error TEXT
      ) WITHOUT ROWID`,
      `CREATE INDEX IF NOT EXISTS ${o}_due ON ${o} (next_attempt_at) WHERE acknowledged_at IS NULL`,
      `CREATE TABLE IF NOT EXISTS ${answers} (
        message_id TEXT PRIMARY KEY NOT NULL,
        reply TEXT NOT NULL,
        answered_at REAL NOT NULL
      ) WITHOUT ROWID`,
    ],
  },
]

/** A row may be sent once the message it depends on is acknowledged. */
const sendable = `acknowledged_at IS NULL AND (depends_on IS NULL OR EXISTS (
  SELECT 1 FROM ${o} AS first WHERE first.message_id = ${o}.depends_on AND first.acknowledged_at IS NOT NULL))`

/** @internal */
export const outboxStatements = {
  // Parameters: id, target, message, depends on, due at, created at.
  insert: `INSERT OR IGNORE INTO ${o} (message_id, target, message, depends_on, attempts, next_attempt_at, created_at)
    VALUES (?, ?, ?, ?, 0, ?, ?)`,
  // At most `rows` of them. Parameter: now.
  due: (rows: number) =>
    `SELECT * FROM ${o} WHERE ${sendable} AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ${rowLimit(rows)}`,
  nextDue: `SELECT next_attempt_at FROM ${o} WHERE ${sendable} ORDER BY next_attempt_at LIMIT 1`,
  // Parameters: next attempt at, error, id.
  retry: `UPDATE ${o} SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?
    WHERE message_id = ? AND acknowledged_at IS NULL`,
  // Parameters: now, id.
  acknowledge: `UPDATE ${o} SET acknowledged_at = ? WHERE message_id = ? AND acknowledged_at IS NULL`,
  byId: `SELECT * FROM ${o} WHERE message_id = ?`,
  // Parameters: id, reply, now.
  remember: `INSERT OR IGNORE INTO ${answers} (message_id, reply, answered_at) VALUES (?, ?, ?)`,
  answer: `SELECT reply FROM ${answers} WHERE message_id = ?`,
  // The messages a Submission sent: two key ranges and one key. Parameters: (from, to) ×2, id.
  sentBy: `SELECT * FROM ${o} WHERE message_id > ? AND message_id < ?
    UNION ALL SELECT * FROM ${o} WHERE message_id > ? AND message_id < ?
    UNION ALL SELECT * FROM ${o} WHERE message_id = ?`,
  deleteAcknowledged: `DELETE FROM ${o} WHERE message_id = ? AND acknowledged_at IS NOT NULL`,
} as const

/** The key ranges and key of the messages `submissionId` sent (`:` sorts just before `;`). */
const sentByParams = (submissionId: string) => [
  `admit:${submissionId}:`,
  `admit:${submissionId};`,
  `abort:${submissionId}:`,
  `abort:${submissionId};`,
  messageIds.childSettled(submissionId),
]

const storageError = (operation: string) => (cause: SqlError) =>
  outboxError(operation, `storage failed: ${cause.message}`)(cause)

/** Builds the SQLite outbox and runs its migration. @internal */
export const makeSqlOutbox = Effect.gen(function* () {
  const sql = yield* SqlClient
  const history = yield* ThreadHistory
  const ledger = yield* SubmissionLedger
  yield* runMigrations(outboxMigrations).pipe(Effect.mapError(storageError("MessageOutbox.migrate")))

  const rows = rowsRunner(sql)
  const query = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    rows(text, params).pipe(Effect.mapError(storageError(operation)))

  /**
   * Whether a read found nothing left to send since this instance last enqueued. Read once as
   * the outbox opens (with its migrations), so a caught-up pass runs no statement at all.
   */
  const nothingToSend = nothingStored(
    (yield* query("MessageOutbox.open", outboxStatements.nextDue, [])).length === 0,
  )

  const insertAll = (operation: string, messages: ReadonlyArray<NewMessage>, now: number) =>
    Effect.forEach(
      messages,
      (message) =>
        Effect.flatMap(encodeNew(operation, message), ({ messageJson, targetJson }) =>
          query(operation, outboxStatements.insert, [
            message.messageId,
            targetJson,
            messageJson,
            message.dependsOn ?? null,
            now,
            now,
          ]),
        ),
      { discard: true },
    )

  /** Runs `write` and enqueues `messages` in one storage transaction (nested writes join it). */
  const withMessages = <A, E>(
    operation: string,
    write: Effect.Effect<A, E>,
    messages: ReadonlyArray<NewMessage>,
    now: number,
  ) => {
    // Before the write: a rolled-back one only costs a later read.
    if (messages.length > 0) nothingToSend.writing()
    return sql
      .withTransaction(Effect.tap(write, () => insertAll(operation, messages, now)))
      .pipe(Effect.catchIf(isSqlError, (cause) => Effect.fail(storageError(operation)(cause))))
  }

  const sentMessages = (operation: string, submissionId: string) =>
    Effect.flatMap(query(operation, outboxStatements.sentBy, sentByParams(submissionId)), (rows) =>
      Effect.forEach(rows, (row) => decodeStored(operation, row)),
    )

  const service: typeof MessageOutbox.Service = {
    appendWithMessages: spanned("MessageOutbox.appendWithMessages")(
      function* (submissionId, entries, fence, now, messages) {
        const operation = "MessageOutbox.appendWithMessages"
        yield* requireInstant(operation, now)
        return yield* withMessages(
          operation,
          history.appendAll(submissionId, entries, fence, now),
          messages,
          now,
        )
      },
    ),

    settleWithMessages: spanned("MessageOutbox.settleWithMessages")(
      function* (fence, settlement, preceding, messages) {
        return yield* withMessages(
          "MessageOutbox.settleWithMessages",
          ledger.settle(fence, settlement, preceding),
          messages,
          settlement.settledAt,
        )
      },
    ),

    enqueue: spanned("MessageOutbox.enqueue")(function* (messages, now) {
      const operation = "MessageOutbox.enqueue"
      yield* requireFinite(operation, { now })
      if (messages.length > 0) nothingToSend.writing()
      yield* sql
        .withTransaction(insertAll(operation, messages, now))
        .pipe(Effect.catchTag("SqlError", (cause) => Effect.fail(storageError(operation)(cause))))
    }),

    due: spanned("MessageOutbox.due")(function* (now, limit) {
      const operation = "MessageOutbox.due"
      yield* requireFinite(operation, { now, limit })
      if (nothingToSend.known()) return []
      const rows = yield* query(operation, outboxStatements.due(limit), [now])
      return yield* Effect.forEach(rows, (row) => decodeStored(operation, row))
    }),

    // Nothing sendable means nothing unacknowledged: a dependency is itself always sendable.
    nextDue: Effect.suspend(() =>
      nothingToSend.known()
        ? Effect.succeed(Option.none<number>())
        : Effect.map(
            nothingToSend.read(
              query("MessageOutbox.nextDue", outboxStatements.nextDue, []),
              (rows) => rows.length === 0,
            ),
            (rows) =>
              rows[0] === undefined ? Option.none<number>() : Option.some(Number(rows[0]["next_attempt_at"])),
          ),
    ),

    retry: spanned("MessageOutbox.retry")(function* (messageId, failure) {
      const operation = "MessageOutbox.retry"
      yield* requireFinite(operation, { nextAttemptAt: failure.nextAttemptAt })
      yield* query(operation, outboxStatements.retry, [
        failure.nextAttemptAt,
        errorText(failure.error),
        messageId,
      ])
    }),

    acknowledge: spanned("MessageOutbox.acknowledge")(function* (messageId, now) {
      const operation = "MessageOutbox.acknowledge"
      yield* requireFinite(operation, { now })
      yield* query(operation, outboxStatements.acknowledge, [now, messageId])
    }),

    lookup: spanned("MessageOutbox.lookup")(function* (messageId) {
      const operation = "MessageOutbox.lookup"
      const [row] = yield* query(operation, outboxStatements.byId, [messageId])
      return row === undefined ? Option.none() : Option.some(yield* decodeStored(operation, row))
    }),

    rememberAnswer: spanned("MessageOutbox.rememberAnswer")(function* (messageId, reply, now) {
      const operation = "MessageOutbox.rememberAnswer"
      yield* requireFinite(operation, { now })
      const json = yield* encodeReply(operation, reply)
      yield* query(operation, outboxStatements.remember, [messageId, json, now])
    }),

    answerOf: spanned("MessageOutbox.answerOf")(function* (messageId) {
      const operation = "MessageOutbox.answerOf"
      const [row] = yield* query(operation, outboxStatements.answer, [messageId])
      return row === undefined ? Option.none() : Option.some(yield* decodeReply(operation, row["reply"]))
    }),

    messagesOf: spanned("MessageOutbox.messagesOf")(function* (submissionId) {
      return yield* sentMessages("MessageOutbox.messagesOf", submissionId)
    }),

    removeSettled: spanned("MessageOutbox.removeSettled")(function* (items) {
      const operation = "MessageOutbox.removeSettled"
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const ready: Array<RetentionItem> = []
            const sent = new Map<string, ReadonlyArray<Record<string, unknown>>>()
            for (const item of items) {
              const rows = yield* query(operation, outboxStatements.sentBy, sentByParams(item.submissionId))
              if (rows.some((row) => row["acknowledged_at"] === null)) continue
              sent.set(item.submissionId, rows)
              ready.push(item)
            }
            const removed = yield* ledger.removeSettled(ready)
            for (const id of removed) {
              for (const row of sent.get(id) ?? []) {
                yield* query(operation, outboxStatements.deleteAcknowledged, [row["message_id"]])
              }
            }
            return removed
          }),
        )
        .pipe(Effect.catchIf(isSqlError, (cause) => Effect.fail(storageError(operation)(cause))))
    }),
  }
  return service
})
