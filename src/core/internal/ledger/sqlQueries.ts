/**
 * The query helpers every part of the SQLite ledger reads through: a statement with its
 * storage failure named after the ledger operation, its first row decoded, a row by id.
 *
 * Rows are remembered decoded while nothing writes the ledger's table (the `ledgerWrites` of its
 * storage's `StorageClock`): a row read by id, or returned by any statement here, is the row's
 * state until the next statement that may write that table, or a rollback, so reading it again
 * in between (across appends to the history and outbox rows) returns it without a statement or a
 * decode.
 * An Attempt reads its row before each call and again to check the fence of the record it
 * appends; a selection reads the lane heads the finish reads again.
 */
import { Effect, Option, type Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { SubmissionId } from "../../Identifiers.ts"
import { ledgerWritesAfter, rowsRunner, type StorageClock, storageClock } from "../directRows.ts"
import { LedgerError, type SubmissionSnapshot } from "./model.ts"
import { decodeRow, statements } from "./sqlStatements.ts"
import type { Row } from "./sqlStatements.ts"

/** @internal */
export const storageError = (operation: string) => (cause: SqlError | Schema.SchemaError) =>
  new LedgerError({ operation, message: `storage failed: ${cause.message}`, cause })

/** Runs `effect` in one storage transaction, a storage failure named after `operation`. @internal */
export type LedgerTransaction = <A, E>(
  operation: string,
  effect: Effect.Effect<A, E>,
) => Effect.Effect<A, E | LedgerError>

/** @internal */
export const numberOr = (value: unknown, fallback: number) =>
  value === null || value === undefined ? fallback : Number(value)

/** Entries a memo holds at most; past that it starts over (reads of ids with no row add entries). */
const MEMO_LIMIT = 256

/**
 * What was read since the ledger's table was last written: rows by id (`none` for an id with no
 * row) and the answers of other reads by key. Both are dropped as soon as its count moves, and a
 * read is kept only if the count has not moved since its statement (another fiber may have
 * written while the reader decoded).
 */
const readMemo = (clock: StorageClock) => {
  let at = clock.ledgerWrites
  const rows = new Map<SubmissionId, Option.Option<SubmissionSnapshot>>()
  const answers = new Map<string, Option.Option<SubmissionSnapshot>>()
  const current = () => {
    if (clock.ledgerWrites !== at) {
      rows.clear()
      answers.clear()
      at = clock.ledgerWrites
    }
  }
  const keep =
    <K>(map: Map<K, Option.Option<SubmissionSnapshot>>) =>
    (key: K, value: Option.Option<SubmissionSnapshot>, readAt: number | undefined) => {
      current()
      if (readAt !== at) return
      if (map.size >= MEMO_LIMIT) map.clear()
      map.set(key, value)
    }
  return {
    row: (id: SubmissionId) => {
      current()
      return rows.get(id)
    },
    answer: (key: string) => {
      current()
      return answers.get(key)
    },
    keepRow: keep(rows),
    keepAnswer: keep(answers),
  }
}

/** The helpers over one `SqlClient`. @internal */
export const makeSqlQueries = (sql: SqlClient) => {
  const rows = rowsRunner(sql)
  const clock = storageClock(sql)
  // Without a clock (another driver) nothing is remembered.
  const memo = clock === undefined ? undefined : readMemo(clock)

  const query = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    rows<Row>(text, params).pipe(Effect.mapError(storageError(operation)))

  /**
   * The first of `found` (rows a statement just returned) decoded, or as already decoded since
   * the last write of the ledger's table.
   */
  const decodedFirst = (
    operation: string,
    found: ReadonlyArray<Row>,
  ): Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError> => {
    const row = found[0]
    if (row === undefined) return Effect.succeed(Option.none())
    const id = row.submission_id as SubmissionId
    const readAt = ledgerWritesAfter.get(found)
    // The decode of this very row, when nothing wrote the ledger's table since the statement.
    const seen = readAt === clock?.ledgerWrites ? memo?.row(id) : undefined
    if (seen !== undefined && Option.isSome(seen)) return Effect.succeed(seen)
    return Effect.map(decodeRow(operation)(row), (snapshot) => {
      const value = Option.some(snapshot)
      memo?.keepRow(id, value, readAt)
      return value
    })
  }

  const first = (
    operation: string,
    text: string,
    params: ReadonlyArray<unknown>,
  ): Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError> =>
    Effect.flatMap(query(operation, text, params), (found) => decodedFirst(operation, found))

  /** The row of `submissionId`: known since the last write of the ledger's table, or read. */
  const lookup = (
    operation: string,
    submissionId: SubmissionId,
  ): Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError> =>
    Effect.suspend(() => {
      const seen = memo?.row(submissionId)
      if (seen !== undefined) return Effect.succeed(seen)
      return Effect.flatMap(query(operation, statements.byId, [submissionId]), (found) => {
        if (found.length === 0) memo?.keepRow(submissionId, Option.none(), ledgerWritesAfter.get(found))
        return decodedFirst(operation, found)
      })
    })

  const byId = (operation: string, submissionId: SubmissionId) =>
    Effect.map(lookup(operation, submissionId), Option.getOrUndefined)

  /**
   * `read`'s answer for `key`: known since the last write of the ledger's table, or read. `read`
   * must only read that table: its answer is kept if nothing wrote it from before it started
   * until it ended.
   */
  const remembered = <E>(
    key: string,
    read: Effect.Effect<Option.Option<SubmissionSnapshot>, E>,
  ): Effect.Effect<Option.Option<SubmissionSnapshot>, E> =>
    memo === undefined
      ? read
      : Effect.suspend(() => {
          const seen = memo.answer(key)
          if (seen !== undefined) return Effect.succeed(seen)
          const readAt = clock?.ledgerWrites
          return Effect.map(read, (answer) => {
            memo.keepAnswer(key, answer, readAt)
            return answer
          })
        })

  return { query, decodedFirst, first, lookup, byId, remembered, clock }
}

/** @internal */
export type SqlQueries = ReturnType<typeof makeSqlQueries>
