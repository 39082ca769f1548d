/**
 * What a failed pass tells failure rearming: the generation the pass read when it began,
 * whether the failure struck while native work ran, and the lane of the last head Attempt the
 * event started. Each phase is run with its observation as a value; the native phase runs each
 * of its steps (recovery, each lane selection, each head Attempt) as a phase of its own, observed
 * with the lane of the last head Attempt started before it.
 *
 * A phase run with `observed` turns any failure cause (typed failure, defect, interruption,
 * the event deadline) into an `ObservedFailure` carrying its observation; the envelope rearms
 * from it after the event Scope has closed. Every phase, and the wait for the pass permit, is
 * bounded by the one event deadline.
 */
import { Cause, Clock, Effect } from "effect"
import type { ThreadId } from "../../core/Identifiers.ts"
import type { MaintenanceRetry } from "./state.ts"
import { EVENT_DEADLINE_MILLIS } from "./backoff.ts"
import { DurableAlarmError, type MaintenancePassFailure } from "./errors.ts"

/** @internal What a failure at this point of the pass means for the failure rearm. */
export interface PassObservation {
  /** The generation read by the begin transaction. */
  readonly generation: bigint
  /** Whether native work (recovery, lane selection, the head Attempt, binding bookkeeping) runs. */
  readonly nativeOnly: boolean
  /** The lane of the last head Attempt the event started: the rearm makes it the cursor. */
  readonly lane?: ThreadId
  /**
   * The failure retry of the generation as the pass found it. A finish that committed before
   * the event failed may have dropped it; the rearm still counts from it.
   */
  readonly retry?: MaintenanceRetry
}

/** @internal A phase of the pass: `effect` run under one observation. */
export type Phase = <A, E extends MaintenancePassFailure, R>(
  effect: Effect.Effect<A, E, R>,
) => Effect.Effect<A, ObservedFailure, R>

/** @internal A failure of a phase that ran after the generation was read. */
export class ObservedFailure {
  readonly _tag = "ObservedFailure"
  constructor(
    readonly observation: PassObservation,
    readonly failure: Cause.Cause<MaintenancePassFailure>,
  ) {}
}

/** @internal The failure of an event that reached its deadline. */
export const deadlineError = () =>
  new DurableAlarmError({
    operation: "maintenance pass deadline",
    message: `The maintenance pass reached its ${EVENT_DEADLINE_MILLIS / 60_000} minute deadline and was interrupted; durable recovery remains pending`,
  })

/** @internal Fails `effect` with the deadline error once `deadlineAt` (epoch ms) passes. */
export const bounded =
  (deadlineAt: number) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | DurableAlarmError, R> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.timeoutOrElse(effect, {
        duration: Math.max(0, deadlineAt - now),
        orElse: () => Effect.fail(deadlineError()),
      }),
    )

/** @internal Runs a phase of the pass under `observation`, bounded by the event deadline. */
export const observed =
  (observation: PassObservation, deadlineAt: number): Phase =>
  (effect) =>
    bounded(deadlineAt)(effect).pipe(
      Effect.catchCause((failure) => Effect.fail(new ObservedFailure(observation, failure))),
    )
