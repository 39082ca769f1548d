/**
 * The invariants of schedules `verify` checks from storage: each schedule's next occurrence is
 * later than its last one; the maintenance record's due bound and the alarm cover the next
 * occurrence (or a generation is owed, so a pass runs anyway); no two Submissions were admitted
 * for the same occurrence. Exact when no pass runs.
 */
import type { SubmissionId } from "../../core/Identifiers.ts"
import type { ScheduleInfo } from "../../core/SubmissionLedger.ts"
import type { HistoryRecord } from "../../core/ThreadHistory.ts"
import type { AlarmTiming } from "../maintenance/alarmPolicy.ts"
import { applicableRetry } from "../maintenance/state.ts"
import type { MaintenanceView } from "./explain.ts"
import type { Violation } from "./reports.ts"
import { violation } from "./verifyTimers.ts"

/** What the schedule checks read. @internal */
export interface ScheduleVerifyInput {
  readonly maintenance: MaintenanceView
  readonly schedules: ReadonlyArray<ScheduleInfo>
  readonly records: ReadonlyArray<HistoryRecord>
  readonly now: number
  readonly passRunning: boolean
  readonly timing: AlarmTiming
  readonly timerCoalesceMillis: number
}

/** @internal */
export const verifySchedules = (input: ScheduleVerifyInput): ReadonlyArray<Violation> => {
  const violations: Array<Violation> = []
  const { maintenance, now } = input
  const state = maintenance.state
  const retry = state === undefined ? undefined : applicableRetry(state)
  for (const schedule of input.schedules) {
    const { scheduleId, nextAt } = schedule
    if (schedule.lastOccurrence !== undefined && nextAt <= schedule.lastOccurrence)
      violations.push(
        violation("schedule-advances", `schedule ${scheduleId} is not past its last occurrence`, [], {
          scheduleId,
          nextAt,
          lastOccurrence: schedule.lastOccurrence,
        }),
      )
    if (input.passRunning || state === undefined) continue
    const latest = nextAt + input.timerCoalesceMillis
    const owed = state.dirty > state.processed
    if (!owed && (state.nextDueAt === undefined || state.nextDueAt > latest))
      violations.push(
        violation("schedule-covered", `the due bound misses schedule ${scheduleId}, next at ${nextAt}`, [], {
          scheduleId,
          nextAt,
          nextDueAt: state.nextDueAt ?? null,
        }),
      )
    const allowed = Math.max(
      latest,
      now + input.timing.minimumAlarmDelayMillis,
      retry?.notBefore ?? -Infinity,
    )
    if (maintenance.alarm === null || maintenance.alarm > allowed)
      violations.push(
        violation(
          "schedule-covered",
          maintenance.alarm === null
            ? `schedule ${scheduleId} occurs at ${nextAt} and no alarm is set`
            : `the alarm is ${maintenance.alarm - allowed} ms later than schedule ${scheduleId} allows`,
          [],
          { scheduleId, nextAt, alarm: maintenance.alarm },
        ),
      )
  }
  const admitted = new Map<string, SubmissionId>()
  for (const record of input.records) {
    const entry = record.entry
    if (entry._tag !== "SubmissionAccepted" || entry.schedule === undefined) continue
    const key = `${entry.schedule.scheduleId}\u0000${entry.schedule.occurrence}`
    const earlier = admitted.get(key)
    if (earlier !== undefined && earlier !== record.submissionId)
      violations.push(
        violation(
          "occurrence-once",
          `occurrence ${entry.schedule.occurrence} of schedule ${entry.schedule.scheduleId} was admitted twice`,
          [earlier, record.submissionId],
          { scheduleId: entry.schedule.scheduleId, occurrence: entry.schedule.occurrence },
        ),
      )
    admitted.set(key, record.submissionId)
  }
  return violations
}
