/**
 * The query helpers every part of the SQLite ledger reads through: a statement with its
 * storage failure named after the ledger operation, its first row decoded, a row by id.
 */
import { Effect, Option, type Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { SubmissionId } from "../../Identifiers.ts"
import { rowsRunner } from "../directRows.ts"
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

/** The helpers over one `SqlClient`. @internal */
export const makeSqlQueries = (sql: SqlClient) => {
  const rows = rowsRunner(sql)
  const query = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    rows<Row>(text, params).pipe(Effect.mapError(storageError(operation)))

  const first = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    Effect.flatMap(query(operation, text, params), (rows) =>
      rows[0] === undefined
        ? Effect.succeed(Option.none<SubmissionSnapshot>())
        : Effect.map(decodeRow(operation)(rows[0]), Option.some),
    )

  const byId = (operation: string, submissionId: SubmissionId) =>
    Effect.map(first(operation, statements.byId, [submissionId]), Option.getOrUndefined)

  return { query, first, byId }
}

/** @internal */
export type SqlQueries = ReturnType<typeof makeSqlQueries>
