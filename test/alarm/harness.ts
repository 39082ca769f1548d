/**
 * In-process harness of the maintenance suites. A test body runs inside one SQLite-backed
 * Durable Object (with the test's services, so `TestClock` drives every pass) and builds
 * incarnations over its storage with `test/support/incarnation.ts`. Abandoning an incarnation
 * whose fiber is frozen at a failpoint simulates a kill (no finalizers run, memory state is
 * lost).
 */
import { env, runInDurableObject } from "cloudflare:test"
import { Effect, Option } from "effect"
import type { Scope } from "effect"
import { TestClock } from "effect/testing"
import { MAINTENANCE_STATE_KEY } from "../../src/internal/maintenance/state.ts"

/** One day: virtual time runs this far ahead so workerd's real alarms never race a test. */
export const DAY_MILLIS = 86_400_000

/** A unique Object name per test. */
export const objectName = (label: string) => `cf-alarm-${label}-${crypto.randomUUID()}`

/** Runs `body` inside the Object `name` with the calling test's services (TestClock included). */
export const inObject = <A, E>(
  name: string,
  body: (ctx: DurableObjectState) => Effect.Effect<A, E, Scope.Scope>,
): Effect.Effect<A, E> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<never>()
    const exit = yield* Effect.promise(() =>
      runInDurableObject(env.MAINTENANCE_TEST.getByName(name), (_instance, state) =>
        Effect.runPromiseExit(Effect.provideContext(Effect.scoped(body(state)), context)),
      ),
    )
    return yield* exit
  })

/** Sets virtual time one day ahead of the wall clock and returns it. */
export const dayAhead = Effect.gen(function* () {
  const now = Date.now() + DAY_MILLIS
  yield* TestClock.setTime(now)
  return now
})

/** The stored alarm, epoch ms. */
export const alarmOf = (ctx: DurableObjectState) => Effect.promise(() => ctx.storage.getAlarm())

/** The raw encoded maintenance record. */
export const rawState = (ctx: DurableObjectState) =>
  Effect.promise(() => ctx.storage.get<Record<string, unknown>>(MAINTENANCE_STATE_KEY))

/** The generation pair of the record, as bigints. */
export const generations = (ctx: DurableObjectState) =>
  Effect.map(rawState(ctx), (raw) =>
    Option.fromNullishOr(raw).pipe(
      Option.map((record) => ({
        dirty: BigInt(String(record["dirty"])),
        processed: BigInt(String(record["processed"])),
      })),
    ),
  )

/** Writes a raw maintenance record. */
export const putRawState = (ctx: DurableObjectState, value: unknown) =>
  Effect.promise(() => ctx.storage.put(MAINTENANCE_STATE_KEY, value))
