/**
 * One maintenance event, run as phases that hand each other values: begin (the generation and
 * the crash-fallback prearm), the publication gate, then either the caught-up finish or the
 * native phase and the actionable finish. Each phase after begin runs with the observation a
 * failure inside it means for failure rearming.
 *
 * The envelope defers wake hints, serializes events of this layer instance, bounds the whole
 * event (permit wait included) by the cooperative 14-minute deadline, and on any failure after
 * the generation was read rearms a bounded retry once the event Scope has closed, still under
 * the pass permit, before the failure propagates so that workerd redelivers the alarm.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, DateTime, Effect, Option, Ref } from "effect"
import type { Semaphore } from "effect"
import type { ThreadId } from "../../core/Identifiers.ts"
import { type ActionableServices, finishNative, runNative } from "./actionable.ts"
import type { DurableAlarmService } from "./alarmService.ts"
import { type AuxiliaryHooks, startAuxiliary } from "./auxiliary.ts"
import { EVENT_DEADLINE_MILLIS, FURTHER_HEADS_BUDGET_MILLIS, YIELD_AFTER_MILLIS } from "./backoff.ts"
import { beginTransaction } from "./begin.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import type { MaintenancePassFailure } from "./errors.ts"
import { finishCaughtUp } from "./finish.ts"
import type { ThreadPublicationService } from "./hooks.ts"
import { bounded, deadlineError, ObservedFailure, observed, type PassObservation } from "./observation.ts"
import { rearmFailure } from "./rearm.ts"
import { annotateReport, MaintenancePassReport } from "./report.ts"

/** @internal */
export interface PassDependencies {
  readonly env: MaintenanceEnv
  readonly alarm: DurableAlarmService["Service"]
  /** One per layer instance: overlapping deliveries run one after another. */
  readonly permit: Semaphore.Semaphore
  /**
   * Whether the durable lane cursor names the lane of every head Attempt this incarnation
   * started (a finish or failure rearm committed after it). False in a fresh incarnation: an
   * earlier one may have died in an Attempt no commit recorded, and the next event then writes
   * its lane before its first Attempt, so a head that kills its incarnation cannot keep its
   * lane first. A cache: losing it only costs that write.
   */
  readonly cursorCovered: Ref.Ref<boolean>
  readonly services: ActionableServices
  readonly publication: ThreadPublicationService
  readonly auxiliary: AuxiliaryHooks
}

/** The instants of one event. */
interface EventWindow {
  /** The head Attempt is asked to yield between committed turns after this. */
  readonly yieldAfter: DateTime.Utc
  /** Auxiliary admission horizon; the event's deadline too. */
  readonly dispatchUntil: DateTime.Utc
  readonly deadlineAt: number
  /** No further head Attempt starts after this. */
  readonly furtherHeadsUntil: number
}

const passBody = (deps: PassDependencies, window: EventWindow) =>
  Effect.gen(function* () {
    const { env, publication } = deps
    const { deadlineAt } = window
    const started = yield* env.gate.withSnapshot((activeAtStart) =>
      Effect.gen(function* () {
        // A failure before the generation is read leaves nothing to rearm.
        const begin = yield* bounded(deadlineAt)(beginTransaction(env))
        const observation: PassObservation = {
          generation: begin.generation,
          nativeOnly: false,
          ...(begin.retry === undefined ? {} : { retry: begin.retry }),
        }
        yield* observed(
          observation,
          deadlineAt,
        )(
          Effect.gen(function* () {
            yield* env.hit("maintenance:begin:after")
            // The gate excludes a producer starting between the snapshot and this certification.
            if (begin._tag === "Actionable" && activeAtStart === 0)
              yield* publication.prepareGeneration(begin.generation)
          }),
        )
        return { begin, activeAtStart, observation }
      }),
    )
    const { begin, observation } = started
    const phase = observed(observation, deadlineAt)

    // Publication gate: required publication drains before dependent native execution.
    const gate = yield* phase(
      Effect.gen(function* () {
        const auxiliary = yield* startAuxiliary(deps.auxiliary, window.dispatchUntil)
        const due = yield* publication.pendingDeadline
        const now = yield* Clock.currentTimeMillis
        if (begin._tag === "Actionable" || (Option.isSome(due) && due.value <= now)) yield* publication.drain
        const pending = yield* publication.pendingDeadline
        return { auxiliary, deferred: Option.isSome(pending) }
      }),
    )

    if (begin._tag === "CaughtUp" || gate.deferred) {
      return yield* phase(
        Effect.gen(function* () {
          yield* gate.auxiliary.finish
          const alarm = yield* finishCaughtUp(env)
          return MaintenancePassReport.make({
            phase: "caught-up",
            recovered: 0,
            settled: 0,
            nonterminal: begin.nonterminal,
            alarm,
          })
        }),
      )
    }
    const actionable = { ...begin, activeAtStart: started.activeAtStart }
    const withLane = (lane: ThreadId | undefined): PassObservation =>
      lane === undefined ? observation : { ...observation, lane }
    // Each step of the native phase is given the lane of the last head Attempt started before it.
    const native = yield* runNative(
      env,
      deps.services,
      actionable,
      {
        maxHeads: env.config.maxHeadsPerEvent,
        maxTimers: env.config.maxTimersPerEvent,
        furtherUntil: window.furtherHeadsUntil,
        yieldAfter: window.yieldAfter,
      },
      deps.cursorCovered,
      (lane) => observed({ ...withLane(lane), nativeOnly: true }, deadlineAt),
    )
    const result = yield* observed(
      withLane(native.lane),
      deadlineAt,
    )(finishNative(env, deps.services, actionable, native, gate.auxiliary))
    // The finish wrote the cursor: it names the lane of every Attempt so far.
    if (native.lane !== undefined) yield* Ref.set(deps.cursorCovered, true)
    return MaintenancePassReport.make({ phase: "actionable", ...result })
  })

/** @internal */
export const makePass = (
  deps: PassDependencies,
): Effect.Effect<MaintenancePassReport, MaintenancePassFailure> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const window: EventWindow = {
      yieldAfter: DateTime.makeUnsafe(now + YIELD_AFTER_MILLIS),
      dispatchUntil: DateTime.makeUnsafe(now + EVENT_DEADLINE_MILLIS),
      deadlineAt: now + EVENT_DEADLINE_MILLIS,
      furtherHeadsUntil: now + FURTHER_HEADS_BUDGET_MILLIS,
    }
    const report = yield* deps.alarm.withWakesDeferred(
      Effect.scoped(
        Effect.gen(function* () {
          // The permit is held until the failure rearm has committed.
          yield* bounded(window.deadlineAt)(deps.permit.takeScoped(1))
          // The event Scope (auxiliary fibers, Attempt ownership) closes before rearming, and
          // the rearm runs to its end like a finalizer.
          return yield* Effect.scoped(passBody(deps, window)).pipe(
            Effect.catchIf(
              (error): error is ObservedFailure => error instanceof ObservedFailure,
              (failed) =>
                Effect.andThen(
                  Effect.uninterruptible(
                    Effect.flatMap(rearmFailure(deps.env, failed.observation), (committed) =>
                      // The rearm wrote the cursor: it names the lane of every Attempt so far.
                      committed && failed.observation.lane !== undefined
                        ? Ref.set(deps.cursorCovered, true)
                        : Effect.void,
                    ),
                  ),
                  Effect.failCause(failed.failure),
                ),
            ),
            // A failed event whose rearm outlasted the deadline ends with the deadline's failure.
            Effect.catchCause((cause) =>
              Effect.flatMap(Clock.currentTimeMillis, (at) =>
                at >= window.deadlineAt ? Effect.fail(deadlineError()) : Effect.failCause(cause),
              ),
            ),
          )
        }),
      ),
    )
    return yield* annotateReport(report)
  }).pipe(withSpanFast("ThreadMaintenance.pass"))
