/**
 * How a workflow's pieces are stored in a Thread: the Submission of an execution (its agent,
 * input and output), the names of the events its deferreds and resumes arrive as, and the JSON
 * form of an encoded exit (an activity's result, a deferred's completion).
 */
import { type Cause, Effect, Exit, Option, Schema } from "effect"
import { Workflow as WorkflowModule } from "effect/workflow"

/** The Thread of every execution; its Object is named by the execution id. @internal */
export const WORKFLOW_THREAD_ID = "workflow"

/** The event a resume sends to a suspended execution. @internal */
export const RESUME_EVENT = "workflow/resume"

/** The longest event name a Thread accepts. */
const MAX_EVENT_NAME = 128

/** The longest event id a Thread accepts. */
const MAX_EVENT_ID = 256

const DEFERRED_PREFIX = "workflow/deferred/"

/** The SHA-256 of `text`, in hex. */
const sha256 = (text: string) =>
  Effect.map(
    Effect.promise(() => crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))),
    (digest) => [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join(""),
  )

/**
 * The event that completes the deferred `name` of an execution: `workflow/deferred/<name>`, or,
 * when that is longer than an event name may be, `workflow/deferred/sha256:<hash of name>`.
 * @internal
 */
export const deferredEvent = (name: string): Effect.Effect<string> =>
  DEFERRED_PREFIX.length + name.length <= MAX_EVENT_NAME
    ? Effect.succeed(`${DEFERRED_PREFIX}${name}`)
    : Effect.map(sha256(name), (hash) => `${DEFERRED_PREFIX}sha256:${hash}`)

/**
 * The event id of a deferred's completion: its name, or its hashed event name when the name is
 * longer than an event id may be. A second completion has the same id and changes nothing.
 * @internal
 */
export const deferredEventId = (name: string): Effect.Effect<string> =>
  name.length <= MAX_EVENT_ID ? Effect.succeed(name) : deferredEvent(name)

/** What every workflow's agent id starts with. @internal */
export const WORKFLOW_AGENT_PREFIX = "workflow/"

/** The agent id of a workflow's executions. @internal */
export const workflowAgentId = (workflowName: string): string => `${WORKFLOW_AGENT_PREFIX}${workflowName}`

/** An exit whose values are already encoded by their Schemas, as JSON. @internal */
export const EncodedExitJson = Schema.toCodecJson(Schema.Exit(Schema.Json, Schema.Json, Schema.Json))

/** An exit whose values are encoded but whose defects are raw, as JSON. @internal */
const RawDefectExitJson = Schema.toCodecJson(Schema.Exit(Schema.Json, Schema.Json, Schema.Defect()))

/** Encoded values may be `undefined` (a `Void` success): JSON keeps them as `null`. */
const toJsonValues = (exit: Exit.Exit<unknown, unknown>): Exit.Exit<Schema.Json, Schema.Json> =>
  Exit.mapBoth(exit, {
    onSuccess: (value) => (value ?? null) as Schema.Json,
    onFailure: (error) => (error ?? null) as Schema.Json,
  })

/** The JSON of an exit whose defects the deferred's Schema already encoded. @internal */
export const encodeDeferredExit = (exit: Exit.Exit<unknown, unknown>): Schema.Json =>
  Schema.encodeSync(EncodedExitJson)(toJsonValues(exit)) as Schema.Json

/** The JSON of an activity's exit (encoded values, raw defects). @internal */
export const encodeActivityExit = (exit: Exit.Exit<unknown, unknown>): Schema.Json =>
  Schema.encodeSync(RawDefectExitJson)(toJsonValues(exit)) as Schema.Json

/**
 * An activity's recorded result: completed with an exit, or suspended, with the failure that
 * suspended it under `SuspendOnFailure` (absent in records of earlier releases). @internal
 */
export const ActivityRecord = Schema.Union([
  Schema.Struct({ _tag: Schema.Literal("Complete"), exit: Schema.Json }),
  Schema.Struct({
    _tag: Schema.Literal("Suspended"),
    cause: Schema.optionalKey(Schema.Json),
    failed: Schema.optionalKey(Schema.Boolean),
  }),
])
/** @internal */
export type ActivityRecord = typeof ActivityRecord.Type

/** Decodes a recorded activity exit back to an exit of encoded values. @internal */
export const decodeActivityExit = (json: Schema.Json): Exit.Exit<unknown, unknown> =>
  Schema.decodeUnknownSync(RawDefectExitJson)(json)

/** Decodes a deferred's completion. @internal */
export const decodeDeferredExit = (json: Schema.Json): Exit.Exit<unknown, unknown> =>
  Schema.decodeUnknownSync(EncodedExitJson)(json)

/**
 * @internal The most JSON characters of a suspension's cause kept in its record (the default
 * `maxStoredValueBytes` is 128 KiB); a larger cause is left out and `poll` answers without it.
 */
export const SUSPENSION_CAUSE_MAX_CHARS = 8_192

/** A suspension's cause (its defects raw), as JSON. */
const SuspensionCauseJson = Schema.toCodecJson(Schema.Cause(Schema.Never, Schema.Defect()))

/**
 * The record of an activity's suspension, with its cause (when it encodes) and whether a
 * failure caused it. @internal
 */
export const suspendedRecord = (result: {
  readonly cause?: Cause.Cause<never> | undefined
  readonly failed?: boolean | undefined
}): ActivityRecord => {
  const encoded =
    result.cause === undefined
      ? undefined
      : Option.getOrUndefined(Schema.encodeUnknownOption(SuspensionCauseJson)(result.cause))
  // A cause past the bound is left out, so the suspension itself still fits a stored value.
  const cause =
    encoded === undefined || JSON.stringify(encoded).length > SUSPENSION_CAUSE_MAX_CHARS ? undefined : encoded
  return {
    _tag: "Suspended",
    ...(cause === undefined ? {} : { cause: cause as Schema.Json }),
    ...(result.failed === true ? { failed: true } : {}),
  }
}

/**
 * The `Suspended` result a recorded suspension stands for: its cause when it was recorded and
 * decodes (a defect's value that does not survive JSON is kept as JSON). @internal
 */
export const suspendedResult = (record: Extract<ActivityRecord, { readonly _tag: "Suspended" }>) => {
  const cause =
    record.cause === undefined
      ? undefined
      : Option.getOrUndefined(Schema.decodeUnknownOption(SuspensionCauseJson)(record.cause))
  return new WorkflowModule.Suspended({
    ...(cause === undefined ? {} : { cause }),
    ...(record.failed === true ? { failed: true } : {}),
  })
}
