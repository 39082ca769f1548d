/**
 * A small migration runner over an `effect_agent_migrations` table.
 *
 * Migrations are keyed by name, not by a global number, so each module (ledger, history, …)
 * owns its own list without coordinating ids. Each one runs with its bookkeeping row in one
 * storage transaction, so a new incarnation over the same storage skips what already ran.
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"

/** One named schema change. @internal */
export interface Migration {
  /** Unique across the Object, e.g. `submission-ledger/001-create`. */
  readonly name: string
  readonly statements: ReadonlyArray<string>
}

/** @internal */
export const MIGRATIONS_TABLE = "effect_agent_migrations"

/** Applies the migrations not yet recorded, in order; returns the names applied now. @internal */
export const runMigrations = (
  migrations: ReadonlyArray<Migration>,
): Effect.Effect<ReadonlyArray<string>, SqlError, SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    yield* sql.unsafe(
      `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (name TEXT PRIMARY KEY NOT NULL, applied_at REAL NOT NULL)`,
    )
    const applied: Array<string> = []
    for (const migration of migrations) {
      const now = yield* Clock.currentTimeMillis
      const ran = yield* sql.withTransaction(
        Effect.gen(function* () {
          const done = yield* sql.unsafe(`SELECT name FROM ${MIGRATIONS_TABLE} WHERE name = ?`, [
            migration.name,
          ])
          if (done.length > 0) return false
          for (const statement of migration.statements) yield* sql.unsafe(statement)
          yield* sql.unsafe(`INSERT INTO ${MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)`, [
            migration.name,
            now,
          ])
          return true
        }),
      )
      if (ran) applied.push(migration.name)
    }
    return applied
  })
