/**
 * The rules of retention, as pure functions: when an idle Object must be woken for it, whether a
 * settled Submission is among the newest of its Thread, and how long a failed archive waits.
 */
import type { SubmissionSnapshot } from "../ledger/model.ts"

/** What retention reads of the configuration (the Cloudflare host's `retention`). @internal */
export interface RetentionSettings {
  readonly settledForMillis: number | "forever"
  readonly keepPerThread: number
  readonly windowMillis: number
  readonly dispatchTimeoutMillis: number
}

/**
 * When retention is due: the earliest expiry (its age counted from `start`) rounded up to a
 * multiple of the window, so an idle Object is woken for retention at most once per window, and
 * not before a failed archive may be tried again. `undefined` when nothing will expire.
 * @internal
 */
export const retentionDeadline = (
  settings: RetentionSettings,
  start: number | undefined,
  archiveRetryAt: number | undefined,
): number | undefined => {
  if (settings.settledForMillis === "forever" || start === undefined) return undefined
  const expiry = start + settings.settledForMillis
  const due = Math.ceil(expiry / settings.windowMillis) * settings.windowMillis
  return archiveRetryAt === undefined ? due : Math.max(due, archiveRetryAt)
}

/** Whether `row` is among the newest `keepPerThread` Submissions of its lane (tail `laneTail`). @internal */
export const keptByThread = (
  settings: RetentionSettings,
  row: SubmissionSnapshot,
  laneTail: number,
): boolean => settings.keepPerThread > 0 && row.queueSequence > laneTail - settings.keepPerThread

/** The wait after `failures` consecutive archive failures: 1 s doubling, at most 5 minutes. @internal */
export const archiveBackoff = (failures: number): number =>
  Math.min(300_000, 1_000 * 2 ** Math.min(Math.max(failures - 1, 0), 20))

/** When a settled Submission may be removed at the earliest; `undefined` when kept forever. @internal */
export const expiresAt = (settings: RetentionSettings, row: SubmissionSnapshot): number | undefined =>
  settings.settledForMillis === "forever" || row.settlement === undefined
    ? undefined
    : row.settlement.settledAt + settings.settledForMillis
