/** The combined host deadline: publication, message delivery, projection and host hooks. */
import { Effect, Option } from "effect"
import { catchUnlessInterrupted } from "../boundary.ts"
import type { ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import type { DurableAlarmError } from "./errors.ts"
import type {
  ThreadHostMaintenanceService,
  ThreadMessageDeliveryService,
  ThreadPublicationService,
} from "./hooks.ts"

/** @internal Option-min. */
export const earliestDeadline = (
  a: Option.Option<number>,
  b: Option.Option<number>,
): Option.Option<number> =>
  Option.isNone(a) ? b : Option.isNone(b) ? a : Option.some(Math.min(a.value, b.value))

/**
 * @internal The combined deadline. A broken disposable projection index reads as due now (the
 * caller's floor turns it into a retry alarm) instead of preventing startup or retries.
 */
export const makePendingDeadline = (hooks: {
  readonly publication: ThreadPublicationService
  readonly messages: ThreadMessageDeliveryService
  readonly projection: ThreadProjectionMaintenance["Service"]
  readonly host: ThreadHostMaintenanceService
}): Effect.Effect<Option.Option<number>, DurableAlarmError> => {
  const projection = hooks.projection.pendingDeadline.pipe(
    catchUnlessInterrupted((cause) =>
      Effect.as(Effect.logError("Thread projection deadline unavailable", cause), Option.some(0)),
    ),
  )
  return Effect.gen(function* () {
    const publication = yield* hooks.publication.pendingDeadline
    const messages = yield* hooks.messages.pendingDeadline
    const projected = yield* projection
    const host = yield* hooks.host.pendingDeadline
    return earliestDeadline(earliestDeadline(publication, messages), earliestDeadline(projected, host))
  })
}
