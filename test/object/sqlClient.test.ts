import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { inObject, objectName } from "../alarm/harness.ts"
import { incarnation } from "../support/incarnation.ts"

class Label extends Context.Service<Label, string>()("test/sqlClient/Label") {}

/** A client over `ctx`'s storage with a fresh `notes` table, and a reader of its rows. */
const notes = (ctx: DurableObjectState) =>
  Effect.gen(function* () {
    const sql = yield* Effect.provide(Effect.service(SqlClient), sqlClientLayer(ctx.storage))
    yield* sql.unsafe("CREATE TABLE notes (label TEXT NOT NULL)")
    const insert = (label: string) => sql`INSERT INTO notes (label) VALUES (${label})`
    const rows = () =>
      ctx.storage.sql
        .exec<{ label: string }>("SELECT label FROM notes ORDER BY rowid")
        .toArray()
        .map((row) => row.label)
    return { sql, insert, rows }
  })

const defectMessage = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "succeeded"

describe("the Durable Object SqlClient", () => {
  it.effect("commits a transaction's statements and returns its value", () =>
    inObject(objectName("sql-commit"), (ctx) =>
      Effect.gen(function* () {
        const { sql, insert, rows } = yield* notes(ctx)
        const value = yield* sql.withTransaction(Effect.as(Effect.andThen(insert("a"), insert("b")), 7))
        expect(value).toBe(7)
        expect(rows()).toEqual(["a", "b"])
        const selected = yield* sql<{ label: string }>`SELECT label FROM notes WHERE label = ${"b"}`
        expect(selected).toEqual([{ label: "b" }])
      }),
    ),
  )

  it.effect("rolls back on a failure and returns the same failure", () =>
    inObject(objectName("sql-rollback"), (ctx) =>
      Effect.gen(function* () {
        const { sql, insert, rows } = yield* notes(ctx)
        const failed = yield* Effect.flip(sql.withTransaction(Effect.andThen(insert("a"), Effect.fail("no"))))
        expect(failed).toBe("no")
        const died = yield* Effect.exit(sql.withTransaction(Effect.andThen(insert("b"), Effect.die("boom"))))
        expect(defectMessage(died)).toContain("boom")
        expect(rows()).toEqual([])
      }),
    ),
  )

  it.effect("a nested transaction that fails rolls back only itself when the outer one recovers", () =>
    inObject(objectName("sql-nested"), (ctx) =>
      Effect.gen(function* () {
        const { sql, insert, rows } = yield* notes(ctx)
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* insert("outer")
            const inner = yield* Effect.flip(
              sql.withTransaction(Effect.andThen(insert("inner"), Effect.fail("x"))),
            )
            expect(inner).toBe("x")
            yield* sql.withTransaction(insert("kept"))
          }),
        )
        expect(rows()).toEqual(["outer", "kept"])
      }),
    ),
  )

  it.effect("a body that waits is rolled back as a defect naming the rule, and leaves nothing", () =>
    inObject(objectName("sql-waits"), (ctx) =>
      Effect.gen(function* () {
        const { sql, insert, rows } = yield* notes(ctx)
        for (const wait of [
          Effect.never,
          Effect.sleep("1 millis"),
          Effect.promise(() => Promise.resolve()),
        ]) {
          const exit = yield* Effect.exit(sql.withTransaction(Effect.andThen(insert("lost"), wait)))
          expect(defectMessage(exit)).toMatch(/must be synchronous/)
        }
        expect(rows()).toEqual([])
        // The client stays usable.
        yield* sql.withTransaction(insert("after"))
        expect(rows()).toEqual(["after"])
      }),
    ),
  )

  it.effect("the body runs with the caller's services", () =>
    inObject(objectName("sql-services"), (ctx) =>
      Effect.gen(function* () {
        const { sql, insert, rows } = yield* notes(ctx)
        yield* sql
          .withTransaction(
            Effect.gen(function* () {
              return yield* insert(yield* Label)
            }),
          )
          .pipe(Effect.provideService(Label, "from the caller"))
        expect(rows()).toEqual(["from the caller"])
      }),
    ),
  )

  it.effect("is the SqlClient an incarnation's ledger, history and outbox run on", () =>
    inObject(objectName("sql-platform"), (ctx) =>
      Effect.gen(function* () {
        const { context } = yield* incarnation(ctx)
        expect(Context.get(context, SqlClient).driver).toBe("durable-object-sqlite")
      }),
    ),
  )
})
