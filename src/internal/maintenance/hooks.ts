/**
 * Hooks that share this Object's alarm: the publication gate (required before dependent native
 * execution) and native message delivery (the Object's own driver, internal); application host
 * maintenance is in `hostMaintenance.ts`. Hooks never write the alarm slot; their
 * `pendingDeadline` reads are bounded local operations.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { DateTime, Scope } from "effect"
import { catchUnlessInterrupted } from "../boundary.ts"
import type { DurableAlarmError, ThreadPublicationError } from "./errors.ts"

/**
 * Durable publication of canonical facts that dependent native execution must wait for. Each
 * operation fails with a `ThreadPublicationError` of its own: map what it calls into it (the
 * gate's `DurableAlarmError` too, as its `cause`).
 */
export interface ThreadPublicationService {
  /** Marks publication as owed after a committed source operation (bounded, local). */
  readonly invalidate: Effect.Effect<void, ThreadPublicationError>
  /** Invalidates a scan only when `generation` changes; repeated calls keep partial progress. */
  readonly prepareGeneration: (generation: bigint) => Effect.Effect<void, ThreadPublicationError>
  /** Bounded delivery; persists its retries before returning. */
  readonly drain: Effect.Effect<void, ThreadPublicationError>
  /** A pending deadline defers runtime recovery and Attempts until publication drains. */
  readonly pendingDeadline: Effect.Effect<Option.Option<number>, ThreadPublicationError>
}

/** The publication gate; the default publishes nothing. */
export class ThreadPublication extends Context.Service<ThreadPublication, ThreadPublicationService>()(
  "@effect-agent/platform-cloudflare/ThreadPublication",
) {
  /** No publication: every hook is a no-op and nothing is ever pending. */
  static readonly layer: Layer.Layer<ThreadPublication> = Layer.succeed(this, {
    invalidate: Effect.void,
    prepareGeneration: () => Effect.void,
    drain: Effect.void,
    pendingDeadline: Effect.succeed(Option.none()),
  })
}

/**
 * @internal Best-effort publication after a committed source operation: a committed operation
 * never becomes a failed one, so failures are logged; interruption still propagates.
 */
export const publishCommitted = (publication: ThreadPublicationService): Effect.Effect<void> =>
  Effect.andThen(publication.invalidate, publication.drain).pipe(
    catchUnlessInterrupted((cause) =>
      Effect.logError("Thread publication deferred after source commit", cause),
    ),
  )

/**
 * A drain hook that runs beside native work until `sourceFinished`, within `dispatchUntil`,
 * failing with `E`.
 */
export type AuxiliaryDrain<E> = (
  sourceFinished: Effect.Effect<void>,
  dispatchUntil: DateTime.Utc,
) => Effect.Effect<void, E, Scope.Scope>

/**
 * @internal Native message recovery between Threads. Its driver bounds each actual Claim and
 * persists the timeout or retry before returning, so maintenance joins it without a second timer.
 */
export interface ThreadMessageDeliveryService {
  readonly drainUntil: AuxiliaryDrain<DurableAlarmError>
  readonly pendingDeadline: Effect.Effect<Option.Option<number>, DurableAlarmError>
}

/**
 * @internal Native message delivery between Threads; the default delivers nothing.
 *
 * Not part of the public surface, so an application cannot provide one that would be ignored:
 * `ThreadObject.layer` always builds the Object's own driver (its outbox of child admissions,
 * settlement markers and routed calls, which native work depends on), and an application's own
 * deliveries are a `ThreadHostMaintenance` lane, whose join the pass bounds by its allowance.
 */
export const ThreadMessageDelivery = Context.Reference<ThreadMessageDeliveryService>(
  "@effect-agent/platform-cloudflare/ThreadMessageDelivery",
  { defaultValue: () => ({ drainUntil: () => Effect.void, pendingDeadline: Effect.succeed(Option.none()) }) },
)
