/**
 * An activity's retries through the step retry policy: each failed attempt is journaled with
 * its error and the next attempt's due time, and each backoff is a durable timer, so an
 * eviction during a backoff resumes at the right time. The step's failure carries the
 * activity's encoded exit, which the engine reads back as the activity's result.
 */
import { Context, Schema } from "effect"
import type { RetryPolicy } from "../../core/AgentContext.ts"

/** The annotation: `activity.annotate(ActivityRetry, policy)`. @internal */
export const ActivityRetry = Context.Reference<RetryPolicy | undefined>(
  "@effect-agent/platform-cloudflare/ThreadWorkflowEngine/ActivityRetry",
  { defaultValue: () => undefined },
)

const PREFIX = "the activity failed: "

/** Whether an encoded exit failed with a typed error (a retry policy retries only those). @internal */
export const failedTyped = (exit: Schema.Json): boolean => {
  if (typeof exit !== "object" || exit === null || Array.isArray(exit)) return false
  const cause = (exit as { readonly cause?: unknown }).cause
  return (
    (exit as { readonly _tag?: unknown })._tag === "Failure" &&
    Array.isArray(cause) &&
    cause.some((reason: unknown) => (reason as { readonly _tag?: unknown } | null)?._tag === "Fail")
  )
}

/** The step's failure message for an activity's failed exit. @internal */
export const failureMessage = (exit: Schema.Json): string => `${PREFIX}${JSON.stringify(exit)}`

/** The encoded exit a step's failure message carries, if it is one. @internal */
export const exitOfFailure = (message: string): Schema.Json | undefined => {
  if (!message.startsWith(PREFIX)) return undefined
  try {
    return JSON.parse(message.slice(PREFIX.length)) as Schema.Json
  } catch {
    return undefined
  }
}
