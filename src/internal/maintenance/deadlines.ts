/** The combined host deadline: publication, message delivery, projection and host hooks. */
import { Effect, Option } from "effect"
import { catchUnlessInterrupted } from "../boundary.ts"
import type { ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import {
  type DurableAlarmError,
  type HookDeadlineFailure,
  ThreadHostMaintenanceError,
  ThreadPublicationError,
} from "./errors.ts"
import type { ThreadMessageDeliveryService, ThreadPublicationService } from "./hooks.ts"
import type { ThreadHostMaintenanceService } from "./hostMaintenance.ts"

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
  return Effect.gen(function* () {
    const messages = yield* hooks.messages.pendingDeadline
    const projected = yield* projection
    const host = yield* hooks.host.pendingDeadline
    // An application's answer is checked here, once: NaN or an infinity would clear or break
    // the alarm every pass derives from it.
    if (Option.isSome(host) && !Number.isFinite(host.value)) {
      return yield* new ThreadHostMaintenanceError({
        hook: "host maintenance",
        operation: "read its pending deadline",
        message: `pendingDeadline answered ${host.value}, not a finite epoch-ms time`,
      })
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
