/**
 * Failure rearming: after any failed event (typed failure, defect, interruption including the
 * event deadline) that read the generation, commit a jittered, capped retry and an alarm for
 * it before the failure propagates, with the lane of the event's last head Attempt as the lane
 * cursor (so a failing head does not keep its lane first). Runs after the event Scope closed,
 * under the pass permit. If this commit itself fails, the begin-time prearm remains the
 * fallback alarm.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, Effect, Option, Random } from "effect"
import { decideAlarm } from "./alarmPolicy.ts"
import { writeAlarm } from "./alarmWrite.ts"
import { nextFailureRetry } from "./backoff.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import type { PassObservation } from "./observation.ts"
import { readMaintenanceState, ThreadMaintenanceState, writeMaintenanceState } from "./state.ts"

/** @internal Whether the retry (and the cursor) committed. */
export const rearmFailure = (env: MaintenanceEnv, observation: PassObservation): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const { generation, nativeOnly, lane } = observation
    yield* env.hit("maintenance:retry:before")
    yield* env.gate.withSnapshot((active) =>
      Effect.gen(function* () {
        // A broken or stuck deadline read must not prevent committing the native retry, nor take
        // the other hooks' deadlines with it: each hook is read on its own, bounded, and one that
        // cannot answer is left to the retry.
        const deadline = yield* env.readableDeadline.pipe(Effect.catchCause(() => Effect.succeedNone))
        const now = yield* Clock.currentTimeMillis
        const jitter = yield* Random.next
        yield* env.transact("back off failed maintenance", (txn) => {
          const { state } = readMaintenanceState(txn)
          const retry = nextFailureRetry(env.config, {
            generation,
            previous: state.retry,
            began: observation.retry,
            now,
            jitter,
            nativeOnly,
          })
          writeMaintenanceState(
            txn,
            ThreadMaintenanceState.make({
              ...state,
              retry,
              ...(lane === undefined ? {} : { lastServedThreadId: lane }),
            }),
          )
          writeAlarm(
            txn,
            decideAlarm(env.timing, {
              commit: "failure",
              now,
              record: state,
              generation,
              active,
              nativeOnly,
              retryAt: retry.notBefore,
              deadline: Option.getOrUndefined(deadline),
            }),
          )
        })
      }),
    )
    yield* env.hit("maintenance:retry:after")
    return true
  }).pipe(
    Effect.catchCause((cause) =>
      Effect.as(
        Effect.logError("Maintenance failure backoff not committed; the prearm remains", cause),
        false,
      ),
    ),
    withSpanFast("ThreadMaintenance.rearmFailure"),
  )
