/**
 * `explain`: the one decisive reason a Submission is not moving, derived from its ledger row,
 * its canonical records (through the runtime's read-only inspection) and the maintenance
 * record and alarm, never from memory. Reasons are checked from the most to the least
 * decisive: a damaged record stops everything; FIFO comes before anything the Submission
 * itself waits for; a stable wait (approval, Unknown Outcome) before timers; then the live
 * Attempt, the binding wait, the Object's backoff, and last the alarm that serves it.
 */
import type { SubmissionInspection } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import type { MaintenanceRecordDamaged } from "../maintenance/errors.ts"
import { applicableRetry, type ThreadMaintenanceState } from "../maintenance/state.ts"
import { type Reason, SubmissionExplanation } from "./reports.ts"

/** The maintenance record (or its damage) and the alarm, as stored. @internal */
export interface MaintenanceView {
  readonly state: ThreadMaintenanceState | undefined
  readonly damage: MaintenanceRecordDamaged | undefined
  readonly alarm: number | null
}

const unknownDecisions = new Set([
  "MarkUnknown",
  "AwaitUnknownResolution",
  "ReconcileUnknown",
  "AwaitReconcileRetry",
])

/** @internal */
export const reasonFor = (input: {
  readonly inspection: SubmissionInspection
  readonly head: SubmissionSnapshot | undefined
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
  // An accepted abort settles without waiting for the head.
  if (head !== undefined && head.submissionId !== row.submissionId && decision._tag !== "SettleAborted")
    return { _tag: "QueuedBehind", head: head.submissionId, headState: head.state, ahead: input.ahead }
  if (inspection.openApproval !== undefined && row.state === "suspended" && !row.abortRequested) {
    const { step, since, payload } = inspection.openApproval
    return { _tag: "WaitingForApproval", step, since, payload }
  }
  const open = inspection.openUncertain
  if (open !== undefined && unknownDecisions.has(decision._tag)) {
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
    }
  const retry = maintenance.state === undefined ? undefined : applicableRetry(maintenance.state)
  if (retry !== undefined && retry.notBefore > now)
    return { _tag: "LaneBackoff", until: retry.notBefore, stalls: retry.stalls }
  return { _tag: "WaitingForAlarm", at: maintenance.alarm, abortRequested: row.abortRequested }
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
