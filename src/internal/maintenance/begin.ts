/**
 * The start of a pass: read the generation, prearm the crash fallback before recovery and
 * before any host hook, and decide whether native work is owed now: a dirty generation, or a
 * timed wait due by the record's bound. A retry that is not yet due makes even owed work a
 * caught-up event. With nothing owed, the pass reads the record alone: no SQL. From the generation read here on, a
 * failure of the pass is rearmed.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, Effect } from "effect"
import type { ThreadId } from "../../core/Identifiers.ts"
import { decideAlarm } from "./alarmPolicy.ts"
import { writeAlarm } from "./alarmWrite.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import type { DurableAlarmError } from "./errors.ts"
import {
  applicableRetry,
  type BindingRetry,
  type MaintenanceRetry,
  readMaintenanceState,
  writeMaintenanceState,
} from "./state.ts"

/** @internal What the begin transaction read and decided. */
export type BeginResult =
  | {
      readonly _tag: "CaughtUp"
      readonly generation: bigint
      readonly nonterminal: number
      /** The failure retry of this generation as the pass found it, if any. */
      readonly retry: MaintenanceRetry | undefined
    }
  | {
      readonly _tag: "Actionable"
      readonly generation: bigint
      readonly nonterminal: number
      /** The failure retry of this generation as the pass found it, if any. */
      readonly retry: MaintenanceRetry | undefined
      /** When the begin transaction ran. */
      readonly beganAt: number
      readonly stalls: number
      /** The lane cursor and binding waits as read here; lane selection seeks from them. */
      readonly cursor: ThreadId | undefined
      readonly bindingRetries: ReadonlyArray<BindingRetry>
    }

/** @internal The begin transaction, between its two failpoints' first. */
export const beginTransaction = (env: MaintenanceEnv): Effect.Effect<BeginResult, DurableAlarmError> =>
  Effect.gen(function* () {
    yield* env.hit("maintenance:begin:before")
    const now = yield* Clock.currentTimeMillis
    return yield* env.transact("begin maintenance pass", (txn): BeginResult => {
      const { state, initialized } = readMaintenanceState(txn)
      if (!initialized) writeMaintenanceState(txn, state)
      writeAlarm(txn, decideAlarm(env.timing, { commit: "begin", now }))
      const retry = applicableRetry(state)
      // A timed wait due by the bound is owed work too; a retry not yet due holds both back.
      const owed = state.processed < state.dirty || (state.nextDueAt ?? Infinity) <= now
      if (!owed || (retry?.notBefore ?? 0) > now) {
        return { _tag: "CaughtUp", generation: state.dirty, nonterminal: state.nonterminal, retry }
      }
      return {
        _tag: "Actionable",
        generation: state.dirty,
        nonterminal: state.nonterminal,
        retry,
        beganAt: now,
        stalls: retry?.stalls ?? 0,
        cursor: state.lastServedThreadId,
        bindingRetries: state.bindingRetries ?? [],
      }
    })
  }).pipe(withSpanFast("ThreadMaintenance.beginPass"))
