/** The combined host deadline: publication, message delivery, projection and host hooks. */
import { Effect, Option } from "effect"
import { catchUnlessInterrupted } from "../boundary.ts"
import type { ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import type { DurableAlarmError, HookDeadlineFailure, ThreadHostMaintenanceError } from "./errors.ts"
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
    return earliestDeadline(messages, earliestDeadline(projected, host))
  })
}

/** @internal The combined deadline: publication's, then the other hooks'. */
export const makePendingDeadline = (
  publication: ThreadPublicationService,
  hostDeadline: Effect.Effect<Option.Option<number>, DurableAlarmError | ThreadHostMaintenanceError>,
): Effect.Effect<Option.Option<number>, HookDeadlineFailure> =>
  Effect.zipWith(publication.pendingDeadline, hostDeadline, earliestDeadline)
