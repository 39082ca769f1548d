/**
 * The invariants of timed waits `verify` checks from storage: a waiting row has a due time;
 * the maintenance record's due bound covers every timed wait (or a generation is owed, so a
 * pass runs anyway); every timed wait has an alarm by its due time plus the coalescing window
 * (or a pending retry's time); a retried step's attempts count up from 1 and their due times
 * never move earlier. Exact when no pass runs: a running pass parks before its finish writes
 * the bound and the alarm.
 */
import type { Schema } from "effect"
import type { SubmissionId } from "../../core/Identifiers.ts"
import { isTimed } from "../../core/internal/ledger/rules.ts"
import type { SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import type { HistoryRecord } from "../../core/ThreadHistory.ts"
import type { AlarmTiming } from "../maintenance/alarmPolicy.ts"
import { applicableRetry } from "../maintenance/state.ts"
import { servableAt } from "../maintenance/timers.ts"
import type { MaintenanceView } from "./explain.ts"
import { type Invariant, Violation } from "./reports.ts"

/** What the timer checks read. @internal */
export interface TimerVerifyInput {
  readonly maintenance: MaintenanceView
  readonly rows: ReadonlyArray<SubmissionSnapshot>
  readonly records: ReadonlyArray<HistoryRecord>
  readonly now: number
  readonly passRunning: boolean
  readonly timing: AlarmTiming
  readonly timerCoalesceMillis: number
}

/** One violation of a derived check. @internal */
export const violation = (
  invariant: Invariant,
  message: string,
  submissionIds: ReadonlyArray<SubmissionId>,
  evidence: Schema.Json,
) => Violation.make({ invariant, message, submissionIds: [...submissionIds], evidence })

/** @internal */
export const verifyTimers = (input: TimerVerifyInput): ReadonlyArray<Violation> => {
  const violations: Array<Violation> = []
  const { maintenance, now } = input
  const state = maintenance.state
  const waits = state?.bindingRetries ?? []
  const retry = state === undefined ? undefined : applicableRetry(state)
  for (const row of input.rows) {
    const id = [row.submissionId]
    if (row.state === "waiting" && row.dueAt === undefined)
      violations.push(
        violation("timed-wait-shape", `${row.submissionId} is waiting without a due time`, id, {
          state: row.state,
        }),
      )
    if (!isTimed(row) || input.passRunning || state === undefined) continue
    const held = row.ownership !== undefined && row.ownership.leaseExpiresAt > now
    if (held) continue
    const latest = servableAt(row, waits) + input.timerCoalesceMillis
    if (state.dirty <= state.processed && (state.nextDueAt === undefined || state.nextDueAt > latest))
      violations.push(
        violation("timer-covered", `the due bound misses ${row.submissionId}, due at ${row.dueAt}`, id, {
          dueAt: row.dueAt ?? null,
          nextDueAt: state.nextDueAt ?? null,
        }),
      )
    // Never before the floor from now, nor before a pending retry of the Object's maintenance.
    const allowed = Math.max(
      latest,
      now + input.timing.minimumAlarmDelayMillis,
      retry?.notBefore ?? -Infinity,
    )
    if (maintenance.alarm === null || maintenance.alarm > allowed)
      violations.push(
        violation(
          "timer-has-alarm",
          maintenance.alarm === null
            ? `${row.submissionId} is due at ${row.dueAt} and no alarm is set`
            : `the alarm is ${maintenance.alarm - allowed} ms later than ${row.submissionId} allows`,
          id,
          { dueAt: row.dueAt ?? null, alarm: maintenance.alarm },
        ),
      )
  }
  // Each retried step's failed attempts, per Submission and step, in commit order.
  const attempts = new Map<
    string,
    Array<{ readonly attempt: number; readonly retryAt: number; readonly submissionId: SubmissionId }>
  >()
  for (const record of input.records) {
    const entry = record.entry
    if (entry._tag !== "StepAttemptFailed") continue
    const key = `${record.submissionId}\u0000${entry.step}`
    attempts.set(key, [
      ...(attempts.get(key) ?? []),
      { attempt: entry.attempt, retryAt: entry.retryAt, submissionId: record.submissionId },
    ])
  }
  for (const failures of attempts.values()) {
    const broken = failures.findIndex(
      (failure, index) =>
        failure.attempt !== index + 1 ||
        (index > 0 && failure.retryAt < (failures[index - 1]?.retryAt ?? -Infinity)),
    )
    const first = failures[0]
    if (broken !== -1 && first !== undefined)
      violations.push(
        violation(
          "retry-monotone",
          `the failed attempts of ${first.submissionId} break their order at ${broken + 1}`,
          [first.submissionId],
          {
            attempts: failures.map((failure) => failure.attempt),
            retryAt: failures.map((failure) => failure.retryAt),
          },
        ),
      )
  }
  return violations
}
