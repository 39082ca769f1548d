/**
 * Lane selection and binding-wait bookkeeping of the actionable path.
 *
 * The lane cursor is persisted before the head Attempt, so an eviction or repeated yields
 * cannot monopolize the first lane. A binding failure (no compatible code for the admitted
 * agent) becomes a per-Submission wait, committed once before auxiliary work is joined so an
 * auxiliary failure cannot lose it; it never acknowledges a generation nor touches the alarm.
 */
import { Clock, Effect } from "effect"
import type { DurableBindingFailure } from "../../core/AgentRegistration.ts"
import type { ThreadId } from "../../core/Identifiers.ts"
import type { SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import { nextBindingRetry, selectLane } from "./backoff.ts"
import type { MaintenanceEnv } from "./env.ts"
import type { DurableAlarmError } from "./errors.ts"
import {
  type BindingRetry,
  readMaintenanceState,
  ThreadMaintenanceState,
  writeMaintenanceState,
} from "./state.ts"

/** @internal */
export interface LaneSelection {
  readonly selected: ThreadId | undefined
  /** Stored binding waits whose Submission is still the head of its lane. */
  readonly waits: ReadonlyArray<BindingRetry>
  /** Every stored binding wait, for the finish's garbage collection. */
  readonly stored: ReadonlyArray<BindingRetry>
}

/** @internal */
export const selectMaintenanceLane = (
  env: MaintenanceEnv,
  heads: ReadonlyMap<ThreadId, SubmissionSnapshot>,
  eligible: ReadonlyArray<ThreadId>,
): Effect.Effect<LaneSelection, DurableAlarmError> =>
  Effect.gen(function* () {
    const selectionTime = yield* Clock.currentTimeMillis
    yield* env.hit("maintenance:select:before")
    const selection = yield* env.transact("select maintenance lane", async (txn): Promise<LaneSelection> => {
      const { state } = await readMaintenanceState(txn)
      const stored = state.bindingRetries ?? []
      const waits = stored.filter((wait) => heads.get(wait.threadId)?.submissionId === wait.submissionId)
      const selected = selectLane(eligible, state.lastServedThreadId, waits, selectionTime)
      // An unchanged cursor is already durable: serving one lane again writes nothing.
      if (selected !== undefined && selected !== state.lastServedThreadId) {
        await writeMaintenanceState(
          txn,
          ThreadMaintenanceState.make({ ...state, lastServedThreadId: selected }),
        )
      }
      return { selected, waits, stored }
    })
    yield* env.hit("maintenance:select:after")
    return selection
  })

/**
 * @internal Commits the served head's binding wait: a new or longer wait after a binding
 * failure, otherwise removal of a stale one. Returns the stored waits after the commit.
 */
export const recordBindingOutcome = (
  env: MaintenanceEnv,
  head: SubmissionSnapshot,
  waits: ReadonlyArray<BindingRetry>,
  failure: DurableBindingFailure | undefined,
): Effect.Effect<ReadonlyArray<BindingRetry>, DurableAlarmError> =>
  Effect.gen(function* () {
    const previous = waits.find((wait) => wait.submissionId === head.submissionId)
    const next =
      failure === undefined ? undefined : nextBindingRetry(head, previous, yield* Clock.currentTimeMillis)
    if (next === undefined && previous === undefined) return waits
    yield* env.hit("maintenance:binding-retry:before")
    const stored = yield* env.transact("record submission binding retry", async (txn) => {
      const { state } = await readMaintenanceState(txn)
      const bindingRetries = [
        ...(state.bindingRetries ?? []).filter((wait) => wait.submissionId !== head.submissionId),
        ...(next === undefined ? [] : [next.retry]),
      ]
      await writeMaintenanceState(txn, ThreadMaintenanceState.make({ ...state, bindingRetries }))
      return bindingRetries
    })
    yield* env.hit("maintenance:binding-retry:after")
    if (failure !== undefined && next !== undefined) {
      yield* next.report
        ? Effect.logError("Thread awaits a compatible binding; original work remains pending", failure)
        : Effect.logDebug("Thread binding retry remains pending", failure)
    }
    return stored
  })
