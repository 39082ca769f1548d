/**
 * `SqlClient` over a Durable Object's SQLite storage whose transactions are synchronous.
 *
 * `sql.exec` is synchronous, so a transaction body made of statements needs no event-loop
 * turn: `withTransaction` runs the body to completion inside `storage.transactionSync` (a
 * nested one is a savepoint there). An asynchronous `storage.transaction` costs a promise
 * round trip per commit and holds the input gate across turns; a synchronous one costs a few
 * microseconds and cannot interleave with another fiber by construction, so a body that tries
 * to wait (I/O, a sleep, another fiber) is rolled back and reported as a defect.
 * @internal
 */
import { Cause, Context, Effect, Exit, Layer, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Client from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import { classifySqliteError, SqlError } from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import {
  DIRECT_CLOCK,
  DIRECT_ROWS,
  ledgerWritesAfter,
  type RowsRunner,
  type StorageClock,
} from "../../core/internal/directRows.ts"
import { SUBMISSIONS_TABLE } from "../../core/internal/schema.ts"

const executeError = (cause: unknown) =>
  new SqlError({
    reason: classifySqliteError(cause, { message: "Failed to execute statement", operation: "execute" }),
  })

/** A value SQLite returns, with blobs as `Uint8Array` like other Effect SQL drivers. */
const cell = (value: SqlStorageValue): unknown =>
  value instanceof ArrayBuffer ? new Uint8Array(value) : value

/**
 * One clock per storage: two clients over the same storage (a test's second runtime, an
 * operator's) see each other's writes.
 */
const clocks = new WeakMap<DurableObjectStorage, StorageClock>()

/** Storages that are an overlay of another (the test failpoints' instrumented storage). */
const overlays = new WeakMap<DurableObjectStorage, DurableObjectStorage>()

/** Makes `overlay` count on the clock of `storage`, the storage it forwards to. @internal */
export const overlaysStorage = (overlay: DurableObjectStorage, storage: DurableObjectStorage): void => {
  overlays.set(overlay, overlays.get(storage) ?? storage)
}

const clockOf = (storage: DurableObjectStorage): StorageClock => {
  const underlying = overlays.get(storage) ?? storage
  let clock = clocks.get(underlying)
  if (clock === undefined) {
    clock = { writes: 0, rollbacks: 0, ledgerWrites: 0 }
    clocks.set(underlying, clock)
  }
  return clock
}

/** The table a plain write statement names as the one it writes (schema prefix and quotes aside). */
const WRITE_TARGET =
  /^\s*(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+(?:["`[]?\w+["`\]]?\s*\.\s*)?["`[]?(\w+)/i

/** Statement texts already classified; statements are few and mostly constant, so it stays small. */
const ledgerWriters = new Map<string, boolean>()

/**
 * Whether a statement that wrote rows may have written the ledger's table: unless it is one plain
 * write naming another table, it may (a `WITH` prefix, several statements, anything not recognized).
 */
const mayWriteLedger = (query: string): boolean => {
  let known = ledgerWriters.get(query)
  if (known === undefined) {
    // Several statements in one text (`sql.exec` runs them all) are not one plain write.
    const target = /;\s*\S/.test(query) ? undefined : WRITE_TARGET.exec(query)?.[1]
    known = target === undefined || target.toLowerCase() === SUBMISSIONS_TABLE
    if (ledgerWriters.size >= 1_024) ledgerWriters.clear()
    ledgerWriters.set(query, known)
  }
  return known
}

/** A result row as an object keyed by column. */
const keyed = (columns: ReadonlyArray<string>, values: ReadonlyArray<SqlStorageValue>) => {
  const row: Record<string, unknown> = {}
  for (let i = 0; i < columns.length; i++) row[columns[i]!] = cell(values[i]!)
  return row
}

/** A result row as its values in column order. */
const positional = (_columns: ReadonlyArray<string>, values: ReadonlyArray<SqlStorageValue>) =>
  values.map(cell)

/**
 * Runs one statement and returns its rows, counting it on the clock if it wrote (and on the
 * ledger's count if it may have written the ledger's table). A statement that throws is counted
 * as a write of any table: it may have written before it failed (an instrumented storage's
 * failpoint after the write, a cursor that broke).
 */
const readRows = <A extends object>(
  db: SqlStorage,
  clock: StorageClock,
  query: string,
  params: ReadonlyArray<unknown>,
  build: (columns: ReadonlyArray<string>, values: ReadonlyArray<SqlStorageValue>) => A,
): Array<A> => {
  let counted = false
  try {
    const cursor = db.exec(query, ...params)
    const columns = cursor.columnNames
    const rows = Array.from(cursor.raw(), (values) => build(columns, values))
    if (cursor.rowsWritten > 0) {
      clock.writes++
      if (mayWriteLedger(query)) clock.ledgerWrites++
    }
    counted = true
    // Read in the same synchronous step as the statement: no other fiber wrote in between.
    ledgerWritesAfter.set(rows, clock.ledgerWrites)
    return rows
  } finally {
    if (!counted) {
      clock.writes++
      clock.ledgerWrites++
    }
  }
}

/** Counts a rollback: what was written in it is gone. */
const rolledBack = (clock: StorageClock) => {
  clock.rollbacks++
  clock.writes++
  clock.ledgerWrites++
}

const connectionOf = (db: SqlStorage, clock: StorageClock): Connection => {
  const rows = (query: string, params: ReadonlyArray<unknown>) =>
    Effect.try({ try: () => readRows(db, clock, query, params, keyed), catch: executeError })
  const values = (query: string, params: ReadonlyArray<unknown>) =>
    Effect.try({
      try: () => readRows(db, clock, query, params, positional),
      catch: executeError,
    })
  const execute: Connection["execute"] = (query, params, transform) =>
    transform === undefined ? rows(query, params) : Effect.map(rows(query, params), transform)
  return {
    execute,
    executeUnprepared: execute,
    executeRaw: rows,
    executeValues: values,
    executeValuesUnprepared: values,
    // Read whole, like the others: a stream left unfinished would hold its statement open.
    executeStream: (query, params, transform) =>
      Stream.suspend(() => Stream.fromIterable(readRows(db, clock, query, params, keyed))).pipe(
        Stream.catchCauseFilter(Cause.findDefect, (defect) => Stream.fail(executeError(defect))),
        transform === undefined ? (stream) => stream : Stream.mapArray((chunk) => transform(chunk) as never),
      ),
  }
}

/** Thrown inside `transactionSync` to roll it back; carries the body's exit out. */
class Rollback {
  constructor(readonly exit: Exit.Exit<unknown, unknown>) {}
}

const suspendedBody = () =>
  new Error(
    "a storage transaction body waited for something (I/O, a timer or another fiber); " +
      "transaction bodies must be synchronous, so it was rolled back",
  )

/**
 * Runs `effect` to completion inside `storage.transactionSync`, with the caller's services:
 * success commits, failure or defect rolls back and is returned as the same exit.
 */
const synchronousTransaction =
  (storage: DurableObjectStorage, clock: StorageClock): Client.SqlClient["withTransaction"] =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.withFiber<A, E | SqlError, R>((fiber) => {
      const run = Effect.runSyncExitWith(fiber.context as Context.Context<R>)
      try {
        return storage.transactionSync(() => {
          const exit = run(effect)
          if (Exit.isSuccess(exit)) return exit
          const asyncFiber = Cause.findDefect(exit.cause)
          if (asyncFiber._tag === "Success" && Cause.isAsyncFiberError(asyncFiber.success)) {
            asyncFiber.success.fiber.interruptUnsafe()
            throw new Rollback(Exit.die(suspendedBody()))
          }
          throw new Rollback(exit)
        })
      } catch (thrown) {
        rolledBack(clock)
        if (thrown instanceof Rollback) return thrown.exit as Exit.Exit<A, E>
        return Effect.fail(
          new SqlError({
            reason: classifySqliteError(thrown, { message: "Failed transaction", operation: "transaction" }),
          }),
        )
      }
    })

/** A `SqlClient` over `storage.sql` with synchronous transactions. @internal */
export const makeSqlClient = (storage: DurableObjectStorage) =>
  Effect.gen(function* () {
    const clock = clockOf(storage)
    const connection = connectionOf(storage.sql, clock)
    const client = yield* Client.make({
      acquirer: Effect.succeed(connection),
      borrower: (use) => use(connection),
      compiler: Statement.makeCompilerSqlite(),
      driver: "durable-object-sqlite",
      spanAttributes: [["db.system.name", "sqlite"]],
    })
    // The connection's own statement run, without effect/sql's statement path.
    const direct = connection.executeRaw as RowsRunner
    return Object.assign(client, {
      withTransaction: synchronousTransaction(storage, clock),
      [DIRECT_ROWS]: direct,
      [DIRECT_CLOCK]: clock,
    })
  })

/** Provides `SqlClient` over `storage`. @internal */
export const sqlClientLayer = (storage: DurableObjectStorage): Layer.Layer<Client.SqlClient> =>
  Layer.effect(Client.SqlClient, makeSqlClient(storage)).pipe(Layer.provide(Reactivity.layer))
