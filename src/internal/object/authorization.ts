/**
 * Authorization of a `ThreadObject`'s calls. Every call, reads included, passes the
 * application's check after its request decodes and before anything runs: the check sees the
 * call, its kind, the caller the Worker vouches for and the Thread (and Submission) it
 * addresses, so an application can keep one tenant's Threads from another's and keep operator
 * actions for operators. A refusal is a typed `Unauthorized`; nothing was written.
 *
 * Without an `authorization` option every caller that can reach the Object (a Worker holding
 * its namespace binding) is trusted with every call: the binding is the boundary, as for any
 * Durable Object. An application that serves callers it does not trust passes a check.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Effect } from "effect"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import type { DurableObjectContext } from "../../CloudflareBindings.ts"
import type { Unauthorized } from "./callErrors.ts"
import type { CallKind, CallName, CallsOfKind } from "./calls.ts"
import type { Caller } from "./requests.ts"

/** The calls of kind `operate`: the actions that were privileged before every call was checked. */
export type PrivilegedEntryPoint = CallsOfKind<"operate">

/** What a check decides on. */
export interface AuthorizationRequest {
  /** The call, e.g. `"submit"`, `"history"`, `"resolveApproval"`. */
  readonly entryPoint: CallName
  readonly kind: CallKind
  /** Absent when the client sent no identity. */
  readonly caller: Caller | undefined
  readonly threadId: ThreadId
  /** The Submission a call acts on or reads, when it names one. */
  readonly submissionId?: SubmissionId
  /**
   * The call reads or acts on the whole Object, every Thread it hosts, whatever `threadId` the
   * caller named (`threads`, `threadPage`, `inspectMaintenance`, `obligations`, `verify`,
   * `wake`, `repairMaintenance`, and the schedule calls `schedules`, `schedule`, `unschedule`,
   * and `schedulePage`, whose ids are the Object's: any Thread's schedule is listed, replaced or removed by its id):
   * a policy keyed on `threadId` decides these on who asks.
   */
  readonly objectWide: boolean
}

/** @internal The calls that see or act on every Thread of the Object. */
export const OBJECT_WIDE_CALLS: ReadonlySet<CallName> = new Set<CallName>([
  "threads",
  "threadPage",
  "inspectMaintenance",
  "obligations",
  "verify",
  "wake",
  "repairMaintenance",
  // A schedule id names one schedule of the Object, whichever Thread it admits into.
  "schedules",
  "schedulePage",
  "schedule",
  "unschedule",
])

/**
 * An application's check of every call: succeed to allow, fail with `Unauthorized` to refuse.
 * It may read the Object's `env` (secrets) through `DurableObjectContext`.
 */
export type AuthorizationCheck = (
  request: AuthorizationRequest,
) => Effect.Effect<void, Unauthorized, DurableObjectContext>

/** The `authorization` option of `ThreadObject.make`: one check that sees every call. */
export type Authorization = AuthorizationCheck

/** @internal Runs the application's check; without one every caller is trusted. */
export const authorize = (
  authorization: Authorization | undefined,
  request: AuthorizationRequest,
): Effect.Effect<void, Unauthorized, DurableObjectContext> =>
  authorization === undefined
    ? Effect.void
    : Effect.suspend(() => authorization(request)).pipe(withSpanFast("ThreadObject.authorize"))
