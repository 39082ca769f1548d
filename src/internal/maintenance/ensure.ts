/**
 * The constructor gate: O(1) work on the maintenance record only. A dirty generation gets an
 * alarm (its pending retry, or the scan cadence) and a pending host deadline gets one too.
 * It never runs recovery or reads the ledger, and it cannot accelerate a pending native retry.
 */
import { Clock, Effect, Option } from "effect"
import { clampAlarm } from "./backoff.ts"
import type { MaintenanceEnv } from "./env.ts"
import type { DurableAlarmError } from "./errors.ts"
import { applicableRetry, ensureAlarmBy, readMaintenanceState, writeMaintenanceState } from "./state.ts"

/** @internal */
export const makeEnsureAlarm = (env: MaintenanceEnv): Effect.Effect<void, DurableAlarmError> =>
  Effect.gen(function* () {
    yield* env.hit("maintenance:ensure:before")
    const now = yield* Clock.currentTimeMillis
    const retry = yield* env.transact("ensure maintenance alarm", async (txn) => {
      const { state, initialized } = await readMaintenanceState(txn)
      if (!initialized) await writeMaintenanceState(txn, state)
      const retry = applicableRetry(state)
      if (state.dirty > state.processed) {
        await ensureAlarmBy(
          txn,
          retry === undefined
            ? now + env.config.wakeScanInterval
            : Math.max(now + env.floor, retry.notBefore),
        )
      }
      return retry
    })
    const deadline = yield* env.pendingDeadline
    if (Option.isSome(deadline)) {
      const due = deadline.value
      // An overdue host deadline after a failure outside the native phase waits for the backoff,
      // so a failing host drain cannot hot-loop at the alarm floor.
      const target =
        due <= now && retry !== undefined && !retry.nativeOnly ? Math.max(due, retry.notBefore) : due
      yield* env.transact("ensure publication alarm", (txn) =>
        ensureAlarmBy(txn, clampAlarm(now, env.floor, target)),
      )
    }
    yield* env.hit("maintenance:ensure:after")
  }).pipe(Effect.withSpan("ThreadMaintenance.ensureAlarm"))
