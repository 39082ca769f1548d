/**
 * The Cloudflare wake scheduler: a runtime hint becomes an immediate alarm unless a pass is
 * running (the alarm service drops it then). Hints are droppable, so a failed write is only
 * logged: every producer already committed its own alarm through the mutation gate.
 */
import { Effect, Layer } from "effect"
import { WakeScheduler } from "../../core/WakeScheduler.ts"
import { DurableAlarmService } from "../maintenance/alarmService.ts"

/** @internal */
export const cloudflareWakeScheduler: Layer.Layer<WakeScheduler, never, DurableAlarmService> = Layer.effect(
  WakeScheduler,
  Effect.gen(function* () {
    const alarm = yield* DurableAlarmService
    return {
      notify: (threadId) =>
        alarm.scheduleNow.pipe(
          Effect.catchCause((cause) => Effect.logWarning("Thread wake hint dropped", { threadId }, cause)),
        ),
    }
  }),
)
