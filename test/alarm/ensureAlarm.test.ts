import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option } from "effect"
import { ThreadProjectionError } from "../../src/core/ThreadProjectionMaintenance.ts"
import { ThreadHostMaintenanceError } from "../../src/Alarm.ts"
import {
  advance,
  caughtUpRecord,
  deadlineAt,
  encodedRetry,
  forbidSql,
  hostHooks,
  isDone,
} from "./fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, putRawState, rawState } from "./harness.ts"
import { maintenanceSwitchboard } from "../support/switchboard.ts"
import { type IncarnationOptions, incarnation } from "../support/incarnation.ts"

const dirtyRecord = (extra: Record<string, unknown> = {}) => caughtUpRecord(3n, { dirty: "4", ...extra })

/** Runs ensureAlarm once over `record` (and an optional existing alarm); returns the slot. */
const ensureOver = (
  name: string,
  setup: { readonly record: unknown; readonly alarm?: number; readonly options?: IncarnationOptions },
) =>
  inObject(objectName(name), (ctx) =>
    Effect.gen(function* () {
      yield* putRawState(ctx, setup.record)
      if (setup.alarm !== undefined) yield* Effect.promise(() => ctx.storage.setAlarm(setup.alarm!))
      const { maintenance } = yield* incarnation(ctx, setup.options)
      yield* maintenance.ensureAlarm
      return yield* alarmOf(ctx)
    }),
  )

describe("ThreadMaintenance.ensureAlarm", () => {
  it.effect("leaves the slot alone for a caught-up record with nothing pending", () =>
    Effect.gen(function* () {
      const now = yield* dayAhead
      expect(yield* ensureOver("quiet", { record: caughtUpRecord(3n) })).toBeNull()
      expect(yield* ensureOver("quiet-armed", { record: caughtUpRecord(3n), alarm: now + 7_000 })).toBe(
        now + 7_000,
      )
    }),
  )

  it.effect("arms a dirty generation at the scan cadence and keeps an earlier alarm", () =>
    Effect.gen(function* () {
      const now = yield* dayAhead
      expect(yield* ensureOver("dirty", { record: dirtyRecord() })).toBe(now + 1_000)
      expect(
        yield* ensureOver("dirty-cadence", {
          record: dirtyRecord(),
          options: { config: { wakeScanInterval: 250 } },
        }),
      ).toBe(now + 250)
      expect(yield* ensureOver("dirty-earlier", { record: dirtyRecord(), alarm: now + 100 })).toBe(now + 100)
    }),
  )

  it.effect("arms the pending retry of the dirty generation and never accelerates it", () =>
    Effect.gen(function* () {
      const now = yield* dayAhead
      const retry = (generation: bigint, notBefore: number) =>
        dirtyRecord({ retry: encodedRetry({ generation, notBefore, nativeOnly: true, stalls: 3 }) })
      expect(yield* ensureOver("retry", { record: retry(4n, now + 30_000) })).toBe(now + 30_000)
      // ensure-by lowers a later slot to the retry, never below it.
      expect(yield* ensureOver("retry-later", { record: retry(4n, now + 30_000), alarm: now + 60_000 })).toBe(
        now + 30_000,
      )
      expect(yield* ensureOver("retry-due", { record: retry(4n, now - 5) })).toBe(now + 50)
      // A retry of an older generation is obsolete: the scan cadence applies.
      expect(yield* ensureOver("retry-obsolete", { record: retry(3n, now + 30_000) })).toBe(now + 1_000)
    }),
  )

  it.effect.each(["publication", "messages", "projection", "host"] as const)(
    "arms a pending %s deadline, never earlier than the floor",
    (source) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const hooks = (at: number): IncarnationOptions => {
          const pendingDeadline = deadlineAt(at)
          switch (source) {
            case "publication":
              return {
                publication: {
                  invalidate: Effect.void,
                  prepareGeneration: () => Effect.void,
                  drain: Effect.void,
                  pendingDeadline,
                },
              }
            case "messages":
              return { messages: { drainUntil: () => Effect.void, pendingDeadline } }
            case "projection":
              return {
                projection: { applyCommitted: () => Effect.void, drain: Effect.void, pendingDeadline },
              }
            case "host":
              return { host: hostHooks({ pendingDeadline }) }
          }
        }
        const record = caughtUpRecord(3n)
        expect(yield* ensureOver(`${source}-future`, { record, options: hooks(now + 5_000) })).toBe(
          now + 5_000,
        )
        expect(yield* ensureOver(`${source}-overdue`, { record, options: hooks(now - 1_000) })).toBe(now + 50)
        // A later host deadline does not postpone the cadence of a dirty generation.
        expect(
          yield* ensureOver(`${source}-dirty`, { record: dirtyRecord(), options: hooks(now + 5_000) }),
        ).toBe(now + 1_000)
      }),
  )

  it.effect("takes the earliest of all deadlines and reads a broken projection deadline as due", () =>
    Effect.gen(function* () {
      const now = yield* dayAhead
      const record = caughtUpRecord(3n)
      expect(
        yield* ensureOver("earliest", {
          record,
          options: {
            host: hostHooks({ pendingDeadline: deadlineAt(now + 4_000) }),
            messages: { drainUntil: () => Effect.void, pendingDeadline: deadlineAt(now + 9_000) },
          },
        }),
      ).toBe(now + 4_000)
      const broken = new ThreadProjectionError({ operation: "read deadline", message: "index unavailable" })
      expect(
        yield* ensureOver("projection-broken", {
          record,
          options: {
            projection: {
              applyCommitted: () => Effect.void,
              drain: Effect.void,
              pendingDeadline: Effect.fail(broken),
            },
          },
        }),
      ).toBe(now + 50)
    }),
  )

  it.effect("reads a host hook's failing deadline as due instead of failing the gate", () =>
    Effect.gen(function* () {
      const now = yield* dayAhead
      const refused = new ThreadHostMaintenanceError({
        hook: "outbox",
        operation: "read deadline",
        message: "the outbox table is unreadable",
      })
      // The Object starts (a failed gate would refuse every call); a pass runs at the floor.
      expect(
        yield* ensureOver("host-broken", {
          record: caughtUpRecord(3n),
          options: { host: hostHooks({ pendingDeadline: Effect.fail(refused) }) },
        }),
      ).toBe(now + 50)
      // A deadline that is not a time is the hook's failure too, not a cleared alarm.
      expect(
        yield* ensureOver("host-nan", {
          record: caughtUpRecord(3n),
          options: { host: hostHooks({ pendingDeadline: Effect.succeed(Option.some(Number.NaN)) }) },
        }),
      ).toBe(now + 50)
    }),
  )

  it.effect("reads a host hook's deadline that never answers as due after a bounded wait", () =>
    inObject(objectName("host-stuck"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        // A read the contract forbids (a gated write, a network call) must not hold the
        // constructor gate, and with it every call of every incarnation, forever.
        const { maintenance } = yield* incarnation(ctx, {
          host: hostHooks({ pendingDeadline: Effect.never }),
        })
        const gate = yield* Effect.forkChild(maintenance.ensureAlarm)
        yield* advance(4_999)
        expect(yield* isDone(gate)).toBe(false)
        yield* advance(1)
        expect(yield* isDone(gate)).toBe(true)
        yield* Fiber.join(gate)
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        expect(yield* alarmOf(ctx)).toBe(now - 5_000 + 50)
      }),
    ),
  )

  it.effect("lets an overdue host deadline wait for the backoff of a failure outside the native phase", () =>
    Effect.gen(function* () {
      const now = yield* dayAhead
      const failed = (nativeOnly: boolean) =>
        caughtUpRecord(3n, {
          retry: encodedRetry({ generation: 3n, notBefore: now + 3_000, nativeOnly, stalls: 2 }),
        })
      const host = (at: number): IncarnationOptions => ({
        host: hostHooks({ pendingDeadline: deadlineAt(at) }),
      })
      expect(
        yield* ensureOver("host-after-aux-failure", { record: failed(false), options: host(now - 10) }),
      ).toBe(now + 3_000)
      expect(
        yield* ensureOver("host-after-native-failure", { record: failed(true), options: host(now - 10) }),
      ).toBe(now + 50)
      expect(yield* ensureOver("host-future", { record: failed(false), options: host(now + 1_000) })).toBe(
        now + 1_000,
      )
      // A retry of another generation does not hold the host deadline back.
      const stale = caughtUpRecord(4n, {
        retry: encodedRetry({ generation: 3n, notBefore: now + 3_000, nativeOnly: false, stalls: 2 }),
      })
      expect(yield* ensureOver("host-stale-retry", { record: stale, options: host(now - 10) })).toBe(now + 50)
    }),
  )

  it.effect("does O(1) work: no SQL statement and no runtime call", () =>
    inObject(objectName("o1"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, dirtyRecord())
        const failpoints = yield* maintenanceSwitchboard()
        const { maintenance } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        const spy = yield* forbidSql(ctx)
        expect(() => ctx.storage.sql.exec("SELECT 1")).toThrow("SQL is forbidden here")
        spy.attempts.length = 0
        yield* maintenance.ensureAlarm
        expect(spy.attempts).toEqual([])
        expect(failpoints.hits).toEqual(["maintenance:ensure:before", "maintenance:ensure:after"])
        expect(yield* alarmOf(ctx)).toBe(now + 1_000)
        expect(yield* rawState(ctx)).toEqual(dirtyRecord())
      }),
    ),
  )
})
