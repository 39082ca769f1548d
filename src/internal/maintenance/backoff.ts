/**
 * Pure timing formulas of the maintenance pass: alarm floor, jittered backoff, binding waits,
 * failure retries. No effects, so they are property-tested.
 */
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { BindingRetry, MaintenanceRetry } from "./state.ts"

/** @internal Upper bound of the durable stall count and of binding attempts. */
export const STALL_CAP = 30
/** @internal */
export const BINDING_ATTEMPT_CAP = 30
/** @internal First binding wait; it doubles per attempt up to `BINDING_MAX_DELAY_MILLIS`. */
export const BINDING_BASE_DELAY_MILLIS = 5_000
/** @internal */
export const BINDING_MAX_DELAY_MILLIS = 60_000
/** @internal A binding failure is logged at error level at most once per window. */
export const BINDING_REPORT_WINDOW_MILLIS = 15 * 60_000
/** @internal The head Attempt is asked to yield after this long. */
export const YIELD_AFTER_MILLIS = 10 * 60_000
/** @internal The whole event (and the auxiliary admission horizon) ends after this long. */
export const EVENT_DEADLINE_MILLIS = 14 * 60_000
/**
 * @internal With `maxHeadsPerEvent` above 1, a further head Attempt starts only this long after
 * the event began: the event then retires its host work and commits what it did.
 */
export const FURTHER_HEADS_BUDGET_MILLIS = 1_000

/** @internal */
export interface BackoffConfig {
  readonly alarmBackoffBase: number
  readonly alarmBackoffCap: number
}

/** @internal Floor of every alarm the pass writes, relative to now; workerd needs it > 0. */
export const minimumAlarmDelay = (base: number): number => Math.max(1, Math.ceil(base / 2))

/** @internal Jittered exponential backoff in `[ceil(b/2), b]`, `b = min(cap, base·2^stalls)`. */
export const backoffDelay = (config: BackoffConfig, stalls: number, jitter: number): number => {
  const bound = Math.min(
    config.alarmBackoffCap,
    config.alarmBackoffBase * 2 ** Math.min(Math.max(0, stalls), STALL_CAP),
  )
  return Math.ceil(bound / 2 + (bound / 2) * jitter)
}

/**
 * @internal The most of a binding wait's reason the maintenance record keeps: the record is
 * written at every event, and a decode failure's message can quote a whole input.
 */
export const BINDING_REASON_MAX_CHARS = 1_000

/** @internal Binding wait after `attempts` consecutive binding failures (1-based). */
export const bindingRetryDelay = (attempts: number): number =>
  Math.min(BINDING_MAX_DELAY_MILLIS, BINDING_BASE_DELAY_MILLIS * 2 ** (Math.max(1, attempts) - 1))

/** @internal The binding wait after one more failure, and whether it is reported at error level. */
export const nextBindingRetry = (
  head: { readonly threadId: ThreadId; readonly submissionId: SubmissionId },
  previous: BindingRetry | undefined,
  now: number,
  reason?: string,
): { readonly retry: BindingRetry; readonly report: boolean } => {
  const attempts = Math.min(BINDING_ATTEMPT_CAP, (previous?.attempts ?? 0) + 1)
  const report = previous === undefined || now - previous.reportedAt >= BINDING_REPORT_WINDOW_MILLIS
  return {
    retry: BindingRetry.make({
      threadId: head.threadId,
      submissionId: head.submissionId,
      attempts,
      notBefore: now + bindingRetryDelay(attempts),
      reportedAt: report || previous === undefined ? now : previous.reportedAt,
      ...(reason === undefined
        ? {}
        : {
            reason:
              reason.length > BINDING_REASON_MAX_CHARS
                ? `${reason.slice(0, BINDING_REASON_MAX_CHARS - 1)}…`
                : reason,
          }),
    }),
    report,
  }
}

/**
 * @internal The retry a failed event commits: never earlier than the previous retry of the same
 * generation, one stall more. The previous retry is the stored one or, when the event's own
 * finish committed (dropping it) before the event failed, the one the event began with.
 */
export const nextFailureRetry = (
  config: BackoffConfig,
  options: {
    readonly generation: bigint
    readonly previous: MaintenanceRetry | undefined
    /** The retry of the generation when the failed event began. */
    readonly began?: MaintenanceRetry | undefined
    readonly now: number
    readonly jitter: number
    readonly nativeOnly: boolean
  },
): MaintenanceRetry => {
  const previous = [options.previous, options.began].filter(
    (retry): retry is MaintenanceRetry => retry !== undefined && retry.generation === options.generation,
  )
  const stalls = Math.max(0, ...previous.map((retry) => retry.stalls))
  const notBefore = Math.max(0, ...previous.map((retry) => retry.notBefore))
  return MaintenanceRetry.make({
    generation: options.generation,
    notBefore: Math.max(notBefore, options.now + backoffDelay(config, stalls, options.jitter)),
    nativeOnly: options.nativeOnly,
    stalls: Math.min(STALL_CAP, stalls + 1),
  })
}
