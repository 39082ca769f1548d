/**
 * The one path of every call into a `ThreadObject`: decode the request (and the caller beside
 * it), pass the application's authorization with the call's kind, run the call's handler, and
 * answer with one of the call's declared errors. A handler may also fail with an internal
 * error; that reaches the caller as a `ThreadObjectFailure` with a reason, and the internal
 * error is logged here, inside the Object.
 */
import { Effect, Schema } from "effect"
import { withSpanFast } from "../../core/internal/spanned.ts"
import type { BindingDigestMismatch, BindingUnavailable } from "../../core/AgentRegistration.ts"
import type { RunJournalError, SettlementConflict, ThreadStoreError } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import type { DurableRuntimeFailpointError } from "../../core/internal/runtime/shared/failpointError.ts"
import type { MessageOutboxError } from "../../core/MessageOutbox.ts"
import type {
  FenceRejected,
  InvalidTransition,
  LedgerError,
  OwnershipLost,
} from "../../core/SubmissionLedger.ts"
import type { ThreadProjectionError } from "../../core/ThreadProjectionMaintenance.ts"
import type {
  DurableAlarmError,
  ThreadHostMaintenanceError,
  ThreadPublicationError,
} from "../maintenance/errors.ts"
import { type Authorization, authorize, OBJECT_WIDE_CALLS } from "./authorization.ts"
import { InvalidRequest, ThreadObjectFailure, type ThreadObjectFailureReason } from "./callErrors.ts"
import {
  CALL_NAMES,
  type CallError,
  type CallName,
  type CallRequest,
  type CallSuccess,
  ThreadObjectCalls,
} from "./calls.ts"
import { decodeRequest } from "./decodeRequest.ts"
import type { ThreadObjectPlatform, ThreadObjectThread } from "./layers.ts"
import { Caller } from "./requests.ts"

/** Everything an incarnation provides to the calls. */
export type ThreadObjectServices = ThreadObjectPlatform | ThreadObjectThread

/** The internal errors a handler may fail with; none reaches a caller by its own tag. */
export type InternalFailure =
  | FenceRejected
  | OwnershipLost
  | InvalidTransition
  | SettlementConflict
  | LedgerError
  | ThreadStoreError
  | MessageOutboxError
  | ThreadProjectionError
  | RunJournalError
  | BindingUnavailable
  | BindingDigestMismatch
  | DurableAlarmError
  | ThreadPublicationError
  | ThreadHostMaintenanceError
  | DurableRuntimeFailpointError

/**
 * The reason each internal error is reported with. Anything else, such as a failure a test
 * failpoint injected (whose name stays out of production bundles), is `internal`.
 */
const REASONS: {
  readonly [
    Tag in Exclude<InternalFailure["_tag"], "DurableRuntimeFailpointError">
  ]: ThreadObjectFailureReason
} = {
  FenceRejected: "conflict",
  OwnershipLost: "conflict",
  InvalidTransition: "conflict",
  SettlementConflict: "conflict",
  LedgerError: "storage",
  ThreadStoreError: "storage",
  MessageOutboxError: "storage",
  ThreadProjectionError: "storage",
  RunJournalError: "journal",
  BindingUnavailable: "binding",
  BindingDigestMismatch: "binding",
  DurableAlarmError: "alarm",
  ThreadPublicationError: "hook",
  ThreadHostMaintenanceError: "hook",
}

const MESSAGES: { readonly [Reason in ThreadObjectFailureReason]: string } = {
  conflict: "a concurrent change won; the call may be retried",
  storage: "the Object's storage failed",
  journal: "the agent's journal does not match its program",
  binding: "no compatible agent code is deployed for the Submission",
  alarm: "the maintenance record or its alarm could not be read or written; a mutation did not run",
  hook: "a hook the application provides failed",
  internal: "the Object failed",
}

/** The handler of one call: its decoded request in, its success or a typed failure out. */
export type CallHandler<K extends CallName> = (
  request: CallRequest<K>,
) => Effect.Effect<CallSuccess<K>, CallError<K> | InternalFailure, ThreadObjectServices>

/** A handler for each call of the table. */
export type CallHandlers = { readonly [K in CallName]: CallHandler<K> }

/** A call as the Object runs it: the raw request and caller in, the call's answer out. */
export type DispatchedCall<K extends CallName> = (
  request: unknown,
  caller?: unknown,
) => Effect.Effect<CallSuccess<K>, CallError<K>, ThreadObjectServices>

/** Every call of the table, dispatched. */
export type DispatchedCalls = { readonly [K in CallName]: DispatchedCall<K> }

const decodeCaller = Schema.decodeUnknownEffect(Schema.UndefinedOr(Caller))

/** The `ThreadObjectFailure` an internal error is reported as. */
const failureOf = (entryPoint: CallName, error: unknown): ThreadObjectFailure => {
  const tag = (error as { readonly _tag?: unknown } | undefined)?._tag
  const reason = (typeof tag === "string" ? REASONS[tag as keyof typeof REASONS] : undefined) ?? "internal"
  return new ThreadObjectFailure({ entryPoint, reason, message: `${entryPoint}: ${MESSAGES[reason]}` })
}

/** A failure a call does not declare, logged here and answered as a `ThreadObjectFailure`. */
const reported =
  <K extends CallName>(name: K) =>
  <A, R>(effect: Effect.Effect<A, CallError<K> | InternalFailure, R>): Effect.Effect<A, CallError<K>, R> => {
    const declared = Schema.is(
      ThreadObjectCalls[name].error as unknown as Schema.Codec<CallError<K>, unknown>,
    )
    return Effect.catch(effect, (error: CallError<K> | InternalFailure) =>
      declared(error)
        ? Effect.fail(error)
        : Effect.logError(`ThreadObject.${name} failed inside the Object`, error).pipe(
            Effect.andThen(Effect.fail(failureOf(name, error) as CallError<K>)),
          ),
    )
  }

/**
 * @internal A call's admission: its caller and request decoded, then the application's
 * authorization. It reads no storage, so an Object not yet built refuses a request with it.
 */
export const admission = <K extends CallName>(name: K, authorization: Authorization | undefined) => {
  const call = ThreadObjectCalls[name]
  const decode = decodeRequest(name, call.request as unknown as Schema.Codec<CallRequest<K>, unknown>)
  return Effect.fnUntraced(function* (raw: unknown, rawCaller?: unknown) {
    const caller = yield* decodeCaller(rawCaller).pipe(
      Effect.mapError(
        (error) => new InvalidRequest({ entryPoint: name, message: `caller: ${error.message}` }),
      ),
    )
    const request = yield* decode(raw)
    const { threadId, submissionId } = request as {
      readonly threadId: ThreadId
      readonly submissionId?: SubmissionId
    }
    yield* authorize(authorization, {
      entryPoint: name,
      kind: call.kind,
      caller,
      threadId,
      ...(submissionId === undefined ? {} : { submissionId }),
      objectWide: OBJECT_WIDE_CALLS.has(name),
    })
    return request
  })
}

/** @internal One call over `handler`: admitted, run, its errors declared or reported. */
export const dispatch = <K extends CallName>(
  name: K,
  handler: CallHandler<K>,
  authorization: Authorization | undefined,
): DispatchedCall<K> => {
  const admit = admission(name, authorization)
  // Untraced with its span built once: `Effect.fn` captures a stack trace on every call, and
  // every submit passes here.
  return Effect.fnUntraced(
    function* (raw: unknown, rawCaller?: unknown) {
      return yield* handler(yield* admit(raw, rawCaller))
    },
    reported(name),
    withSpanFast(`ThreadObject.${name}`),
  )
}

/** @internal A call whose request an `admission` already decoded and authorized. */
export type AdmittedCall<K extends CallName> = (
  request: CallRequest<K>,
) => Effect.Effect<CallSuccess<K>, CallError<K>, ThreadObjectServices>

/** @internal Every call of the table over `handlers`, for requests already admitted. */
export const admittedCalls = (handlers: CallHandlers): { readonly [K in CallName]: AdmittedCall<K> } =>
  Object.fromEntries(
    CALL_NAMES.map((name) => {
      const handler = handlers[name] as CallHandler<CallName>
      const report = reported(name)
      const span = withSpanFast(`ThreadObject.${name}`)
      return [name, (request: CallRequest<CallName>) => span(report(handler(request)))]
    }),
  ) as unknown as { readonly [K in CallName]: AdmittedCall<K> }

/** @internal Every call of the table over `handlers`, checked by `authorization`. */
export const dispatchCalls = (
  handlers: CallHandlers,
  authorization: Authorization | undefined,
): DispatchedCalls =>
  Object.fromEntries(
    CALL_NAMES.map((name) => [name, dispatch(name, handlers[name] as CallHandler<CallName>, authorization)]),
  ) as unknown as DispatchedCalls
