/**
 * The Object's single alarm slot. Storage is the truth: no alarm value is cached. Immediate
 * wake hints are dropped while a pass runs in this incarnation, because workerd cancels a
 * running alarm handler when an earlier alarm is written during it.
 */
import { spanned, withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import type { DurableAlarmError } from "./errors.ts"
import type { AlarmWrite } from "./alarmPolicy.ts"
import { writeAlarm } from "./alarmWrite.ts"
import { storageOperation } from "./storage.ts"
import { makeTransact } from "./transaction.ts"

/** The alarm slot of this Object. */
export class DurableAlarmService extends Context.Service<
  DurableAlarmService,
  {
    /** The scheduled alarm, epoch milliseconds. */
    readonly scheduled: Effect.Effect<Option.Option<number>, DurableAlarmError>
    /**
     * Replaces the slot, for host code outside maintenance (which never uses it): a later alarm
     * postpones owed maintenance until then, and an earlier one written during a pass cancels
     * that pass's handler.
     */
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
    /**
     * Deletes the slot, for host code outside maintenance (which clears only inside its own
     * generation transactions): owed maintenance then waits for the next gated mutation, wake
     * hint or incarnation.
     */
    readonly cancel: Effect.Effect<void, DurableAlarmError>
  }
>()("@effect-agent/platform-cloudflare/DurableAlarmService") {
  static readonly layer: Layer.Layer<DurableAlarmService, never, DurableObjectContext> = Layer.effect(
    this,
    Effect.gen(function* () {
      const { ctx } = yield* DurableObjectContext
      // A cache of this incarnation only: a fresh one starts with no pass running.
      let runningPasses = 0

      const transact = makeTransact(ctx.storage)
      const write = (operation: string, alarm: AlarmWrite) =>
        transact(operation, (txn) => writeAlarm(txn, alarm))
      const ensureBy = Effect.fnUntraced(function* (at: number) {
        // An alarm already due by then needs no transaction: a writer after this read could
        // move it as well after one.
        const current = yield* storageOperation("get alarm", () => ctx.storage.getAlarm())
        if (current !== null && current <= at) return
        yield* write("ensure alarm", { _tag: "EnsureBy", at })
      })

      return {
        scheduled: storageOperation("get alarm", () => ctx.storage.getAlarm()).pipe(
          Effect.map(Option.fromNullOr),
          withSpanFast("DurableAlarmService.scheduled"),
        ),
        scheduleAt: spanned("DurableAlarmService.scheduleAt")(function* (at: number) {
          yield* write("set alarm", { _tag: "Set", at })
        }),
        ensureScheduledBy: (at: number) =>
          withSpanFast("DurableAlarmService.ensureScheduledBy")(ensureBy(at)),
        // A wake hint per admission: one span, not a second one for the ensure inside it.
        scheduleNow: Effect.suspend(() =>
          runningPasses > 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, ensureBy),
        ).pipe(withSpanFast("DurableAlarmService.scheduleNow")),
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
        cancel: write("delete alarm", { _tag: "Clear" }).pipe(withSpanFast("DurableAlarmService.cancel")),
      }
    }),
  )
}
