/**
 * Typed errors across the Workers RPC boundary. A thrown error keeps only its message there,
 * so entry points return an envelope: the encoded success value, or the encoded tagged error
 * the client decodes back into its class. A defect or an interruption rejects the call
 * instead (the client sees it as `ThreadObjectUnavailable`). Causes stay inside the Object:
 * they may quote stored values.
 */
import { Cause, Effect, Exit, Schema } from "effect"
import { BindingDigestMismatch, BindingUnavailable } from "../../core/AgentRegistration.ts"
import {
  JoinRefused,
  NotPending,
  RunJournalError,
  SettlementConflict,
  SettlementTimeout,
  ThreadStoreError,
} from "../../core/DurableAgentRuntime.ts"
import {
  AdmissionRefused,
  FenceRejected,
  IdempotencyConflict,
  InvalidTransition,
  LedgerError,
  OwnershipLost,
  SubmissionNotFound,
} from "../../core/SubmissionLedger.ts"
import { MessageOutboxError } from "../../core/MessageOutbox.ts"
import type { DurableRuntimeFailpointError } from "../../core/internal/runtime/shared/failpointError.ts"
import { ThreadProjectionError } from "../../core/ThreadProjectionMaintenance.ts"
import {
  DurableAlarmError,
  MaintenanceRecordDamaged,
  ThreadHostMaintenanceError,
  ThreadPublicationError,
} from "../maintenance/errors.ts"
import { Unauthorized } from "./authorization.ts"
import { InvalidRequest, type RpcResult } from "./protocol.ts"

/** The RPC could not reach the Object, or the Object failed unexpectedly. */
export class ThreadObjectUnavailable extends Schema.TaggedError<ThreadObjectUnavailable>()(
  "ThreadObjectUnavailable",
  { entryPoint: Schema.String, message: Schema.String },
) {}

/** Every typed error a client may see from an entry point. */
export const ThreadObjectError = Schema.Union([
  InvalidRequest,
  AdmissionRefused,
  IdempotencyConflict,
  JoinRefused,
  SubmissionNotFound,
  NotPending,
  SettlementTimeout,
  InvalidTransition,
  LedgerError,
  FenceRejected,
  OwnershipLost,
  SettlementConflict,
  ThreadStoreError,
  RunJournalError,
  BindingUnavailable,
  BindingDigestMismatch,
  ThreadProjectionError,
  MessageOutboxError,
  DurableAlarmError,
  ThreadPublicationError,
  ThreadHostMaintenanceError,
  MaintenanceRecordDamaged,
  Unauthorized,
])
export type ThreadObjectError = typeof ThreadObjectError.Type

/**
 * What an entry point may fail with inside the Object: a client error, or a typed failure a
 * test failpoint injected, which reaches the caller as an unexpected failure. @internal
 */
export type EntryPointError = ThreadObjectError | DurableRuntimeFailpointError

const isClientError = Schema.is(ThreadObjectError)

/**
 * The client error of a failed entry point; none for a defect, an interruption, a failed
 * incarnation or an injected test failure. @internal
 */
export const clientError = (cause: Cause.Cause<unknown>): ThreadObjectError | undefined => {
  const failure = cause.reasons.find(Cause.isFailReason)
  return failure !== undefined && isClientError(failure.error) ? failure.error : undefined
}

const encodeError = Schema.encodeUnknownSync(ThreadObjectError)
const decodeError = Schema.decodeUnknownEffect(ThreadObjectError)

const withoutCause = (encoded: unknown): unknown => {
  if (typeof encoded !== "object" || encoded === null || !("cause" in encoded)) return encoded
  const { cause: _cause, ...rest } = encoded as Record<string, unknown>
  return rest
}

/** Thrown to reject an RPC: only the message crosses the boundary. @internal */
const rejection = (entryPoint: string, cause: Cause.Cause<unknown>) =>
  new Error(
    Cause.hasInterruptsOnly(cause)
      ? `${entryPoint} was interrupted (the Object is shutting down)`
      : `${entryPoint} failed unexpectedly`,
  )

/**
 * Runs an entry point to its envelope. Client errors become `{ ok: false }`; anything else
 * rejects. @internal
 */
export const toRpcResult = <A, I>(
  entryPoint: string,
  value: Schema.Codec<A, I>,
  exit: Exit.Exit<A, unknown>,
): RpcResult => {
  if (Exit.isSuccess(exit)) return { ok: true, value: Schema.encodeSync(value)(exit.value) }
  const error = clientError(exit.cause)
  if (error === undefined) throw rejection(entryPoint, exit.cause)
  return { ok: false, error: withoutCause(encodeError(error)) }
}

/** Decodes an envelope back into the value or the typed error. @internal */
export const fromRpcResult = <A, I>(
  entryPoint: string,
  value: Schema.Codec<A, I>,
  result: RpcResult,
): Effect.Effect<A, ThreadObjectError | ThreadObjectUnavailable> => {
  const malformed = (cause: Schema.SchemaError) =>
    new ThreadObjectUnavailable({
      entryPoint,
      message: `the Object answered with a malformed result: ${cause.message}`,
    })
  if (result.ok) return Effect.mapError(Schema.decodeUnknownEffect(value)(result.value), malformed)
  return Effect.flatMap(Effect.mapError(decodeError(result.error), malformed), Effect.fail)
}
