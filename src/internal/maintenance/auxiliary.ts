/**
 * Auxiliary work of one event: native message delivery, application host maintenance and one
 * projection backfill wave. All of it is forked into an event-owned Scope before any native
 * work (setup too, so an ordinary setup failure cannot gate the native opportunity), and the
 * Scope closes with the pass on failure or interruption.
 *
 * Host maintenance runs as lanes: one for a single hook, one per hook of
 * `ThreadHostMaintenance.all`, and retention's. Each lane has its allowance checked and is
 * joined as a hook alone would be.
 *
 * `finish` retires it: closes admission of new external waves, joins delivery without a timer
 * (its driver owns each Claim's deadline and persists the retry), bounds each host lane's join
 * by its declared allowance (interrupting a lane that outlasts it), then closes the Scope. Any failed exit fails `finish`; a failed
 * host lane does so once every lane has ended or reached its cutoff, so it never cuts another
 * lane's wave short.
 */
import { Clock, DateTime, Deferred, Effect, Exit, Fiber, Option, Schema, Scope } from "effect"
import { drainDue, ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import type { ThreadProjectionError } from "../../core/ThreadProjectionMaintenance.ts"
import { AuxiliaryDispatchMillis } from "../../CloudflareConfig.ts"
import { DurableAlarmError, type ThreadHostMaintenanceError } from "./errors.ts"
import type { ThreadMessageDeliveryService } from "./hooks.ts"
import { hostLanes, settleLanes, type ThreadHostMaintenanceService } from "./hostMaintenance.ts"

/** @internal */
export interface AuxiliaryHooks {
  readonly messages: ThreadMessageDeliveryService
  readonly host: ThreadHostMaintenanceService
  /** Retention of settled Submissions: a built-in lane run as a host lane is. */
  readonly retention: ThreadHostMaintenanceService
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
    const hosts = yield* Effect.forEach([...hostLanes(hooks.host), hooks.retention], (lane) =>
      Effect.forkIn(
        Scope.provide(
          Effect.andThen(
            validateAllowance(lane.dispatchTimeoutMillis),
            // Called inside the lane's fiber: a hook that throws instead of returning its drain
            // fails its own lane after native work, not the pass before it.
            Effect.suspend(() => lane.drainUntil(finished, dispatchUntil)),
          ),
          scope,
        ),
        scope,
      ).pipe(Effect.map((fiber) => ({ lane, fiber }))),
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
      // An invalid allowance already failed its lane's fiber; that join needs no cutoff.
      const cutoff = (lane: ThreadHostMaintenanceService) =>
        Math.min(isAllowance(lane.dispatchTimeoutMillis) ? lane.dispatchTimeoutMillis : remaining, remaining)
      const hostJoin = yield* Effect.forkIn(
        Effect.forEach(
          hosts,
          ({ lane, fiber }) =>
            Fiber.join(fiber).pipe(
              Effect.timeoutOption(cutoff(lane)),
              // Past its own allowance a lane stops now, not when a sibling's wave ends.
              Effect.tap((joined) => (Option.isNone(joined) ? Fiber.interrupt(fiber) : Effect.void)),
              Effect.exit,
            ),
          { concurrency: "unbounded" },
        ).pipe(
          Effect.tap((joined) =>
            Effect.annotateCurrentSpan({
              "host.timedOut": joined.some((exit) => Exit.isSuccess(exit) && Option.isNone(exit.value)),
            }),
          ),
          Effect.flatMap(settleLanes),
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
