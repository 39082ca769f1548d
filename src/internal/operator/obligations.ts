/**
 * `obligations`: every due time the Object owes with its source, the alarm the maintenance
 * rules imply for them, and the alarm actually scheduled. The implied alarm is the latest one
 * the constructor gate's rule (`decideAlarm`'s ensure commits) accepts for this record and
 * these deadlines,
 * and autonomous work is told from stable waits by the pass's own classification, so these
 * rules exist once.
 */
import { Option, Struct } from "effect"
import type { RecoveryReport } from "../../core/DurableAgentRuntime.ts"
import type { ScheduleInfo, SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import { hasAutonomousWork, indexReports, isStableExternalWait } from "../maintenance/classify.ts"
import { earliestDeadline } from "../maintenance/deadlines.ts"
import { type AlarmTiming, type AlarmWrite, decideAlarm } from "../maintenance/alarmPolicy.ts"
import { applicableRetry } from "../maintenance/state.ts"
import { servableAt } from "../maintenance/timers.ts"
import { isTimed } from "../../core/internal/ledger/rules.ts"
import type { MaintenanceView } from "./explain.ts"
import { ObjectObligations, Obligation, type UnreadDeadline } from "./reports.ts"

/** The latest alarm an ensure commit accepts; `undefined` when it keeps the slot. */
const ensuredBy = (write: AlarmWrite): number | undefined =>
  write._tag === "EnsureBy" || write._tag === "Set" ? write.at : undefined

/** @internal */
export interface ObligationsInput {
  readonly maintenance: MaintenanceView
  /** Every nonterminal Submission, in lane order. */
  readonly nonterminal: ReadonlyArray<SubmissionSnapshot>
  /** What recovery would decide for each of them now. */
  readonly reports: ReadonlyArray<RecoveryReport>
  readonly hostDeadline: Option.Option<number>
  readonly publicationDeadline: Option.Option<number>
  /** When retention is next due. */
  readonly retentionDeadline: Option.Option<number>
  /** Hooks whose deadline could not be read: what they owe is unknown. */
  readonly unreadDeadlines?: ReadonlyArray<UnreadDeadline>
  readonly now: number
  readonly timing: AlarmTiming
  /** `timerCoalesceMillis`: how late past its due time a timed wait's alarm may be. */
  readonly timerCoalesceMillis: number
  readonly passRunning: boolean
  /** Every schedule of the Object: each owes its next occurrence. */
  readonly schedules: ReadonlyArray<ScheduleInfo>
}

/** What a timed wait waits for, in words. */
const describeWait = (row: SubmissionSnapshot): string => {
  const wait = row.wait
  if (wait === undefined) return `${row.state} row due`
  switch (wait._tag) {
    case "Sleep":
      return `sleep "${wait.name}" at step ${wait.step}`
    case "Retry":
      return `retry of step ${wait.step} "${wait.name}" after attempt ${wait.attempt}${wait.attempts === undefined ? "" : ` of ${wait.attempts}`}`
    case "Reconcile":
      return `reconcile of step ${wait.step} runs again`
    case "Delayed":
      return `delayed start`
    default:
      return `${wait._tag.toLowerCase()} wait`
  }
}

const minOf = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

/** @internal */
export const deriveObligations = (input: ObligationsInput): ObjectObligations => {
  const { maintenance, now } = input
  const state = maintenance.state
  const reports = indexReports(input.reports)
  const obligations: Array<Obligation> = []
  const waits = state?.bindingRetries ?? []
  const retry = state === undefined ? undefined : applicableRetry(state)
  // Native work waits for a pending retry of a failed pass, as the alarm does.
  const nativeDue = retry === undefined ? now : Math.max(now, retry.notBefore)
  const seenLanes = new Set<string>()
  const timerTimes: Array<number> = []
  for (const row of input.nonterminal) {
    const ids = { threadId: row.threadId, submissionId: row.submissionId }
    const decision = reports.get(row.submissionId)?.decision
    if (isTimed(row)) {
      const dueAt = servableAt(row, state?.bindingRetries ?? [])
      timerTimes.push(dueAt)
      obligations.push(Obligation.make({ source: "timer", dueAt, ...ids, detail: describeWait(row) }))
    }
    if (row.ownership !== undefined && row.ownership.leaseExpiresAt > now) {
      obligations.push(
        Obligation.make({
          source: "lease-expiry",
          dueAt: row.ownership.leaseExpiresAt,
          ...ids,
          detail: `attempt ${row.ownership.attemptId} holds it`,
        }),
      )
    }
    if (decision?._tag === "AwaitReconcileRetry") {
      obligations.push(
        Obligation.make({
          source: "reconcile-retry",
          dueAt: decision.notBefore,
          ...ids,
          detail: `reconcile of step ${decision.step} runs again`,
        }),
      )
    }
    const isHead = !seenLanes.has(row.threadId)
    seenLanes.add(row.threadId)
    if (!isHead || isStableExternalWait(row, reports)) continue
    const wait = waits.find((retry) => retry.submissionId === row.submissionId && retry.notBefore > now)
    const live = row.ownership !== undefined && row.ownership.leaseExpiresAt > now
    if (wait === undefined && !live && decision?._tag !== "AwaitReconcileRetry") {
      obligations.push(
        Obligation.make({
          source: "lane-head",
          dueAt: nativeDue,
          ...ids,
          detail: `${row.state} head, recovery decides ${decision?._tag ?? "ApplyInput"}`,
        }),
      )
    }
  }
  for (const wait of waits) {
    obligations.push(
      Obligation.make({
        source: "binding-wait",
        dueAt: wait.notBefore,
        threadId: wait.threadId,
        submissionId: wait.submissionId,
        detail: `no compatible agent after ${wait.attempts} attempt(s)`,
      }),
    )
  }
  if (state !== undefined && state.dirty > state.processed) {
    obligations.push(
      Obligation.make({
        source: "generation-owed",
        dueAt: nativeDue,
        detail: `generation ${state.dirty} not acknowledged (processed ${state.processed})`,
      }),
    )
  }
  if (retry !== undefined) {
    obligations.push(
      Obligation.make({
        source: "maintenance-retry",
        dueAt: retry.notBefore,
        detail: `backoff after ${retry.stalls} stall(s)`,
      }),
    )
  }
  if (Option.isSome(input.hostDeadline))
    obligations.push(
      Obligation.make({
        source: "host-deadline",
        dueAt: input.hostDeadline.value,
        detail: "host maintenance, delivery or projection",
      }),
    )
  if (Option.isSome(input.publicationDeadline))
    obligations.push(
      Obligation.make({
        source: "publication-deadline",
        dueAt: input.publicationDeadline.value,
        detail: "required publication",
      }),
    )
  if (Option.isSome(input.retentionDeadline))
    obligations.push(
      Obligation.make({
        source: "retention",
        dueAt: input.retentionDeadline.value,
        detail: "settled submissions expire",
      }),
    )
  for (const schedule of input.schedules) {
    timerTimes.push(schedule.nextAt)
    obligations.push(
      Obligation.make({
        source: "schedule",
        dueAt: schedule.nextAt,
        threadId: schedule.threadId,
        detail: `next occurrence of schedule ${schedule.scheduleId}`,
      }),
    )
  }
  obligations.sort((a, b) => a.dueAt - b.dueAt)

  const scheduledAlarm = maintenance.alarm
  const unread = input.unreadDeadlines ?? []
  const common = {
    obligations,
    scheduledAlarm,
    passRunning: input.passRunning,
    observedAt: now,
    ...(unread.length === 0 ? {} : { unreadDeadlines: unread }),
  }
  if (maintenance.damage !== undefined || state === undefined) {
    return ObjectObligations.make({
      ...common,
      impliedAlarm: null,
      ...(maintenance.damage === undefined
        ? {}
        : { damaged: { field: maintenance.damage.field, message: maintenance.damage.message } }),
    })
  }
  const deadline = Option.getOrUndefined(
    earliestDeadline(
      input.hostDeadline,
      earliestDeadline(input.publicationDeadline, input.retentionDeadline),
    ),
  )
  // The record's bound may be earlier than the rows (it is a lower bound): the rules allow an
  // alarm as late as the earliest timed wait plus the coalescing window, and a pending retry.
  const native = ensuredBy(
    decideAlarm(input.timing, { commit: "ensure", now, record: Struct.omit(state, ["nextDueAt"]) }),
  )
  const earliestTimer = timerTimes.length === 0 ? undefined : Math.min(...timerTimes)
  const timers =
    earliestTimer === undefined
      ? undefined
      : ensuredBy(
          decideAlarm(input.timing, {
            commit: "ensure",
            now,
            record: {
              dirty: state.processed,
              processed: state.processed,
              ...(state.retry === undefined ? {} : { retry: state.retry }),
              nextDueAt: earliestTimer + input.timerCoalesceMillis,
            },
          }),
        )
  const host = ensuredBy(
    decideAlarm(input.timing, { commit: "ensure-deadline", now, record: state, deadline }),
  )
  // Autonomous work behind an acknowledged generation is something no commit of the pass leaves.
  const autonomous = hasAutonomousWork(input.nonterminal, reports)
  const stranded = autonomous && state.dirty <= state.processed
  const implied = minOf(minOf(minOf(native, host), timers), stranded ? now : undefined)
  const mismatch =
    implied !== undefined && scheduledAlarm === null && !input.passRunning
      ? {
          kind: "missing" as const,
          message: stranded
            ? "autonomous work remains, the generation is acknowledged and no alarm is set"
            : "work is owed and no alarm is set",
        }
      : implied !== undefined && scheduledAlarm !== null && scheduledAlarm > implied
        ? {
            kind: "late" as const,
            message: `the alarm is ${scheduledAlarm - implied} ms later than the rules allow`,
          }
        : implied === undefined && scheduledAlarm !== null && unread.length === 0
          ? {
              kind: "extra" as const,
              message: "an alarm is set with nothing owed: one billed wake, nothing else",
            }
          : undefined
  return ObjectObligations.make({
    ...common,
    impliedAlarm: implied ?? null,
    dirty: state.dirty.toString(),
    processed: state.processed.toString(),
    ...(mismatch === undefined ? {} : { mismatch }),
  })
}
