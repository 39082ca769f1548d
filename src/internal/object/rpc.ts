/**
 * Typed results across the Workers RPC boundary. A thrown error keeps only its message there,
 * so a call returns an envelope: its success value or one of its errors, encoded with the
 * Schemas the call table declares, which the client decodes back. A defect or an interruption
 * rejects the call instead (the client sees it as `ThreadObjectUnavailable`). Causes stay
 * inside the Object: they may quote stored values.
 */
import { Cause, Effect, Exit, Schema } from "effect"
import { CALL_NAMES, type CallError, type CallName, type CallSuccess, ThreadObjectCalls } from "./calls.ts"

/** The envelope of every RPC result. @internal */
export type RpcResult =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }

/** The RPC could not reach the Object, or the Object failed unexpectedly (a defect, a shutdown). */
export class ThreadObjectUnavailable extends Schema.TaggedError<ThreadObjectUnavailable>()(
  "ThreadObjectUnavailable",
  { entryPoint: Schema.String, message: Schema.String },
) {}

/** Every error any call of a `ThreadObject` answers with; each call's own is narrower. */
export const ThreadObjectError = Schema.Union([
  ...new Set(
    CALL_NAMES.flatMap(
      (name): ReadonlyArray<Schema.Top> =>
        (ThreadObjectCalls[name].error as Schema.Union<ReadonlyArray<Schema.Top>>).members,
    ),
  ),
]) as unknown as Schema.Codec<ThreadObjectError, unknown>
export type ThreadObjectError<K extends CallName = CallName> = CallError<K>

/** Why a client call failed: the call's own errors, or the Object could not be reached. */
export type ThreadClientError<K extends CallName = CallName> = CallError<K> | ThreadObjectUnavailable

/** The Schemas of one call, loosely typed for the generic encoders. */
const schemasOf = (name: CallName) =>
  ThreadObjectCalls[name] as unknown as {
    readonly success: Schema.Codec<unknown, unknown>
    readonly error: Schema.Codec<unknown, unknown>
  }

/**
 * The error a failed call answers with, if it failed with one of its declared errors; none for
 * a defect, an interruption or a failed incarnation. @internal
 */
export const declaredError = (name: CallName, cause: Cause.Cause<unknown>): unknown => {
  const failure = cause.reasons.find(Cause.isFailReason)
  return failure !== undefined && Schema.is(schemasOf(name).error)(failure.error) ? failure.error : undefined
}

const withoutCause = (encoded: unknown): unknown => {
  if (typeof encoded !== "object" || encoded === null || !("cause" in encoded)) return encoded
  const { cause: _cause, ...rest } = encoded as Record<string, unknown>
  return rest
}

/** Thrown to reject an RPC: only the message crosses the boundary. */
const rejection = (name: string, cause: Cause.Cause<unknown>) =>
  new Error(
    Cause.hasInterruptsOnly(cause)
      ? `${name} was interrupted (the Object is shutting down)`
      : `${name} failed unexpectedly`,
  )

/** A call's exit as its envelope; anything but a success or a declared error rejects. @internal */
export const toRpcResult = (name: CallName, exit: Exit.Exit<unknown, unknown>): RpcResult => {
  const schemas = schemasOf(name)
  if (Exit.isSuccess(exit)) return { ok: true, value: Schema.encodeSync(schemas.success)(exit.value) }
  const error = declaredError(name, exit.cause)
  if (error === undefined) throw rejection(name, exit.cause)
  return { ok: false, error: withoutCause(Schema.encodeSync(schemas.error)(error)) }
}

/** An envelope decoded back into the call's value or its typed error. @internal */
export const fromRpcResult = <K extends CallName>(
  name: K,
  result: RpcResult,
): Effect.Effect<CallSuccess<K>, CallError<K> | ThreadObjectUnavailable> => {
  const schemas = schemasOf(name)
  const malformed = (cause: Schema.SchemaError) =>
    new ThreadObjectUnavailable({
      entryPoint: name,
      message: `the Object answered with a malformed result: ${cause.message}`,
    })
  if (result.ok)
    return Effect.mapError(
      Schema.decodeUnknownEffect(schemas.success)(result.value),
      malformed,
    ) as Effect.Effect<CallSuccess<K>, ThreadObjectUnavailable>
  return Effect.flatMap(
    Effect.mapError(Schema.decodeUnknownEffect(schemas.error)(result.error), malformed),
    (error) => Effect.fail(error as CallError<K>),
  )
}
