import { SqlClient } from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Option } from "effect"
import { incarnation } from "../support/incarnation.ts"
import { caughtUpRecord } from "./fixtures.ts"
import { alarmOf, dayAhead, generations, inObject, objectName, putRawState, rawState } from "./harness.ts"

const probeTable = "alarm_probe"

describe("DurableAlarmService", () => {
  it.effect("reads, replaces and deletes the slot without caching it", () =>
    inObject(objectName("slot"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const { alarm } = yield* incarnation(ctx)
        expect(yield* alarm.scheduled).toEqual(Option.none())
        yield* alarm.scheduleAt(now + 5_000)
        expect(yield* alarm.scheduled).toEqual(Option.some(now + 5_000))
        yield* alarm.scheduleAt(now + 9_000)
        expect(yield* alarm.scheduled).toEqual(Option.some(now + 9_000))
        // A write that bypasses the service is visible at once: storage is the truth.
        yield* Effect.promise(() => ctx.storage.setAlarm(now + 7_000))
        expect(yield* alarm.scheduled).toEqual(Option.some(now + 7_000))
        yield* alarm.cancel
        expect(yield* alarm.scheduled).toEqual(Option.none())
      }),
    ),
  )

  it.effect("ensureScheduledBy keeps the earlier of the existing alarm and the deadline", () =>
    inObject(objectName("ensure-by"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const { alarm } = yield* incarnation(ctx)
        yield* alarm.ensureScheduledBy(now + 3_000)
        expect(yield* alarmOf(ctx)).toBe(now + 3_000)
        yield* alarm.ensureScheduledBy(now + 8_000)
        expect(yield* alarmOf(ctx)).toBe(now + 3_000)
        yield* alarm.ensureScheduledBy(now + 1_000)
        expect(yield* alarmOf(ctx)).toBe(now + 1_000)
      }),
    ),
  )

  it.effect("drops an immediate wake hint while a pass runs, and honours it otherwise", () =>
    inObject(objectName("wake"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const { alarm } = yield* incarnation(ctx)
        yield* alarm.scheduleAt(now + 60_000)
        yield* alarm.withWakesDeferred(
          Effect.gen(function* () {
            yield* alarm.scheduleNow
            expect(yield* alarmOf(ctx)).toBe(now + 60_000)
            // Nested passes keep deferring until the outermost one ends.
            yield* alarm.withWakesDeferred(alarm.scheduleNow)
            yield* alarm.scheduleNow
            expect(yield* alarmOf(ctx)).toBe(now + 60_000)
          }),
        )
        const failed = yield* Effect.exit(alarm.withWakesDeferred(Effect.fail("boom")))
        expect(Exit.isFailure(failed)).toBe(true)
        yield* alarm.scheduleNow
        expect(yield* alarmOf(ctx)).toBe(now)
      }),
    ),
  )

  it.effect("a fresh incarnation does not inherit the deferral of an unfinished pass", () =>
    inObject(objectName("wake-fresh"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const { alarm: first } = yield* incarnation(ctx)
        const running = yield* Deferred.make<void>()
        yield* Effect.forkChild(
          first.withWakesDeferred(Effect.andThen(Deferred.succeed(running, undefined), Effect.never)),
        )
        yield* Deferred.await(running)
        yield* first.scheduleNow
        expect(yield* alarmOf(ctx)).toBeNull()
        const { alarm: second } = yield* incarnation(ctx)
        yield* second.scheduleNow
        expect(yield* alarmOf(ctx)).toBe(now)
      }),
    ),
  )

  it.effect(
    "alarm and generation writes persist beside a SQL transaction that waits and is rolled back",
    () =>
      inObject(objectName("sql-txn"), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          const { alarm, gate, context } = yield* incarnation(ctx)
          const sql = Context.get(context, SqlClient)
          const { whileTransactionRollsBack, probeRows } = yield* rollingBack(ctx, sql)

          yield* whileTransactionRollsBack("schedule", alarm.scheduleAt(now + 30_000))
          expect(yield* alarmOf(ctx)).toBe(now + 30_000)
          yield* whileTransactionRollsBack("ensure", alarm.ensureScheduledBy(now + 10_000))
          expect(yield* alarmOf(ctx)).toBe(now + 10_000)
          yield* whileTransactionRollsBack("cancel", alarm.cancel)
          expect(yield* alarmOf(ctx)).toBeNull()
          const before = yield* generations(ctx)
          yield* whileTransactionRollsBack("mutation", gate.withMutation(Effect.void))
          const after = yield* generations(ctx)
          expect(Option.map(after, (state) => state.dirty)).toEqual(
            Option.some(Option.match(before, { onNone: () => 1n, onSome: (state) => state.dirty }) + 1n),
          )
          expect(yield* alarmOf(ctx)).toBe(now + 50)
          expect(probeRows()).toEqual([])
        }),
      ),
  )

  it.effect("maintenance commits persist beside a SQL transaction that waits and is rolled back", () =>
    inObject(objectName("sql-txn-maintenance"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const { maintenance, gate, context } = yield* incarnation(ctx)
        const sql = Context.get(context, SqlClient)
        const { whileTransactionRollsBack, probeRows } = yield* rollingBack(ctx, sql)

        yield* whileTransactionRollsBack("ensure", maintenance.ensureAlarm)
        expect(yield* rawState(ctx)).toEqual({ schemaVersion: 1, dirty: "1", processed: "0", nonterminal: 0 })
        expect(yield* alarmOf(ctx)).toBe(now + 1_000)

        yield* putRawState(ctx, caughtUpRecord(2n))
        yield* whileTransactionRollsBack(
          "receipt",
          gate.withMutation(Effect.void, { invalidatesRecovery: false }),
        )
        expect(yield* rawState(ctx)).toEqual(caughtUpRecord(2n))
        expect(yield* alarmOf(ctx)).toBe(now + 50)

        const report = yield* whileTransactionRollsBack("pass", maintenance.pass)
        expect([report.phase, report.alarm]).toEqual(["caught-up", "cleared"])
        expect(yield* alarmOf(ctx)).toBeNull()
        expect(probeRows()).toEqual([])
      }),
    ),
  )
})

/**
 * Runs operations beside a SQL transaction that inserts a probe row and then waits: a
 * transaction body must be synchronous, so it is rolled back as a defect, and the operation's
 * own commits must not be caught in it.
 */
const rollingBack = (ctx: DurableObjectState, sql: SqlClient) =>
  Effect.gen(function* () {
    yield* sql.unsafe(`CREATE TABLE IF NOT EXISTS ${probeTable} (label TEXT NOT NULL)`)
    const probeRows = () =>
      ctx.storage.sql
        .exec(`SELECT label FROM ${probeTable}`)
        .toArray()
        .map((row) => row.label)

    const whileTransactionRollsBack = <A, E>(label: string, operation: Effect.Effect<A, E>) =>
      Effect.gen(function* () {
        const transaction = yield* Effect.forkChild(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`INSERT INTO ${sql(probeTable)} (label) VALUES (${label})`
              return yield* Effect.never
            }),
          ),
        )
        const result = yield* operation
        const exit = yield* Fiber.await(transaction)
        expect(Exit.isFailure(exit) && Cause.pretty(exit.cause)).toMatch(/must be synchronous/)
        return result
      })
    return { whileTransactionRollsBack, probeRows }
  })
