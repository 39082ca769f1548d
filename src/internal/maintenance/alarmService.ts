/**
 * The Object's single alarm slot. Storage is the truth: no alarm value is cached. Immediate
 * wake hints are dropped while a pass runs in this incarnation, because workerd cancels a
 * running alarm handler when an earlier alarm is written during it.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import type { DurableAlarmError } from "./errors.ts"
import { ensureAlarmBy } from "./state.ts"
import { makeStorageOperation } from "./storage.ts"

/** The alarm slot of this Object. */
export class DurableAlarmService extends Context.Service<
  DurableAlarmService,
  {
    /** The scheduled alarm, epoch milliseconds. */
    readonly scheduled: Effect.Effect<Option.Option<number>, DurableAlarmError>
    /** Replaces the slot. */
    readonly scheduleAt: (at: number) => Effect.Effect<void, DurableAlarmError>
    /** Keeps the earlier of the existing alarm and `at`, in one storage transaction. */
    readonly ensureScheduledBy: (at: number) => Effect.Effect<void, DurableAlarmError>
    /** An immediate wake hint; dropped while a pass runs (its durable state decides the alarm). */
    readonly scheduleNow: Effect.Effect<void, DurableAlarmError>
    /** Runs `body` with wake hints deferred. */
    readonly withWakesDeferred: <A, E, R>(body: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    /**
     * Whether a pass runs in this incarnation now. While it does, the slot may be empty (workerd
     * clears a delivered alarm) until the pass writes the alarm its finish decides.
     */
    readonly passRunning: Effect.Effect<boolean>
    /** Deletes the slot. Correctness-sensitive clears happen only in maintenance transactions. */
    readonly cancel: Effect.Effect<void, DurableAlarmError>
  }
>()("@effect-agent/platform-cloudflare/DurableAlarmService") {
  static readonly layer: Layer.Layer<DurableAlarmService, never, DurableObjectContext | SqlClient> =
    Layer.effect(
      this,
      Effect.gen(function* () {
        const { ctx } = yield* DurableObjectContext
        const run = yield* makeStorageOperation
        // A cache of this incarnation only: a fresh one starts with no pass running.
        let runningPasses = 0

        const ensureScheduledBy = Effect.fn("DurableAlarmService.ensureScheduledBy")(function* (at: number) {
          yield* run("ensure alarm", () => ctx.storage.transaction((txn) => ensureAlarmBy(txn, at)))
        })

        return {
          scheduled: run("get alarm", () => ctx.storage.getAlarm()).pipe(
            Effect.map(Option.fromNullOr),
            Effect.withSpan("DurableAlarmService.scheduled"),
          ),
          scheduleAt: Effect.fn("DurableAlarmService.scheduleAt")(function* (at: number) {
            yield* run("set alarm", () => ctx.storage.setAlarm(at))
          }),
          ensureScheduledBy,
          scheduleNow: Effect.suspend(() =>
            runningPasses > 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, ensureScheduledBy),
          ).pipe(Effect.withSpan("DurableAlarmService.scheduleNow")),
          withWakesDeferred: <A, E, R>(body: Effect.Effect<A, E, R>) =>
            Effect.acquireUseRelease(
              Effect.sync(() => {
                runningPasses += 1
              }),
              () => body,
              () =>
                Effect.sync(() => {
                  runningPasses = Math.max(0, runningPasses - 1)
                }),
            ),
          passRunning: Effect.sync(() => runningPasses > 0),
          cancel: run("delete alarm", () => ctx.storage.deleteAlarm()).pipe(
            Effect.withSpan("DurableAlarmService.cancel"),
          ),
        }
      }),
    )
}
