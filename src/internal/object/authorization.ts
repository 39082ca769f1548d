/**
 * Authorization of the privileged entry points (approve/deny, resolving an Unknown Outcome,
 * abort, admin retry, repairing the maintenance record). The application supplies a check per
 * entry point, an Effect over the caller's identity and the target; a refusal is a typed
 * `Unauthorized` returned before anything is written. Without an `authorization` option every
 * caller that can reach the Object (a Worker holding its namespace binding) is trusted; with
 * one, an entry point it does not name is refused.
 */
import { Effect, Schema } from "effect"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import type { DurableObjectContext } from "../../CloudflareBindings.ts"

/** The entry points that need authorization. */
export const PrivilegedEntryPoint = Schema.Literals([
  "abort",
  "resolveApproval",
  "resolveUnknown",
  "retry",
  "repairMaintenance",
])
export type PrivilegedEntryPoint = typeof PrivilegedEntryPoint.Type

/** Who calls, as the Worker vouches for them: a subject and, optionally, a credential to check. */
export class Caller extends Schema.Class<Caller>("@effect-agent/platform-cloudflare/Caller")({
  subject: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)),
  credential: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4_096))),
}) {}

/** The caller may not do this; nothing was written. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  entryPoint: Schema.String,
  message: Schema.String,
}) {}

/** What a check decides on. */
export interface AuthorizationRequest {
  readonly entryPoint: PrivilegedEntryPoint
  /** Absent when the client sent no identity. */
  readonly caller: Caller | undefined
  readonly threadId: ThreadId
  readonly submissionId?: SubmissionId
}

/** An application's check: succeed to allow, fail with `Unauthorized` to refuse. */
export type AuthorizationCheck = (
  request: AuthorizationRequest,
) => Effect.Effect<void, Unauthorized, DurableObjectContext>

/** One check for every privileged entry point, or one per entry point. */
export type Authorization = AuthorizationCheck | { readonly [K in PrivilegedEntryPoint]?: AuthorizationCheck }

/** @internal Runs the check that applies to `request`. */
export const authorize = (
  authorization: Authorization | undefined,
  request: AuthorizationRequest,
): Effect.Effect<void, Unauthorized, DurableObjectContext> => {
  if (authorization === undefined) return Effect.void
  const check = typeof authorization === "function" ? authorization : authorization[request.entryPoint]
  if (check === undefined) {
    return Effect.fail(
      new Unauthorized({
        entryPoint: request.entryPoint,
        message: `no authorization check is configured for ${request.entryPoint}`,
      }),
    )
  }
  return Effect.suspend(() => check(request)).pipe(Effect.withSpan("ThreadObject.authorize"))
}
