/**
 * Effect metrics of one `ThreadObject` incarnation: passes by phase and outcome, settlements,
 * failure retries and alarm lag. Each incarnation has its own `MetricRegistry`, so the
 * inspection view reads exactly this Object's figures (they restart with the incarnation).
 */
import { Effect, Exit, Layer, Metric } from "effect"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import { maintenanceLogSetting } from "../../CloudflareConfig.ts"
import type { MaintenancePassReport } from "../maintenance/report.ts"
import { logMaintenanceEvent, objectLabel } from "../observability/maintenanceLog.ts"
import { MaintenanceCounters } from "./statusViews.ts"

const passes = Metric.counter("effect_agent_maintenance_passes", {
  description: "Maintenance passes run by this incarnation",
  incremental: true,
})
const caughtUp = Metric.counter("effect_agent_maintenance_caught_up", {
  description: "Passes that found no native work due",
  incremental: true,
})
const failures = Metric.counter("effect_agent_maintenance_failures", {
  description: "Passes that failed (each commits a bounded retry when it can)",
  incremental: true,
})
const settlements = Metric.counter("effect_agent_settlements", {
  description: "Head Attempts that reached their settlement in a pass",
  incremental: true,
})
const alarmLagMillis = Metric.histogram("effect_agent_alarm_lag_millis", {
  description: "Delay between an alarm's scheduled time and the start of its pass",
  boundaries: [1, 5, 10, 50, 100, 500, 1_000, 5_000, 30_000],
})

/** @internal A registry of this incarnation only. */
export const metricsLayer: Layer.Layer<never> = Layer.sync(Metric.MetricRegistry, () => new Map())

/**
 * @internal Records one pass exit and, when known, how late its alarm was delivered, then logs
 * it as the Object's `EFFECT_AGENT_MAINTENANCE_LOG` variable asks.
 */
export const recordPass = (exit: Exit.Exit<MaintenancePassReport, unknown>, lagMillis: number | undefined) =>
  Effect.gen(function* () {
    yield* Metric.update(passes, 1)
    if (lagMillis !== undefined) yield* Metric.update(alarmLagMillis, Math.max(0, lagMillis))
    if (Exit.isFailure(exit)) yield* Metric.update(failures, 1)
    else {
      if (exit.value.phase === "caught-up") yield* Metric.update(caughtUp, 1)
      if (exit.value.settled > 0) yield* Metric.update(settlements, exit.value.settled)
    }
    const { ctx, env } = yield* DurableObjectContext
    const object = { storage: ctx.storage, name: objectLabel(ctx.id) }
    yield* logMaintenanceEvent(maintenanceLogSetting(env), object, exit, lagMillis)
  })

/** @internal */
export const readCounters = Effect.gen(function* () {
  const lag = yield* Metric.value(alarmLagMillis)
  return MaintenanceCounters.make({
    passes: (yield* Metric.value(passes)).count,
    caughtUpPasses: (yield* Metric.value(caughtUp)).count,
    failedPasses: (yield* Metric.value(failures)).count,
    settled: (yield* Metric.value(settlements)).count,
    meanAlarmLagMillis: lag.count === 0 ? 0 : lag.sum / lag.count,
    maxAlarmLagMillis: lag.count === 0 ? 0 : lag.max,
  })
})
