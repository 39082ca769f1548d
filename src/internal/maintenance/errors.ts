/**
 * The typed failures of maintenance (re-exported by `Alarm`): the alarm slot and the record, the
 * hooks an application provides, and the union a pass fails with.
 */
import { Effect, Schema } from "effect"
import type { DurableBindingFailure } from "../../core/AgentRegistration.ts"
import type { DurableWorkerFailure } from "../../core/DurableAgentRuntime.ts"
import type { ThreadProjectionError } from "../../core/ThreadProjectionMaintenance.ts"
import { safeCauseMessage } from "../boundary.ts"

/**
 * A Durable Object storage or alarm operation failed, a host declared an invalid allowance, or
 * the maintenance event ran out of time. `operation` names the step.
 */
export class DurableAlarmError extends Schema.TaggedError<DurableAlarmError>()("DurableAlarmError", {
  operation: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect()),
}) {}

/**
 * The stored maintenance record does not decode. Nothing runs on a record that cannot be
 * trusted: mutations and passes refuse with this error until an operator calls
 * `repairMaintenance`, which rebuilds it from the ledger. `field` is the path of the first
 * problem (`dirty`, `retry.stalls`, …, or `record` for the record as a whole).
 */
export class MaintenanceRecordDamaged extends Schema.TaggedError<MaintenanceRecordDamaged>()(
  "MaintenanceRecordDamaged",
  { field: Schema.String, message: Schema.String },
) {}

/**
 * A `ThreadPublication` hook failed. `operation` names what it was doing; `cause` is what failed
 * under it (its storage, its destination, the gate's `DurableAlarmError`).
 */
export class ThreadPublicationError extends Schema.TaggedError<ThreadPublicationError>()(
  "ThreadPublicationError",
  {
    operation: Schema.String,
    message: Schema.String,
    cause: Schema.optionalKey(Schema.Defect()),
  },
) {}

/**
 * A `ThreadHostMaintenance` hook failed. `hook` names the hook (which lane, when several run
 * through `ThreadHostMaintenance.all`), `operation` what it was doing; `cause` is what failed
 * under it (its storage, its destination, the gate's `DurableAlarmError`).
 */
export class ThreadHostMaintenanceError extends Schema.TaggedError<ThreadHostMaintenanceError>()(
  "ThreadHostMaintenanceError",
  {
    hook: Schema.String,
    operation: Schema.String,
    message: Schema.String,
    cause: Schema.optionalKey(Schema.Defect()),
  },
) {}

/** What reading the deadline of every hook a pass serves can fail with. */
export type HookDeadlineFailure = DurableAlarmError | ThreadPublicationError | ThreadHostMaintenanceError

/** Why a maintenance pass failed. */
export type MaintenancePassFailure =
  | DurableWorkerFailure
  | DurableBindingFailure
  | DurableAlarmError
  | ThreadProjectionError
  | ThreadPublicationError
  | ThreadHostMaintenanceError

/** @internal The record damage behind a storage failure, if that is what it was. */
export const recordDamageOf = (error: { readonly cause?: unknown }): MaintenanceRecordDamaged | undefined =>
  error.cause instanceof MaintenanceRecordDamaged ? error.cause : undefined

/** @internal */
export const alarmErrorFromCause = (operation: string, cause: unknown): DurableAlarmError =>
  new DurableAlarmError({
    operation,
    message:
      cause instanceof MaintenanceRecordDamaged
        ? `${cause.message} (damaged field: ${cause.field}); repair it with repairMaintenance`
        : safeCauseMessage(cause, `Durable Object storage could not ${operation}`),
    cause,
  })

/** A mutation refused because the maintenance record is damaged answers with the damage. @internal */
export const refuseOnDamage = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<A, E | MaintenanceRecordDamaged, R> =>
  Effect.mapError(effect, (error: E) =>
    error instanceof DurableAlarmError ? (recordDamageOf(error) ?? error) : error,
  )
