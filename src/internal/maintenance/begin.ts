/**
 * The start of a pass: read the generation (from here on a failure is rearmed), prearm the
 * crash fallback before recovery and before any host hook, and decide whether native work is
 * owed now. A retry that is not yet due makes even a dirty generation a caught-up event.
 */
import { Clock, Effect } from "effect"
import type { MaintenanceEnv } from "./env.ts"
import type { DurableAlarmError } from "./errors.ts"
import type { ThreadId } from "../../core/Identifiers.ts"
import {
  applicableRetry,
  type BindingRetry,
  ensureAlarmBy,
  type MaintenanceObservation,
  readMaintenanceState,
  writeMaintenanceState,
} from "./state.ts"

/** @internal */
export type BeginResult =
  | { readonly _tag: "CaughtUp"; readonly nonterminal: number }
  | {
      readonly _tag: "Actionable"
      readonly generation: bigint
      readonly nonterminal: number
      readonly stalls: number
      /** The lane cursor and binding waits as read here; lane selection seeks from them. */
      readonly cursor: ThreadId | undefined
      readonly bindingRetries: ReadonlyArray<BindingRetry>
    }

/** @internal */
export const makeBeginPass =
  (env: MaintenanceEnv) =>
  (observed: MaintenanceObservation): Effect.Effect<BeginResult, DurableAlarmError> =>
    Effect.gen(function* () {
      yield* env.hit("maintenance:begin:before")
      const now = yield* Clock.currentTimeMillis
      const result = yield* env.transact("begin maintenance pass", async (txn): Promise<BeginResult> => {
        const { state, initialized } = await readMaintenanceState(txn)
        observed.generation = state.dirty
        if (!initialized) await writeMaintenanceState(txn, state)
        const retry = applicableRetry(state)
        // A completed pass may later move this fallback to its bounded retry, never earlier.
        await ensureAlarmBy(txn, now + env.floor)
        if (state.processed >= state.dirty || (retry?.notBefore ?? 0) > now) {
          return { _tag: "CaughtUp", nonterminal: state.nonterminal }
        }
        return {
          _tag: "Actionable",
          generation: state.dirty,
          nonterminal: state.nonterminal,
          stalls: retry?.stalls ?? 0,
          cursor: state.lastServedThreadId,
          bindingRetries: state.bindingRetries ?? [],
        }
      })
      yield* env.hit("maintenance:begin:after")
      return result
    }).pipe(Effect.withSpan("ThreadMaintenance.beginPass"))
