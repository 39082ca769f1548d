/**
 * Shared fixtures of the maintenance suites: a fixed jitter, resource counters for auxiliary
 * hooks, a SQL tripwire and raw records. Incarnations come from `test/support/incarnation.ts`;
 * everything runs against the Object's real storage.
 */
import { Cause, Effect, Exit, Fiber, Option, Random } from "effect"
import type { Scope } from "effect"
import { TestClock } from "effect/testing"
import type { ThreadHostMaintenanceService } from "../../src/Alarm.ts"
import { rawState } from "./harness.ts"

/** Runs `effect` with `Random.next` fixed at `jitter`. */
export const withJitter =
  (jitter: number) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.provideService(effect, Random.Random, {
      nextDoubleUnsafe: () => jitter,
      nextIntUnsafe: () => 0,
    })

/** Lets other fibers and pending storage promises run (real time, not the TestClock). */
export const settle = TestClock.withLive(Effect.sleep("15 millis"))

/** Advances virtual time after letting timers register. */
export const advance = (millis: number) => Effect.andThen(settle, TestClock.adjust(millis))

/** Whether a forked fiber has finished. */
export const isDone = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.andThen(
    settle,
    Effect.sync(() => fiber.pollUnsafe() !== undefined),
  )

/** The typed failure of an exit, if it failed with one. */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause).pipe(Option.getOrUndefined) : undefined

/** Counts resources a hook acquires in the Scope it was given. */
export const makeResources = () => {
  const counts = { acquired: 0, released: 0 }
  const acquire: Effect.Effect<void, never, Scope.Scope> = Effect.acquireRelease(
    Effect.sync(() => {
      counts.acquired += 1
    }),
    () =>
      Effect.sync(() => {
        counts.released += 1
      }),
  )
  return {
    acquire,
    counts,
    get live() {
      return counts.acquired - counts.released
    },
  }
}

/** A host hook; every field defaults to an idle, valid host. */
export const hostHooks = (
  overrides: Partial<ThreadHostMaintenanceService> = {},
): ThreadHostMaintenanceService => ({
  dispatchTimeoutMillis: 1_000,
  drainUntil: () => Effect.void,
  pendingDeadline: Effect.succeed(Option.none()),
  ...overrides,
})

/** A deadline read for hooks. */
export const deadlineAt = (at: number | undefined): Effect.Effect<Option.Option<number>> =>
  Effect.succeed(Option.fromNullishOr(at))

/** Makes every SQL statement on the Object throw for the current scope, counting attempts. */
export const forbidSql = (ctx: DurableObjectState) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const sql = ctx.storage.sql
      const original = sql.exec
      const attempts: Array<string> = []
      sql.exec = ((query: string) => {
        attempts.push(query)
        throw new Error(`SQL is forbidden here: ${query}`)
      }) as typeof sql.exec
      return { attempts, restore: () => (sql.exec = original) }
    }),
    (spy) => Effect.sync(spy.restore),
  )

/**
 * Counts the SQL the Object runs for the current scope: statements, and rows read and written
 * by them (read from each cursor once the scope's work is done).
 */
export const meterSql = (ctx: DurableObjectState) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const sql = ctx.storage.sql
      const original = sql.exec
      const cursors: Array<{ readonly rowsRead: number; readonly rowsWritten: number }> = []
      const queries: Array<string> = []
      sql.exec = ((query: string, ...bindings: Array<unknown>) => {
        const cursor = original.call(sql, query, ...(bindings as Array<SqlStorageValue>))
        cursors.push(cursor)
        queries.push(query)
        return cursor
      }) as typeof sql.exec
      return {
        get statements() {
          return cursors.length
        },
        /** The text of every statement, in order. */
        get queries(): ReadonlyArray<string> {
          return queries
        },
        get rowsRead() {
          return cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0)
        },
        get rowsWritten() {
          return cursors.reduce((sum, cursor) => sum + cursor.rowsWritten, 0)
        },
        reset: () => {
          cursors.splice(0)
          queries.splice(0)
        },
        restore: () => (sql.exec = original),
      }
    }),
    (meter) => Effect.sync(meter.restore),
  )

/** An encoded record with `processed` caught up to `generation`. */
export const caughtUpRecord = (generation: bigint, extra: Record<string, unknown> = {}) => ({
  schemaVersion: 1,
  dirty: String(generation),
  processed: String(generation),
  nonterminal: 0,
  ...extra,
})

/** An encoded failure retry. */
export const encodedRetry = (retry: {
  readonly generation: bigint
  readonly notBefore: number
  readonly nativeOnly: boolean
  readonly stalls: number
}) => ({ ...retry, generation: String(retry.generation) })

/** The stored `retry` key, encoded, if any. */
export const storedRetry = (ctx: DurableObjectState) =>
  Effect.map(rawState(ctx), (raw) => raw?.["retry"] as ReturnType<typeof encodedRetry> | undefined)
