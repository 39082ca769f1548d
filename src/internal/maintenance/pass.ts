/**
 * One maintenance event. The envelope defers wake hints, serializes events of this layer
 * instance, bounds the whole event (permit wait included) by a cooperative 14-minute deadline,
 * and on any failure cause rearms a bounded retry after the event Scope closed, before the
 * failure propagates so that workerd redelivers the alarm.
 */
import { Clock, DateTime, Effect, Option } from "effect"
import type { Semaphore } from "effect"
import type { DurableBindingFailure } from "../../core/AgentRegistration.ts"
import type { DurableWorkerFailure } from "../../core/DurableAgentRuntime.ts"
import type { ThreadProjectionError } from "../../core/ThreadProjectionMaintenance.ts"
import { type ActionableServices, runActionable } from "./actionable.ts"
import type { DurableAlarmService } from "./alarmService.ts"
import { type AuxiliaryHooks, startAuxiliary } from "./auxiliary.ts"
import { EVENT_DEADLINE_MILLIS, YIELD_AFTER_MILLIS } from "./backoff.ts"
import type { BeginResult } from "./begin.ts"
import type { MaintenanceEnv } from "./env.ts"
import { DurableAlarmError } from "./errors.ts"
import { finishCaughtUp } from "./finish.ts"
import type { ThreadPublicationService } from "./hooks.ts"
import { rearmFailure } from "./rearm.ts"
import { annotateReport, MaintenancePassReport } from "./report.ts"
import type { MaintenanceObservation } from "./state.ts"

/** Why a maintenance pass failed. */
export type MaintenancePassFailure =
  DurableWorkerFailure | DurableBindingFailure | DurableAlarmError | ThreadProjectionError

/** @internal */
export interface PassDependencies {
  readonly env: MaintenanceEnv
  readonly alarm: DurableAlarmService["Service"]
  /** One per layer instance: overlapping deliveries run one after another. */
  readonly permit: Semaphore.Semaphore
  readonly services: ActionableServices
  readonly publication: ThreadPublicationService
  readonly auxiliary: AuxiliaryHooks
  readonly beginPass: (observed: MaintenanceObservation) => Effect.Effect<BeginResult, DurableAlarmError>
}

const passBody = (
  deps: PassDependencies,
  window: { readonly yieldAfter: DateTime.Utc; readonly dispatchUntil: DateTime.Utc },
  observed: MaintenanceObservation,
) =>
  Effect.gen(function* () {
    const { env, publication } = deps
    const started = yield* env.gate.withSnapshot((activeAtStart) =>
      Effect.gen(function* () {
        const begin = yield* deps.beginPass(observed)
        // The gate excludes a producer starting between the snapshot and this certification.
        if (begin._tag === "Actionable" && activeAtStart === 0)
          yield* publication.prepareGeneration(begin.generation)
        return { begin, activeAtStart }
      }),
    )
    const auxiliary = yield* startAuxiliary(deps.auxiliary, window.dispatchUntil)

    // Publication gate: required publication drains before dependent native execution.
    const due = yield* publication.pendingDeadline
    const now = yield* Clock.currentTimeMillis
    if (started.begin._tag === "Actionable" || (Option.isSome(due) && due.value <= now))
      yield* publication.drain
    const pending = yield* publication.pendingDeadline

    if (started.begin._tag === "CaughtUp" || Option.isSome(pending)) {
      yield* auxiliary.finish
      const alarm = yield* finishCaughtUp(env)
      return yield* annotateReport(
        MaintenancePassReport.make({
          phase: "caught-up",
          recovered: 0,
          settled: 0,
          nonterminal: started.begin.nonterminal,
          alarm,
        }),
      )
    }
    const result = yield* runActionable(env, deps.services, {
      started: { ...started.begin, activeAtStart: started.activeAtStart },
      observed,
      auxiliary,
      yieldAfter: window.yieldAfter,
    })
    return yield* annotateReport(MaintenancePassReport.make({ phase: "actionable", ...result }))
  }).pipe(Effect.withSpan("ThreadMaintenance.pass"))

/** @internal */
export const makePass = (
  deps: PassDependencies,
): Effect.Effect<MaintenancePassReport, MaintenancePassFailure> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const window = {
      yieldAfter: DateTime.makeUnsafe(now + YIELD_AFTER_MILLIS),
      dispatchUntil: DateTime.makeUnsafe(now + EVENT_DEADLINE_MILLIS),
    }
    const observed: MaintenanceObservation = { nativeOnly: false }
    return yield* deps.alarm.withWakesDeferred(
      deps.permit.withPermit(
        // The event Scope (auxiliary fibers, Attempt ownership) closes before rearming.
        Effect.scoped(passBody(deps, window, observed)).pipe(
          Effect.onError(() => rearmFailure(deps.env, observed)),
        ),
      ),
    )
  }).pipe(
    Effect.timeoutOrElse({
      duration: EVENT_DEADLINE_MILLIS,
      orElse: () =>
        Effect.fail(
          new DurableAlarmError({
            operation: "maintenance pass deadline",
            message:
              "The maintenance pass reached its 14 minute deadline and was interrupted; durable recovery remains pending",
          }),
        ),
    }),
  )
