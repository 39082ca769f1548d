/**
 * The failpoint handlers of an incarnation: every hit is reported to the monitor, and the
 * run's fault plan decides whether it evicts the incarnation (`ctx.abort()`), fails (a defect
 * in maintenance, a typed failure in the runtime) or pauses until the driver releases it.
 */
import { Deferred, Effect } from "effect"
import type { ThreadMaintenanceFailpointLocation } from "../../../src/Alarm.ts"
import { DurableRuntimeFailpointError } from "../../../src/Testing.ts"
import type { RuntimeFailpointLocation } from "../../../src/core/RuntimeFailpoint.ts"
import type { FaultPlan } from "./faults.ts"
import type { Monitor } from "./invariants.ts"
import { currentOrigin, type Holder } from "./storagePort.ts"

/** A fiber held at a failpoint until the driver releases it. */
export interface Pause {
  readonly label: string
  readonly incarnation: number
  readonly gate: Deferred.Deferred<void>
}

/** A fault injected on purpose: a defect at a maintenance failpoint. */
class InjectedFault extends Error {}

/** What the handlers report to and act on. */
export interface FailpointHost {
  readonly faults: FaultPlan
  readonly trace: (line: string) => void
  readonly verbose?: boolean
  readonly now: () => number
  readonly touch: () => void
  readonly monitor: Monitor
  readonly stats: { faults: number }
  readonly paused: Array<Pause>
}

/** The handlers of one world. */
export const makeFailpoints = (host: FailpointHost) => {
  const pause = (label: string, incarnation: number) =>
    Effect.suspend(() => {
      const gate = Deferred.makeUnsafe<void>()
      host.paused.push({ label, incarnation, gate })
      host.trace(`  paused at ${label}`)
      return Deferred.await(gate)
    })

  /** Reports a hit; the fault to inject there, if any. */
  const hit = (location: string, holder: Holder, report: () => void) => {
    host.touch()
    if (host.verbose) host.trace(`    ${location} ${JSON.stringify(currentOrigin() ?? null)} t=${host.now()}`)
    report()
    const fault = host.faults.decide(location, host.paused.length)
    if (fault === "none") return fault
    host.stats.faults++
    if (fault === "evict") holder.abort(`evicted at ${location}`)
    return fault
  }

  return {
    maintenance:
      (holder: Holder) =>
      (location: ThreadMaintenanceFailpointLocation): Effect.Effect<void> =>
        Effect.suspend(() => {
          switch (hit(location, holder, () => host.monitor.maintenanceHit(currentOrigin(), location))) {
            case "none":
              return Effect.void
            case "evict":
              return Effect.interrupt
            case "fail":
              host.trace(`  defect injected at ${location}`)
              return Effect.die(new InjectedFault(location))
            case "pause":
              return pause(location, holder.id)
          }
        }),
    runtime:
      (holder: Holder) =>
      (location: RuntimeFailpointLocation): Effect.Effect<void, DurableRuntimeFailpointError> =>
        Effect.suspend((): Effect.Effect<void, DurableRuntimeFailpointError> => {
          switch (hit(location, holder, () => host.monitor.runtimeHit(currentOrigin(), location))) {
            case "none":
              return Effect.void
            case "evict":
              return Effect.interrupt
            case "fail":
              host.trace(`  failure injected at ${location}`)
              return Effect.fail(
                new DurableRuntimeFailpointError({ location, message: `injected at ${location}` }),
              )
            case "pause":
              return pause(location, holder.id)
          }
        }),
  }
}
