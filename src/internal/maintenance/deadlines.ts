/** The combined host deadline: publication, message delivery, projection and host hooks. */
import { Cause, Effect, Option } from "effect"
import { catchUnlessInterrupted, safeCauseMessage } from "../boundary.ts"
import type { ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import {
  type DurableAlarmError,
  type HookDeadlineFailure,
  ThreadHostMaintenanceError,
  ThreadPublicationError,
} from "./errors.ts"
import type { ThreadMessageDeliveryService, ThreadPublicationService } from "./hooks.ts"
import { hostLanes, type ThreadHostMaintenanceService } from "./hostMaintenance.ts"

/** @internal Option-min. */
export const earliestDeadline = (
  a: Option.Option<number>,
  b: Option.Option<number>,
): Option.Option<number> =>
  Option.isNone(a) ? b : Option.isNone(b) ? a : Option.some(Math.min(a.value, b.value))

/**
 * @internal The deadline of the hooks a pass serves besides publication: message delivery,
 * projection and host maintenance. A broken disposable projection index reads as due now (the
 * caller's floor turns it into a retry alarm) instead of preventing startup or retries.
 */
export const makeHostDeadline = (hooks: {
  readonly messages: ThreadMessageDeliveryService
  readonly projection: ThreadProjectionMaintenance["Service"]
  readonly host: ThreadHostMaintenanceService
}): Effect.Effect<Option.Option<number>, DurableAlarmError | ThreadHostMaintenanceError> => {
  const projection = hooks.projection.pendingDeadline.pipe(
    catchUnlessInterrupted((cause) =>
      Effect.as(Effect.logError("Thread projection deadline unavailable", cause), Option.some(0)),
    ),
  )
  const lanes = hostLanes(hooks.host)
  return Effect.gen(function* () {
    const messages = yield* hooks.messages.pendingDeadline
    const projected = yield* projection
    let host = Option.none<number>()
    for (const [index, lane] of lanes.entries()) {
      const deadline = yield* lane.pendingDeadline
      // An application's answer is checked here, lane by lane (as `obligations` names them): NaN
      // or an infinity would clear or break the alarm every pass derives from it, and beside a
      // sibling's finite deadline it would pass unseen.
      if (Option.isSome(deadline) && !Number.isFinite(deadline.value)) {
        return yield* new ThreadHostMaintenanceError({
          hook: lanes.length === 1 ? "host maintenance" : `host maintenance lane ${index}`,
          operation: "read its pending deadline",
          message: `pendingDeadline answered ${deadline.value}, not a finite epoch-ms time`,
        })
      }
      host = earliestDeadline(host, deadline)
    }
    const due = (deadline: Option.Option<number>) =>
      Option.isSome(deadline) && !Number.isFinite(deadline.value) ? Option.some(0) : deadline
    return earliestDeadline(messages, earliestDeadline(due(projected), host))
  })
}

/**
 * @internal The publication hook with its deadline checked as a host hook's is: NaN or an
 * infinity would make the alarm every commit derives from it NaN or infinite, which reads as
 * nothing owed and clears the alarm even while a generation is owed.
 */
export const checkedPublication = (publication: ThreadPublicationService): ThreadPublicationService => ({
  // Each member read from the application's service when used (it may be a class instance).
  invalidate: Effect.suspend(() => publication.invalidate),
  prepareGeneration: (generation) => publication.prepareGeneration(generation),
  drain: Effect.suspend(() => publication.drain),
  pendingDeadline: Effect.flatMap(
    Effect.suspend(() => publication.pendingDeadline),
    (deadline) =>
      Option.isSome(deadline) && !Number.isFinite(deadline.value)
        ? Effect.fail(
            new ThreadPublicationError({
              operation: "read its pending deadline",
              message: `pendingDeadline answered ${deadline.value}, not a finite epoch-ms time`,
            }),
          )
        : Effect.succeed(deadline),
  ),
})

/** @internal The combined deadline: publication's, then the other hooks'. */
export const makePendingDeadline = (
  publication: ThreadPublicationService,
  hostDeadline: Effect.Effect<Option.Option<number>, DurableAlarmError | ThreadHostMaintenanceError>,
): Effect.Effect<Option.Option<number>, HookDeadlineFailure> =>
  Effect.zipWith(publication.pendingDeadline, hostDeadline, earliestDeadline)

/** A hook's deadline that could not be read, for the operator's `obligations`. */
export interface UnreadHookDeadline {
  readonly hook: string
  readonly message: string
}

/** Each hook's deadline read on its own: the earliest of those read, and the ones that could not be. */
export interface DeadlineReport {
  readonly deadline: Option.Option<number>
  readonly unread: ReadonlyArray<UnreadHookDeadline>
}

/** Who failed to read: a host hook's own error names its hook better than its position does. */
const unreadOf = (hook: string, cause: Cause.Cause<unknown>): UnreadHookDeadline => {
  const error = Cause.squash(cause)
  return {
    hook: error instanceof ThreadHostMaintenanceError ? error.hook : hook,
    message: safeCauseMessage(
      error instanceof Error && error.message !== "" ? error.message : cause,
      "the deadline could not be read",
    ),
  }
}

/**
 * @internal Reads each hook's deadline on its own (side by side), bounded by `timeoutMillis`: one that fails,
 * answers a time that is not finite or does not answer is reported by name instead of failing
 * the rest. Interruption still propagates.
 */
export const reportDeadlines = (
  reads: ReadonlyArray<{
    readonly hook: string
    readonly read: Effect.Effect<Option.Option<number>, unknown>
  }>,
  timeoutMillis: number,
): Effect.Effect<DeadlineReport> =>
  Effect.map(
    Effect.forEach(
      reads,
      ({ hook, read }) =>
        read.pipe(
          Effect.timeoutOrElse({
            duration: timeoutMillis,
            orElse: () =>
              Effect.fail(new Error(`the deadline read did not answer within ${timeoutMillis} ms`)),
          }),
          Effect.flatMap((deadline) =>
            Option.isSome(deadline) && !Number.isFinite(deadline.value)
              ? Effect.fail(
                  new Error(`pendingDeadline answered ${deadline.value}, not a finite epoch-ms time`),
                )
              : Effect.succeed(deadline),
          ),
          Effect.map((deadline): DeadlineReport => ({ deadline, unread: [] })),
          catchUnlessInterrupted((cause) =>
            Effect.succeed<DeadlineReport>({ deadline: Option.none(), unread: [unreadOf(hook, cause)] }),
          ),
        ),
      // Side by side: hooks that do not answer cost one timeout, not one each.
      { concurrency: "unbounded" },
    ),
    (reports) => ({
      deadline: reports.reduce(
        (earliest, report) => earliestDeadline(earliest, report.deadline),
        Option.none<number>(),
      ),
      unread: reports.flatMap((report) => report.unread),
    }),
  )

/**
 * @internal The host deadline (message delivery, projection, each host lane) read hook by hook
 * for the operator, as `makeHostDeadline` reads it for the pass (a broken projection index is
 * due now), except that a hook whose read fails is named instead of failing the rest.
 */
export const makeHostDeadlineReport = (
  hooks: {
    readonly messages: ThreadMessageDeliveryService
    readonly projection: ThreadProjectionMaintenance["Service"]
    readonly host: ThreadHostMaintenanceService
  },
  timeoutMillis: number,
): Effect.Effect<DeadlineReport> => {
  const lanes = hostLanes(hooks.host)
  const projection = hooks.projection.pendingDeadline.pipe(
    Effect.map((deadline) =>
      Option.isSome(deadline) && !Number.isFinite(deadline.value) ? Option.some(0) : deadline,
    ),
    catchUnlessInterrupted(() => Effect.succeed(Option.some(0))),
  )
  return reportDeadlines(
    [
      { hook: "message delivery", read: hooks.messages.pendingDeadline },
      { hook: "projection", read: projection },
      ...lanes.map((lane, index) => ({
        hook: lanes.length === 1 ? "host maintenance" : `host maintenance lane ${index}`,
        read: lane.pendingDeadline,
      })),
    ],
    timeoutMillis,
  )
}
