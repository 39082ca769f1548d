/**
 * A small migration runner over an `effect_agent_migrations` table.
 *
 * Migrations are keyed by name, not by a global number, so each module (ledger, history, …)
 * owns its own list without coordinating ids. Each one runs with its bookkeeping row in one
 * storage transaction, so a new incarnation over the same storage skips what already ran (the
 * transaction checks again: another client over the storage may have run it since the read).
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

/**
 * What a list of migrations leads to, for a storage that has none of it: `statements` build the
 * final schema at once, used when none of the list is recorded and none of `tables` exists.
 * @internal
 */
export interface FreshSchema {
  readonly statements: ReadonlyArray<string>
  readonly tables: ReadonlyArray<string>
}

/** Applies the migrations not yet recorded, in order; returns the names applied now. @internal */
export const runMigrations = (
  migrations: ReadonlyArray<Migration>,
  fresh?: FreshSchema,
): Effect.Effect<ReadonlyArray<string>, SqlError, SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    yield* sql.unsafe(
      `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (name TEXT PRIMARY KEY NOT NULL, applied_at REAL NOT NULL)`,
    )
    // One read for the common case, every migration recorded: an Object's constructor pays it.
    const recorded = new Set(
      (yield* sql.unsafe<{ readonly name: string }>(`SELECT name FROM ${MIGRATIONS_TABLE}`)).map((row) =>
        String(row.name),
      ),
    )
    if (fresh !== undefined && migrations.every((migration) => !recorded.has(migration.name))) {
      const created = yield* freshly(migrations, fresh)
      if (created) return migrations.map((migration) => migration.name)
    }
    const applied: Array<string> = []
    for (const migration of migrations) {
      if (recorded.has(migration.name)) continue
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

/**
 * Builds `fresh` and records every migration of the list, in one transaction, when none of its
 * tables exists yet; answers whether it did.
 */
const freshly = (migrations: ReadonlyArray<Migration>, fresh: FreshSchema) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const now = yield* Clock.currentTimeMillis
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const existing = yield* sql.unsafe(
          `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (${fresh.tables.map(() => "?").join(", ")})`,
          fresh.tables,
        )
        const recorded = yield* sql.unsafe(
          `SELECT name FROM ${MIGRATIONS_TABLE} WHERE name IN (${migrations.map(() => "?").join(", ")})`,
          migrations.map((migration) => migration.name),
        )
        if (existing.length > 0 || recorded.length > 0) return false
        for (const statement of fresh.statements) yield* sql.unsafe(statement)
        for (const migration of migrations) {
          yield* sql.unsafe(`INSERT INTO ${MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)`, [
            migration.name,
            now,
          ])
        }
        return true
      }),
    )
  })
