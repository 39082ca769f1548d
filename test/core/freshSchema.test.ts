import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runMigrations, MIGRATIONS_TABLE } from "../../src/core/internal/migrations.ts"
import { freshStoreSchema, META_TABLE, storeMigrations } from "../../src/core/internal/schema.ts"
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { inObject } from "./SubmissionLedgerHarness.ts"

/** Everything about the schema that queries and writes depend on, comparable across Objects. */
const schemaOf = (storage: DurableObjectStorage) => {
  const rows = <A>(text: string, ...params: Array<string>) =>
    storage.sql.exec(text, ...params).toArray() as unknown as Array<A>
  const tables = rows<{ name: string; sql: string }>(
    "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE 'effect_agent%' ORDER BY name",
  )
  return {
    tables: tables.map(({ name, sql }) => ({
      name,
      withoutRowid: /WITHOUT ROWID\s*$/i.test(sql),
      columns: rows<Record<string, unknown>>(
        'SELECT cid, name, type, "notnull", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid',
        name,
      ),
    })),
    // An index's statement is kept as written: the same text means the same keys and filter.
    indexes: rows<{ name: string; tbl_name: string; sql: string }>(
      "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name",
    ).map((index) => ({ ...index, sql: index.sql.replace(/\s+/g, " ") })),
    // Every key, and every value but the salt (random on both roads).
    meta: rows<{ key: string; value: string }>(`SELECT key, value FROM ${META_TABLE} ORDER BY key`).map(
      (row) => (row.key === "submission-id-salt" ? { key: row.key, set: row.value.length === 32 } : row),
    ),
    migrations: rows<{ name: string }>(`SELECT name FROM ${MIGRATIONS_TABLE} ORDER BY name`).map(
      (row) => row.name,
    ),
  }
}

describe("the store's fresh schema", () => {
  it.effect("is the schema every migration leads to, and is built only on a storage without it", () =>
    Effect.gen(function* () {
      const migrated = yield* inObject((storage) =>
        Effect.provide(
          Effect.map(runMigrations(storeMigrations), (applied) => ({ applied, schema: schemaOf(storage) })),
          sqlClientLayer(storage),
        ),
      )
      const fresh = yield* inObject((storage) =>
        Effect.provide(
          Effect.gen(function* () {
            const applied = yield* runMigrations(storeMigrations, freshStoreSchema)
            // A second run over the same storage finds everything recorded.
            const again = yield* runMigrations(storeMigrations, freshStoreSchema)
            return { applied, again, schema: schemaOf(storage) }
          }),
          sqlClientLayer(storage),
        ),
      )
      expect(migrated.applied).toEqual(storeMigrations.map((migration) => migration.name))
      expect(fresh.applied).toEqual(migrated.applied)
      expect(fresh.again).toEqual([])
      expect(fresh.schema.tables.length).toBeGreaterThan(5)
      expect(fresh.schema).toEqual(migrated.schema)
    }),
  )

  it.effect("leaves a storage that has the tables of an older release to the migrations", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          // The first migration alone, as an early release left it, then the fresh road is refused.
          yield* runMigrations(storeMigrations.slice(0, 1))
          const applied = yield* runMigrations(storeMigrations, freshStoreSchema)
          expect(applied).toEqual(storeMigrations.slice(1).map((migration) => migration.name))
        }),
        sqlClientLayer(storage),
      ),
    ),
  )
})
