/**
 * The finish commits of a pass, each under the mutation gate so that a producer cannot begin
 * between the snapshot of active mutations and what the pass certifies. These commits replace
 * the alarm slot deliberately, but never earlier than the begin prearm, so workerd does not
 * cancel the running handler.
 */
import { Clock, Effect, Option, Struct } from "effect"
import type { SubmissionId } from "../../core/Identifiers.ts"
import { clampAlarm } from "./backoff.ts"
import type { MaintenanceEnv } from "./env.ts"
import type { DurableAlarmError } from "./errors.ts"
import {
  applicableRetry,
  ensureAlarmBy,
  MaintenanceRetry,
  readMaintenanceState,
  sameRecord,
  ThreadMaintenanceState,
  writeMaintenanceState,
} from "./state.ts"
import { STALL_CAP } from "./backoff.ts"

/** @internal */
export type AlarmDisposition = "rearmed" | "cleared"

/**
 * @internal The caught-up finish: no native work ran. The record is written only to drop the
 * failure retry of an already processed generation once it is due: a successful event then ends
 * that backoff, and a later failure starts a new one after it, never earlier. A success before
 * the retry is due leaves it standing.
 */
export const finishCaughtUp = (env: MaintenanceEnv): Effect.Effect<AlarmDisposition, DurableAlarmError> =>
  Effect.gen(function* () {
    yield* env.hit("maintenance:finish:before")
    const disposition = yield* env.gate.withSnapshot((active) =>
      Effect.gen(function* () {
        // Read under the gate: a concurrent producer cannot be cleared with a stale deadline.
        const latest = yield* env.pendingDeadline
        const now = yield* Clock.currentTimeMillis
        return yield* env.transact("finish publication pass", async (txn): Promise<AlarmDisposition> => {
          const { state } = await readMaintenanceState(txn)
          if (
            state.retry !== undefined &&
            state.processed >= state.retry.generation &&
            state.retry.notBefore <= now
          ) {
            await writeMaintenanceState(txn, ThreadMaintenanceState.make(Struct.omit(state, ["retry"])))
          }
          const retry = applicableRetry(state)
          const native =
            active > 0 || state.dirty > state.processed
              ? retry !== undefined && active === 0
                ? Math.max(now + env.floor, retry.notBefore)
                : now + env.config.wakeScanInterval
              : Infinity
          const next = Option.isSome(latest) ? Math.min(native, latest.value) : native
          if (Number.isFinite(next)) {
            await txn.setAlarm(clampAlarm(now, env.floor, next))
            return "rearmed"
          }
          await txn.deleteAlarm()
          return "cleared"
        })
      }),
    )
    yield* env.hit("maintenance:finish:after")
    return disposition
  })

/** @internal What the actionable path observed, for its finish commit. */
export interface ActionableOutcome {
  readonly generation: bigint
  readonly stalls: number
  readonly activeAtStart: number
  readonly autonomous: boolean
  readonly progressed: boolean
  /** Read once before the finish; the commit reuses it. */
  readonly now: number
  readonly delay: number
  /** Nonterminal Submissions after the Attempt. */
  readonly nonterminal: number
  /** Submissions known to be nonterminal, covering every stored binding wait's. */
  readonly live: ReadonlySet<SubmissionId>
}

/**
 * @internal The actionable finish: acknowledge only the generation observed at pass start, and
 * only when no mutation was active at start or now and no autonomous work remains.
 */
export const finishActionable = (
  env: MaintenanceEnv,
  outcome: ActionableOutcome,
): Effect.Effect<AlarmDisposition, DurableAlarmError> =>
  Effect.gen(function* () {
    const { now, autonomous } = outcome
    yield* env.hit("maintenance:finish:before")
    const disposition = yield* env.gate.withSnapshot((active) =>
      Effect.gen(function* () {
        const deadline = yield* env.pendingDeadline
        const withDeadline = (native: number) =>
          Option.isSome(deadline) ? clampAlarm(now, env.floor, Math.min(native, deadline.value)) : native
        return yield* env.transact("finish maintenance pass", async (txn): Promise<AlarmDisposition> => {
          const { state } = await readMaintenanceState(txn)
          const busy = outcome.activeAtStart > 0 || active > 0
          const processed =
            autonomous || busy
              ? state.processed
              : state.processed > outcome.generation
                ? state.processed
                : outcome.generation
          const bindingRetries = (state.bindingRetries ?? []).filter((wait) =>
            outcome.live.has(wait.submissionId),
          )
          const next = ThreadMaintenanceState.make({
            ...Struct.omit(state, ["retry", "bindingRetries"]),
            processed,
            nonterminal: outcome.nonterminal,
            ...(bindingRetries.length > 0 ? { bindingRetries } : {}),
            ...(autonomous && !outcome.progressed
              ? {
                  retry: MaintenanceRetry.make({
                    generation: outcome.generation,
                    notBefore: now + outcome.delay,
                    nativeOnly: true,
                    stalls: Math.min(STALL_CAP, outcome.stalls + 1),
                  }),
                }
              : {}),
          })
          // An unchanged record is already durable: a pass that changes nothing writes nothing.
          if (!sameRecord(state, next)) await writeMaintenanceState(txn, next)
          if (autonomous) {
            // A racing producer is never postponed by this pass's backoff.
            const native = busy || state.dirty !== outcome.generation ? now + env.floor : now + outcome.delay
            await txn.setAlarm(withDeadline(native))
            return "rearmed"
          }
          if (busy || next.dirty > next.processed) {
            // The overlapping mutation's own earlier prearm survives.
            await ensureAlarmBy(txn, withDeadline(now + env.config.wakeScanInterval))
            return "rearmed"
          }
          if (Option.isSome(deadline)) {
            await txn.setAlarm(clampAlarm(now, env.floor, deadline.value))
            return "rearmed"
          }
          await txn.deleteAlarm()
          return "cleared"
        })
      }),
    )
    yield* env.hit("maintenance:finish:after")
    return disposition
  })
