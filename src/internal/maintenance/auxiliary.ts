/**
 * Auxiliary work of one event: native message delivery, application host maintenance and one
 * projection backfill wave. All of it is forked into an event-owned Scope before any native
 * work (setup too, so an ordinary setup failure cannot gate the native opportunity), and the
 * Scope closes with the pass on failure or interruption.
 *
 * `finish` retires it: closes admission of new external waves, joins delivery without a timer
 * (its driver owns each Claim's deadline and persists the retry), bounds the host join by the
 * declared allowance, then closes the Scope. Any failed exit fails `finish`.
 */
import { Clock, DateTime, Deferred, Effect, Exit, Fiber, Option, Schema, Scope } from "effect"
import { drainDue, ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import type { ThreadProjectionError } from "../../core/ThreadProjectionMaintenance.ts"
import { AuxiliaryDispatchMillis } from "../../CloudflareConfig.ts"
import { DurableAlarmError, type ThreadHostMaintenanceError } from "./errors.ts"
import type { ThreadHostMaintenanceService, ThreadMessageDeliveryService } from "./hooks.ts"

/** @internal */
export interface AuxiliaryHooks {
  readonly messages: ThreadMessageDeliveryService
  readonly host: ThreadHostMaintenanceService
  readonly projection: ThreadProjectionMaintenance["Service"]
  readonly projectionDispatchTimeoutMillis: number
}

/** @internal */
export interface Auxiliary {
  readonly finish: Effect.Effect<void, DurableAlarmError | ThreadHostMaintenanceError | ThreadProjectionError>
}

const isAllowance = Schema.is(AuxiliaryDispatchMillis)

const validateAllowance = (allowance: number) =>
  Schema.decodeUnknownEffect(AuxiliaryDispatchMillis)(allowance).pipe(
    Effect.mapError(
      (cause) =>
        new DurableAlarmError({
          operation: "host dispatch allowance",
          message: "Declare an integer whole-wave allowance between 1 and 300000 milliseconds",
          cause,
        }),
    ),
  )

/** @internal Forks the auxiliary fibers into a new event Scope owned by the current (pass) Scope. */
export const startAuxiliary = (
  hooks: AuxiliaryHooks,
  dispatchUntil: DateTime.Utc,
): Effect.Effect<Auxiliary, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.acquireRelease(Scope.make("parallel"), (scope, exit) =>
      Scope.close(scope, exit),
    )
    const sourceFinished = yield* Deferred.make<void>()
    const finished = Deferred.await(sourceFinished)

    const delivery = yield* Effect.forkIn(
      Scope.provide(hooks.messages.drainUntil(finished, dispatchUntil), scope),
      scope,
    )
    const host = yield* Effect.forkIn(
      Scope.provide(
        Effect.andThen(
          validateAllowance(hooks.host.dispatchTimeoutMillis),
          hooks.host.drainUntil(finished, dispatchUntil),
        ),
        scope,
      ),
      scope,
    )
    // One disposable wave; its timer starts beside native execution.
    const backfill = yield* Effect.forkIn(
      drainDue.pipe(
        Effect.provideService(ThreadProjectionMaintenance, hooks.projection),
        Effect.timeoutOption(hooks.projectionDispatchTimeoutMillis),
      ),
      scope,
    )

    const finish = Effect.gen(function* () {
      yield* Deferred.succeed(sourceFinished, undefined)
      const now = yield* Clock.currentTimeMillis
      const remaining = Math.max(1, DateTime.toEpochMillis(dispatchUntil) - now)
      // An invalid allowance already failed the host fiber; its join needs no cutoff.
      const allowance = isAllowance(hooks.host.dispatchTimeoutMillis)
        ? hooks.host.dispatchTimeoutMillis
        : remaining
      const hostJoin = yield* Effect.forkIn(
        Fiber.join(host).pipe(
          Effect.timeoutOption(Math.min(allowance, remaining)),
          Effect.tap((joined) => Effect.annotateCurrentSpan({ "host.timedOut": Option.isNone(joined) })),
        ),
        scope,
      )
      // Only the host and backfill cutoffs are suppressed; any other failed exit, including a
      // hook's own interruption, fails the event even while siblings are still blocked.
      yield* Fiber.joinAll([delivery, hostJoin, backfill])
      yield* Scope.close(scope, Exit.void)
    })

    return { finish }
  })
