/**
 * The canonical history on Durable Object SQLite. An append runs the ledger's fence check and
 * the insert in one storage transaction and writes one row for all the records it appends (see
 * `schema.ts`); the row takes the next sequence from its Thread's newest row, so sequences stay
 * 1-based and gap-free. The appended records are built from what was inserted rather than read
 * back: every row read is billed.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { ThreadStoreError } from "../runtime/shared/model.ts"
import type { ThreadHistory } from "../../ThreadHistory.ts"
import { SubmissionLedger } from "../../SubmissionLedger.ts"
import { appendOne, encodeEntry, feedOptions, foreignFence, pageOptions, requireInstant } from "./codec.ts"
import type { FeedEntry } from "./model.ts"
import { runMigrations } from "../migrations.ts"
import { freshStoreSchema, storeMigrations } from "../schema.ts"
import { decodeRow, rowStatements, type StoredRow, writeRow } from "./sqlRows.ts"
import { rowsRunner, storageClock } from "../directRows.ts"
import { forgetJournal, keepJournal, knownJournal } from "./journals.ts"
import { knownObjectEnd } from "./ends.ts"
import type { SubmissionId } from "../../Identifiers.ts"
import { eventIdStatements } from "./eventIds.ts"

/** A row of the index of event ids, as the lookup returns it. */
interface EventRow {
  readonly event: unknown
}

/** The ledger row's figures a journal read returns before its rows. */
interface JournalFigures {
  readonly journal_from: unknown
  readonly journal_closed: unknown
  readonly thread_last: unknown
}

const storeError = (operation: string) => (cause: SqlError) =>
  new ThreadStoreError({ operation, message: `storage failed: ${cause.message}`, cause })

/** Builds the SQLite history and runs its migrations. @internal */
export const makeSqlHistory = Effect.gen(function* () {
  const sql = yield* SqlClient
  const ledger = yield* SubmissionLedger
  yield* runMigrations(storeMigrations, freshStoreSchema).pipe(
    Effect.mapError(storeError("ThreadHistory.migrate")),
  )

  const rows = rowsRunner(sql)
  const query = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    rows<StoredRow>(text, params).pipe(Effect.mapError(storeError(operation)))

  /** The records of stored rows (of `kinds` only, when given), with their feed positions, oldest first. */
  const expand = (operation: string, rows: ReadonlyArray<StoredRow>, kinds?: ReadonlySet<string>) =>
    Effect.map(
      Effect.forEach(rows, (row) => decodeRow(operation, row, kinds)),
      (all): ReadonlyArray<FeedEntry> => all.flat(),
    )

  const clock = storageClock(sql)

  /**
   * A Submission's stored rows after sequence `after`, with its start, its Thread's last sequence
   * and whether its journal is closed (it settled); `undefined` for no such Submission.
   */
  const journalAfter = (operation: string, submissionId: SubmissionId, after: number) =>
    Effect.map(query(operation, rowStatements.forSubmission, [after, submissionId]), (rows) => {
      const head = rows[0] as (StoredRow & JournalFigures) | undefined
      if (head === undefined) return undefined
      const stored = rows.filter((row) => row.sequence !== null)
      return {
        from: Number(head.journal_from),
        closed: Number(head.journal_closed) === 1,
        // Every row of the Thread up to its last one was in the range read: a later row takes a
        // later sequence.
        through: head.thread_last === null ? undefined : Number(head.thread_last),
        rows: stored,
        characters: stored.reduce((sum, row) => sum + String(row.entries).length, 0),
      }
    })

  /** The records of a Submission's stored rows. */
  const recordsOf = (operation: string, rows: ReadonlyArray<StoredRow>) =>
    Effect.map(expand(operation, rows), (entries) => entries.map((entry) => entry.record))

  const appendAll: typeof ThreadHistory.Service.appendAll = spanned("ThreadHistory.append")(
    function* (submissionId, entries, fence, now) {
      const operation = "ThreadHistory.append"
      yield* requireInstant(operation, now)
      const foreign = foreignFence(submissionId, fence)
      if (foreign !== undefined) return yield* foreign
      if (entries.length === 0) {
        return yield* new ThreadStoreError({ operation, message: "an append needs at least one record" })
      }
      const encoded = yield* Effect.forEach(entries, (entry) => encodeEntry(operation, entry))
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const snapshot = yield* ledger.checkFence(fence)
            return yield* writeRow(sql, operation, {
              threadId: snapshot.threadId,
              submissionId,
              queueSequence: snapshot.queueSequence,
              entries: encoded,
              now,
              admits: 0,
            })
          }),
        )
        .pipe(Effect.catchTag("SqlError", (cause) => Effect.fail(storeError(operation)(cause))))
    },
  )

  const service: typeof ThreadHistory.Service = {
    append: appendOne(appendAll),

    appendAll,

    forSubmission: spanned("ThreadHistory.forSubmission")(function* (submissionId) {
      const operation = "ThreadHistory.forSubmission"
      const whole = Effect.flatMap(journalAfter(operation, submissionId, 0), (read) =>
        recordsOf(operation, read?.rows ?? []),
      )
      if (clock === undefined) return yield* whole
      // A journal read before continues from the Thread's end then (see `journals.ts`).
      const rollbacks = clock.rollbacks
      const known = knownJournal(clock, submissionId)
      const read = yield* journalAfter(operation, submissionId, known?.through ?? 0)
      if (read === undefined) {
        forgetJournal(clock, submissionId)
        return []
      }
      if (known !== undefined && (known.from !== read.from || clock.rollbacks !== rollbacks)) {
        // A rollback before the read may have undone rows remembered, or the Submission's start
        // moved (not something the runtime does): read it whole.
        forgetJournal(clock, submissionId)
        return yield* whole
      }
      const rows = known === undefined ? read.rows : [...known.rows, ...read.rows]
      if (read.closed) forgetJournal(clock, submissionId)
      else {
        keepJournal(clock, rollbacks, submissionId, {
          from: read.from,
          through: Math.max(read.through ?? 0, known?.through ?? 0),
          rows,
          characters: (known?.characters ?? 0) + read.characters,
        })
      }
      // Decoded on every read: no two reads share a record a program could change.
      return yield* recordsOf(operation, rows)
    }),

    forSubmissionAfter: spanned("ThreadHistory.forSubmissionAfter")(function* (submissionId, after) {
      const operation = "ThreadHistory.forSubmissionAfter"
      // Not kept in the journals' memory: a read of part of a journal, and it writes nothing.
      const stored = yield* query(operation, rowStatements.forSubmissionAfter, [after, submissionId])
      const records = yield* recordsOf(
        operation,
        stored.filter((row) => row.sequence !== null),
      )
      return {
        records: records.filter((record) => record.sequence > after),
        lastSequence: records.at(-1)?.sequence ?? 0,
      }
    }),

    eventReceived: (submissionId, eventId) =>
      rows<EventRow>(eventIdStatements.lookup, [submissionId, eventId]).pipe(
        Effect.mapError(storeError("ThreadHistory.eventReceived")),
        Effect.map((found) => (found[0] === undefined ? Option.none() : Option.some(String(found[0].event)))),
      ),

    page: spanned("ThreadHistory.page")(function* (threadId, options) {
      const operation = "ThreadHistory.page"
      const { after, limit } = yield* pageOptions(options)
      // Every row holds at least one record: limit + 1 rows tell whether more follow.
      const rows = yield* query(operation, rowStatements.page(limit + 1), [
        threadId,
        threadId,
        after + 1,
        after + 1,
      ])
      const all = (yield* expand(operation, rows))
        .map((entry) => entry.record)
        .filter((record) => record.sequence > after)
      const records = all.slice(0, limit)
      const last = records[records.length - 1]
      return all.length > limit && last !== undefined ? { records, next: last.sequence } : { records }
    }),

    feed: spanned("ThreadHistory.feed")(function* (options) {
      const operation = "ThreadHistory.feed"
      const { after, limit, kinds } = yield* feedOptions(options)
      const rows = yield* query(operation, rowStatements.feed(limit), [after + 1, after + 1])
      // The page covers the first `limit` records after `after`, whatever their kinds.
      const covered = rows
        .flatMap((row) =>
          Array.from({ length: Number(row.records) }, (_, index) => Number(row.position) + index),
        )
        .filter((position) => position > after)
        .slice(0, limit)
      const last = covered[covered.length - 1] ?? after
      const entries = (yield* expand(operation, rows, kinds)).filter(
        (entry) => entry.position > after && entry.position <= last,
      )
      return { entries, last }
    }),

    feedEnd: Effect.suspend(() => {
      // The end the last append left, while the memory holds it (see `ends.ts`).
      const known = clock === undefined ? undefined : knownObjectEnd(clock)
      return known !== undefined
        ? Effect.succeed(known.nextPosition - 1)
        : Effect.map(query("ThreadHistory.feedEnd", rowStatements.feedEnd, []), (rows) =>
            Number(rows[0]?.position ?? 0),
          )
    }),
  }
  return service
})
