/**
 * `explain`: the one decisive reason a Submission is not moving, derived from its ledger row,
 * its canonical records (through the runtime's read-only inspection) and the maintenance
 * record and alarm, never from memory. Reasons are checked from the most to the least
 * decisive: a damaged record stops everything; FIFO comes before anything the Submission
 * itself waits for; a stable wait (approval, event, child, Unknown Outcome) before timers; then a timed wait
 * not yet due (sleeping, a retry's backoff, a delayed start), the live Attempt, the binding
 * wait, the Object's backoff, and last the alarm that serves it.
 */
import type { SubmissionInspection } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import type { MaintenanceRecordDamaged } from "../maintenance/errors.ts"
import { applicableRetry, type ThreadMaintenanceState } from "../maintenance/state.ts"
import { objectKillsOf } from "../maintenance/suspect.ts"
import { type Reason, SubmissionExplanation } from "./reports.ts"

/** The maintenance record (or its damage) and the alarm, as stored. @internal */
export interface MaintenanceView {
  readonly state: ThreadMaintenanceState | undefined
  readonly damage: MaintenanceRecordDamaged | undefined
  readonly alarm: number | null
  /** The stored note of head Attempts in flight when the Object died (`suspect.ts`), if any. */
  readonly suspect?: unknown
}

const unknownDecisions = new Set([
  "MarkUnknown",
  "AwaitUnknownResolution",
  "ReconcileUnknown",
  "AwaitReconcileRetry",
])

/** The timed wait a `waiting` row is in before its due time; a due one waits for its alarm. */
const timedReason = (inspection: SubmissionInspection, now: number): Reason | undefined => {
  const { row } = inspection
  const wait = row.wait
  if (row.state !== "waiting" || row.dueAt === undefined || row.dueAt <= now || wait === undefined)
    return undefined
  switch (wait._tag) {
    case "Sleep":
      return { _tag: "Sleeping", step: wait.step, name: wait.name, until: row.dueAt, since: wait.since }
    case "Retry": {
      const retry = inspection.openRetry
      return {
        _tag: "RetryBackoff",
        step: wait.step,
        name: wait.name,
        attempt: retry?.failed ?? wait.attempt,
        ...(wait.attempts === undefined ? {} : { attempts: wait.attempts }),
        nextAttemptAt: row.dueAt,
        lastError: retry?.lastError ?? "",
      }
    }
    case "Delayed":
      return { _tag: "Delayed", notBefore: wait.notBefore }
    default:
      return undefined
  }
}

/** @internal */
export const reasonFor = (input: {
  readonly inspection: SubmissionInspection
  readonly head: SubmissionSnapshot | undefined
  /** The host of a joined Submission, while its row exists. */
  readonly host?: SubmissionSnapshot | undefined
  readonly ahead: number
  readonly maintenance: MaintenanceView
  readonly now: number
  /** When retention may remove it, if it is settled and retention removes anything. */
  readonly expiresAt?: number | undefined
}): Reason => {
  const { inspection, head, maintenance, now } = input
  const { row, decision } = inspection
  if (row.state === "settled" && row.settlement !== undefined)
    return {
      _tag: "Settled",
      settlement: row.settlement,
      ...(input.expiresAt === undefined ? {} : { expiresAt: input.expiresAt }),
    }
  if (maintenance.damage !== undefined)
    return {
      _tag: "MaintenanceRecordDamaged",
      field: maintenance.damage.field,
      message: maintenance.damage.message,
    }
  // A join waits for its host, not for its turn; an accepted abort settles it by itself.
  if (
    (row.state === "joining" || row.state === "joined") &&
    input.host !== undefined &&
    decision._tag !== "SettleAborted"
  )
    return {
      _tag: "JoinedTo",
      host: input.host.submissionId,
      hostState: input.host.state,
      read: row.state === "joined",
    }
  // An accepted abort settles without waiting for the head.
  if (head !== undefined && head.submissionId !== row.submissionId && decision._tag !== "SettleAborted")
    return { _tag: "QueuedBehind", head: head.submissionId, headState: head.state, ahead: input.ahead }
  // A timed wait whose due time came waits for its alarm, like any due row.
  const parked =
    (row.state === "suspended" || (row.state === "waiting" && (row.dueAt ?? now) > now)) &&
    !row.abortRequested
  const parkedOn = row.wait
  if (
    inspection.openApproval !== undefined &&
    parked &&
    (row.state === "suspended" || parkedOn?._tag === "Approval")
  ) {
    const { step, since, payload } = inspection.openApproval
    const timesOutAt =
      parkedOn?._tag === "Approval" && parkedOn.step === step ? { timesOutAt: parkedOn.dueAt } : {}
    return { _tag: "WaitingForApproval", step, since, payload, ...timesOutAt }
  }
  if (parked && parkedOn?._tag === "Event") {
    const { step, event, since, dueAt } = parkedOn
    return {
      _tag: "WaitingForEvent",
      step,
      event,
      since,
      ...(dueAt === undefined ? {} : { timesOutAt: dueAt }),
    }
  }
  if (parked && decision._tag === "AwaitChildSettlement")
    return { _tag: "WaitingForChild", child: decision.child }
  const open = inspection.openUncertain
  // A failed reconcile's next try is a timed wait: the Unknown Outcome is still the reason.
  const reconciling = row.state === "waiting" && row.wait?._tag === "Reconcile"
  if (open !== undefined && (unknownDecisions.has(decision._tag) || reconciling)) {
    const byReconcile = open.reconcile.status === "due" || open.reconcile.status === "backoff"
    return {
      _tag: "UnknownOutcome",
      step: open.step,
      name: open.name,
      since: open.since,
      waitingFor: byReconcile ? "reconciliation" : "operator",
      reconcile: open.reconcile,
    }
  }
  const timed = timedReason(inspection, now)
  if (timed !== undefined) return timed
  if (row.ownership !== undefined && row.ownership.leaseExpiresAt > now)
    return {
      _tag: "HeldByAttempt",
      attemptId: row.ownership.attemptId,
      leaseExpiresAt: row.ownership.leaseExpiresAt,
    }
  const wait = maintenance.state?.bindingRetries?.find(
    (retry) => retry.submissionId === row.submissionId && retry.notBefore > now,
  )
  if (wait !== undefined)
    return {
      _tag: "BindingWait",
      agentId: row.agentId,
      agentDigest: row.agentDigest,
      attempts: wait.attempts,
      nextTryAt: wait.notBefore,
      ...(wait.reason === undefined ? {} : { reason: wait.reason }),
    }
  const retry = maintenance.state === undefined ? undefined : applicableRetry(maintenance.state)
  if (retry !== undefined && retry.notBefore > now)
    return { _tag: "LaneBackoff", until: retry.notBefore, stalls: retry.stalls }
  const objectKills = objectKillsOf(maintenance.suspect, row.submissionId)
  return {
    _tag: "WaitingForAlarm",
    at: maintenance.alarm,
    abortRequested: row.abortRequested,
    ...(objectKills === 0 ? {} : { objectKills }),
  }
}

/** @internal */
export const explainSubmission = (input: Parameters<typeof reasonFor>[0]): SubmissionExplanation => {
  const { row, decision, openUncertain } = input.inspection
  return SubmissionExplanation.make({
    submissionId: row.submissionId,
    threadId: row.threadId,
    queueSequence: row.queueSequence,
    state: row.state,
    decision,
    reason: reasonFor(input),
    ...(openUncertain === undefined ? {} : { openUncertain }),
    explainedAt: input.now,
  })
}
