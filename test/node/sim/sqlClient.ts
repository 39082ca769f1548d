/**
 * A `SqlClient` stand-in for the simulated Object. The maintenance code uses only `reserve`
 * (hold the single SQLite connection around a short storage operation) and `transactionService`
 * (am I inside an SQL transaction?). This client is built by Effect's own `SqlClient.make` over
 * one connection shared through a semaphore, as the SQLite drivers do, so both behave as in
 * production; the connection accepts transaction control statements and refuses every query,
 * because the simulated ledger and history keep no SQL tables.
 */
import { Effect, Layer, Semaphore, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "effect/sql"

const control = /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i

const run = (sql: string): Effect.Effect<ReadonlyArray<never>, SqlError.SqlError> =>
  control.test(sql)
    ? Effect.succeed([])
    : Effect.fail(
        new SqlError.SqlError({
          reason: new SqlError.UnknownError({
            cause: sql,
            message: "the simulated Object has no SQL tables",
            operation: "execute",
          }),
        }),
      )

const connection: SqlConnection.Connection = {
  execute: (sql) => run(sql),
  executeRaw: (sql) => run(sql),
  executeStream: (sql) => Stream.fromEffect(run(sql)).pipe(Stream.flatMap(Stream.fromIterable)),
  executeValues: (sql) => run(sql),
  executeValuesUnprepared: (sql) => run(sql),
  executeUnprepared: (sql) => run(sql),
}

/** A fresh client of one incarnation: its own connection semaphore. */
export const simSqlClient: Layer.Layer<SqlClient.SqlClient> = Layer.effect(
  SqlClient.SqlClient,
  Effect.gen(function* () {
    const semaphore = yield* Semaphore.make(1)
    const acquirers = SqlClient.makeSqliteAcquirers({ connection: Effect.succeed(connection), semaphore })
    return yield* SqlClient.make({
      ...acquirers,
      compiler: Statement.makeCompilerSqlite(),
      driver: "simulation",
      spanAttributes: [],
    })
  }),
).pipe(Layer.provide(Reactivity.layer))
