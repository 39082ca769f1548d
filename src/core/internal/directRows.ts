/**
 * How the stores run one statement. A `SqlClient` that can run a statement directly (the
 * Durable Object one: `sql.exec` is synchronous) carries a runner under `DIRECT_ROWS`, and the
 * stores use it in place of effect/sql's statement path: a span, a compile and a connection
 * lease per statement cost about 30 µs there against a few µs for the statement itself
 * (measured in workerd), and a settled Submission runs about twenty statements.
 */
import type { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"

/** Runs `text` with `params`, returning its rows as objects keyed by column. @internal */
export type RowsRunner = <A extends object = Record<string, unknown>>(
  text: string,
  params: ReadonlyArray<unknown>,
) => Effect.Effect<ReadonlyArray<A>, SqlError>

/** @internal */
export const DIRECT_ROWS: unique symbol = Symbol.for("@effect-agent/platform-cloudflare/SqlClient/directRows")

/**
 * What a direct client counts about its storage, shared by every client over the same storage:
 * statements that wrote rows and transactions rolled back. A reader that keeps a figure in memory
 * between statements (the history's ends, an admission verdict) keeps it only while the counts it
 * depends on stand still. @internal
 */
export interface StorageClock {
  /** Statements that wrote at least one row, and rollbacks (a rollback undoes writes). */
  writes: number
  /** Transactions (or savepoints) rolled back. */
  rollbacks: number
  /**
   * The part of `writes` that may have changed the ledger's table (`effect_agent_submissions`):
   * every counted write but a statement that names another table as the one it writes
   * (`INSERT INTO`, `UPDATE`, `DELETE FROM`, `REPLACE INTO`), so an append to the history or an
   * outbox row leaves what was read of the ledger standing. Sound while no trigger writes the
   * ledger's table from another's (the library defines none; test/core checks the schema).
   */
  ledgerWrites: number
}

/**
 * The clock's `ledgerWrites` read right after the statement that returned these rows, in the same
 * synchronous step (a direct client sets it): the ledger, which remembers what it read, checks the
 * clock against it, since its own fiber may have yielded to a writer before it got there. @internal
 */
export const ledgerWritesAfter = new WeakMap<ReadonlyArray<object>, number>()

/** @internal */
export const DIRECT_CLOCK: unique symbol = Symbol.for("@effect-agent/platform-cloudflare/SqlClient/clock")

/** A client that carries a direct runner and its storage's clock. @internal */
export type DirectSqlClient = SqlClient & {
  readonly [DIRECT_ROWS]?: RowsRunner
  readonly [DIRECT_CLOCK]?: StorageClock
}

/** The clock of `sql`'s storage, when the client keeps one. @internal */
export const storageClock = (sql: SqlClient): StorageClock | undefined =>
  (sql as DirectSqlClient)[DIRECT_CLOCK]

/** The runner of `sql`: its direct one, or effect/sql's statement path. @internal */
export const rowsRunner = (sql: SqlClient): RowsRunner =>
  (sql as DirectSqlClient)[DIRECT_ROWS] ?? ((text, params) => sql.unsafe(text, params))
