/**
 * The `portCall` entry point: a routed request from another Object. It is decoded first (a
 * request that does not decode is refused by name and writes nothing); a mutating kind runs
 * through the mutation gate, so it prearms the generation and the alarm before its body, and a
 * failed prearm refuses the request without running it; a read-only kind bypasses the gate.
 * The handler never calls another Object, so the gate is never held across one.
 */
import { spanned } from "../../core/internal/spanned.ts"
import { Cause, Effect, Exit, Schema } from "effect"
import { DurableAlarmError } from "../maintenance/errors.ts"
import { ThreadMaintenance } from "../maintenance/maintenance.ts"
import {
  PortEnvelope,
  PortProtocolError,
  PortReply,
  type PortReplies,
  type PortRequest,
  type PortRequestTag,
  PORT_REQUEST_ACCESS,
} from "../port/portProtocol.ts"
import { decodeRequest, ROUTED_REQUEST_MAX_CHARS } from "./decodeRequest.ts"
import type { RpcResult } from "./rpc.ts"

const encodeReply = Schema.encodeSync(PortReply)
const encodeRefusal = Schema.encodeSync(PortProtocolError)

/**
 * The envelope of a port call: the encoded reply, or the encoded refusal. A defect or an
 * interruption rejects the call; the sender sees it as unavailable and retries. @internal
 */
export const toPortResult = (exit: Exit.Exit<PortReply, unknown>): RpcResult => {
  if (Exit.isSuccess(exit)) return { ok: true, value: encodeReply(exit.value) }
  const failure = refusalOf(exit.cause)
  if (failure === undefined) {
    throw new Error(
      Cause.hasInterruptsOnly(exit.cause)
        ? "portCall was interrupted (the Object is shutting down)"
        : "portCall failed unexpectedly",
    )
  }
  return { ok: false, error: encodeRefusal(failure) }
}

const refusalOf = (cause: Cause.Cause<unknown>): PortProtocolError | undefined => {
  const failure = cause.reasons.find(Cause.isFailReason)
  return failure !== undefined && failure.error instanceof PortProtocolError ? failure.error : undefined
}

/** Whether a failed port call is a refusal the sender is answered with (not a rejection). @internal */
export const isPortRefusal = (cause: Cause.Cause<unknown>): boolean => refusalOf(cause) !== undefined

/** The receiver's handler of each request kind. @internal */
export type PortHandlers<R> = {
  readonly [K in PortRequestTag]: (
    request: Extract<PortRequest, { readonly _tag: K }>,
    messageId: string,
  ) => Effect.Effect<PortReplies[K], { readonly message: string }, R>
}

const refusedAs = (reason: PortProtocolError["reason"]) => (error: { readonly message: string }) =>
  new PortProtocolError({ reason, message: error.message })

/** @internal A routed request decoded, or refused as malformed; reads no storage. */
export const decodePortEnvelope = (raw: unknown) =>
  decodeRequest(
    "portCall",
    PortEnvelope,
    ROUTED_REQUEST_MAX_CHARS,
  )(raw).pipe(Effect.mapError(refusedAs("malformed-request")))

/** @internal */
export const makePortCall = <R>(handlers: PortHandlers<R>) =>
  spanned("ThreadObject.portCall")(function* (raw: unknown) {
    // Bounded by what an outbox row can hold, not by this Object's input limit: a child's
    // settlement carries an output its own Object's `maxStoredValueBytes` allowed.
    const { messageId, request } = yield* decodePortEnvelope(raw)
    yield* Effect.annotateCurrentSpan({ kind: request._tag, messageId })
    const handler = handlers[request._tag] as (
      request: PortRequest,
      messageId: string,
    ) => Effect.Effect<PortReplies[PortRequestTag], { readonly message: string }, R>
    const handled = handler(request, messageId).pipe(
      Effect.tapError((error) =>
        Effect.logWarning("Routed request failed at the receiver", { kind: request._tag, messageId }, error),
      ),
      Effect.mapError(refusedAs("receiver-failed")),
    )
    if (PORT_REQUEST_ACCESS[request._tag] === "read-only") return yield* handled
    const maintenance = yield* ThreadMaintenance
    return yield* maintenance.withMutation(handled).pipe(
      Effect.catchIf(
        (error): error is DurableAlarmError => error instanceof DurableAlarmError,
        (error) =>
          Effect.fail(
            new PortProtocolError({
              reason: "prearm-failed",
              message: `could not arm its maintenance alarm before the mutation: ${error.message}`,
            }),
          ),
      ),
    )
  })
