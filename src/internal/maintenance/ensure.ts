/**
 * The constructor gate: O(1) work on the maintenance record only. A dirty generation gets an
 * alarm (its pending retry, or the scan cadence) and a pending host deadline gets one too.
 * It never runs recovery or reads the ledger, and it cannot accelerate a pending native retry.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, Effect, Option } from "effect"
import { decideAlarm } from "./alarmPolicy.ts"
import { writeAlarm } from "./alarmWrite.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import { catchUnlessInterrupted } from "../boundary.ts"
import type { DurableAlarmError } from "./errors.ts"
import { readMaintenanceState, writeMaintenanceState } from "./state.ts"

/** @internal */
export const makeEnsureAlarm = (env: MaintenanceEnv): Effect.Effect<void, DurableAlarmError> =>
  Effect.gen(function* () {
    yield* env.hit("maintenance:ensure:before")
    const now = yield* Clock.currentTimeMillis
    const record = yield* env.transact("ensure maintenance alarm", (txn) => {
      const { state, initialized } = readMaintenanceState(txn)
      if (!initialized) writeMaintenanceState(txn, state)
      writeAlarm(txn, decideAlarm(env.timing, { commit: "ensure", now, record: state }))
      return state
    })
    // A hook whose deadline cannot be read must not keep the Object from starting (a failed
    // gate refuses every call, in every incarnation): it reads as due, so a pass runs soon, fails
    // on it by name and backs off, while the Object serves. A read that never answers is cut
    // off as a failure (see `ThreadMaintenance.layer`), so it reads as due too.
    const deadline = Option.getOrUndefined(
      yield* env.pendingDeadline.pipe(
        catchUnlessInterrupted((cause) =>
          Effect.as(
            Effect.logError(
              "Thread maintenance: a hook's deadline could not be read; a pass retries it",
              cause,
            ),
            Option.some(0),
          ),
        ),
      ),
    )
    if (deadline !== undefined) {
      yield* env.transact("ensure publication alarm", (txn) =>
        writeAlarm(txn, decideAlarm(env.timing, { commit: "ensure-deadline", now, record, deadline })),
      )
    }
    yield* env.hit("maintenance:ensure:after")
  }).pipe(withSpanFast("ThreadMaintenance.ensureAlarm"))
