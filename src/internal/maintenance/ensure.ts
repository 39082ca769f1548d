/**
 * The constructor gate: O(1) work on the maintenance record only. A dirty generation gets an
 * alarm (its pending retry, or the scan cadence) and a pending host deadline gets one too.
 * It never runs recovery or reads the ledger, and it cannot accelerate a pending native retry.
 */
import { Clock, Effect, Option } from "effect"
import { clampAlarm } from "./backoff.ts"
import type { MaintenanceEnv } from "./env.ts"
import type { DurableAlarmError } from "./errors.ts"
import {
  applicableRetry,
  ensureAlarmBy,
  readMaintenanceState,
  type ThreadMaintenanceState,
  writeMaintenanceState,
} from "./state.ts"

/**
 * @internal The latest alarms the rule allows: one for a dirty generation (its applicable
 * retry, or the scan cadence), one for a pending host deadline. An alarm at or before each is
 * kept; `undefined` when nothing is owed on that side.
 */
export const ensureTargets = (input: {
  readonly state: ThreadMaintenanceState
  readonly now: number
  readonly floor: number
  readonly wakeScanInterval: number
  readonly deadline: Option.Option<number>
}): { readonly native: number | undefined; readonly host: number | undefined } => {
  const { state, now, floor } = input
  const retry = applicableRetry(state)
  const native =
    state.dirty > state.processed
      ? retry === undefined
        ? now + input.wakeScanInterval
        : Math.max(now + floor, retry.notBefore)
      : undefined
  if (Option.isNone(input.deadline)) return { native, host: undefined }
  const due = input.deadline.value
  // An overdue host deadline after a failure outside the native phase waits for the backoff,
  // so a failing host drain cannot hot-loop at the alarm floor.
  const target = due <= now && retry !== undefined && !retry.nativeOnly ? Math.max(due, retry.notBefore) : due
  return { native, host: clampAlarm(now, floor, target) }
}

/** @internal */
export const makeEnsureAlarm = (env: MaintenanceEnv): Effect.Effect<void, DurableAlarmError> =>
  Effect.gen(function* () {
    yield* env.hit("maintenance:ensure:before")
    const now = yield* Clock.currentTimeMillis
    const targets = { now, floor: env.floor, wakeScanInterval: env.config.wakeScanInterval }
    const state = yield* env.transact("ensure maintenance alarm", async (txn) => {
      const { state, initialized } = await readMaintenanceState(txn)
      if (!initialized) await writeMaintenanceState(txn, state)
      const { native } = ensureTargets({ ...targets, state, deadline: Option.none() })
      if (native !== undefined) await ensureAlarmBy(txn, native)
      return state
    })
    const deadline = yield* env.pendingDeadline
    const { host } = ensureTargets({ ...targets, state, deadline })
    if (host !== undefined) {
      yield* env.transact("ensure publication alarm", (txn) => ensureAlarmBy(txn, host))
    }
    yield* env.hit("maintenance:ensure:after")
  }).pipe(Effect.withSpan("ThreadMaintenance.ensureAlarm"))
