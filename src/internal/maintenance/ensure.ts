/**
 * The constructor gate: O(1) work on the maintenance record. A dirty generation gets an alarm
 * (its pending retry, or the scan cadence), the record's timed waits and a pending host deadline
 * get one too. It never runs recovery, and it cannot accelerate a pending native retry.
 *
 * A record without a timer bound (`nextDueAt`) should mean no timed wait is stored; a record an
 * older release wrote, before the bound existed, says nothing, while the migrations may have
 * left due waits behind it (`thread-store/005` makes every parked Unknown Outcome due once). So
 * such a record takes the earliest stored due time as its bound: one seek of the due index,
 * which finds nothing unless a wait is there.
 *
 * An absent record is written as the bootstrap's (dirty, so one pass classifies what an older
 * store holds), unless the caller says the store held nothing when it began (`FreshStore`).
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, Effect, Option } from "effect"
import { decideAlarm } from "./alarmPolicy.ts"
import { writeAlarm } from "./alarmWrite.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import { catchUnlessInterrupted } from "../boundary.ts"
import type { DurableAlarmError } from "./errors.ts"
import { FreshStore } from "./freshStore.ts"
import { freshRecord, readMaintenanceState, ThreadMaintenanceState, writeMaintenanceState } from "./state.ts"

/** @internal */
export const makeEnsureAlarm = (
  env: MaintenanceEnv,
  earliestDue: Effect.Effect<number | undefined, unknown>,
): Effect.Effect<void, DurableAlarmError> =>
  Effect.gen(function* () {
    yield* env.hit("maintenance:ensure:before")
    const now = yield* Clock.currentTimeMillis
    const fresh = yield* FreshStore
    // A read that fails leaves the record as it is: the next incarnation reads again.
    const due = yield* earliestDue.pipe(
      catchUnlessInterrupted((cause) =>
        Effect.as(
          Effect.logError("Thread maintenance: the earliest timed wait could not be read", cause),
          undefined,
        ),
      ),
    )
    const record = yield* env.transact("ensure maintenance alarm", (txn) => {
      const stored = readMaintenanceState(txn)
      // A store that held nothing has no work older than the record: it starts clean, not with
      // the bootstrap's dirty generation, whose pass would find nothing.
      const read = fresh && !stored.initialized ? { ...stored, state: freshRecord } : stored
      const bounded = read.state.nextDueAt === undefined && due !== undefined
      const state = bounded ? ThreadMaintenanceState.make({ ...read.state, nextDueAt: due }) : read.state
      if (!read.initialized || bounded) writeMaintenanceState(txn, state)
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
