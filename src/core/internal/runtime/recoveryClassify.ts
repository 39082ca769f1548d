/**
 * Recovery classification: one decision per nonterminal Submission from its ledger row and,
 * only when the row's state needs it, its canonical records. Pure, so every case is unit-tested
 * without storage.
 */
import type { RecoveryDecision, RecoveryDisposition } from "./model.ts"
import type { SubmissionSnapshot } from "../ledger/model.ts"
import { hasLiveLease } from "../ledger/rules.ts"
import { type Journal, type OpenUncertain, reconcileStatus } from "./journal.ts"

type Row = Pick<SubmissionSnapshot, "state" | "producerEpoch" | "ownership" | "abortRequested">

/**
 * Whether classifying the row reads its history. A `ready` row, a live owner and an accepted
 * abort are decided by the row alone. `incarnation` is the classifying one: a Claim of any other
 * is not live (see `hasLiveLease`).
 * @internal
 */
export const recoveryNeedsHistory = (row: Row, now: number, incarnation?: string): boolean => {
  switch (row.state) {
    case "terminalizing":
      return true
    case "ready":
    case "settled":
      return false
    case "running":
      return !hasLiveLease(row, now, incarnation) && !row.abortRequested
    case "admitted":
    case "suspended":
    case "unknown":
      return !row.abortRequested
  }
}

/** Classifies one nonterminal row; `journal` is read only where `recoveryNeedsHistory` says so. @internal */
export const classifyRecovery = (
  row: Row,
  now: number,
  journal: Journal,
  incarnation?: string,
): RecoveryDecision => {
  if (row.state === "terminalizing") {
    return journal.settled ? { _tag: "FinalizeLedgerFromHistory" } : { _tag: "AppendReservedSettlement" }
  }
  if (row.state === "settled") return { _tag: "NoAction" }
  if (row.state === "running" && hasLiveLease(row, now, incarnation)) return { _tag: "NoAction" }
  // An accepted abort settles without waiting for the lane head or an external decision.
  if (row.abortRequested) return { _tag: "SettleAborted" }
  switch (row.state) {
    case "admitted":
      return journal.accepted ? { _tag: "RepairReadiness" } : { _tag: "CompleteMaterialization" }
    case "ready":
      return row.producerEpoch === 0 ? { _tag: "ApplyInput" } : { _tag: "ResumeFromTurnBoundary" }
    case "running":
      return journal.openUncertain === undefined
        ? { _tag: "ReleaseExpiredLease" }
        : unknownDecision(journal.openUncertain, now)
    case "suspended":
      return journal.openApproval === undefined
        ? { _tag: "ResumeSuspended" }
        : { _tag: "AwaitApprovalDecision" }
    case "unknown":
      return journal.openUncertain === undefined
        ? { _tag: "ApplyUnknownResolutions" }
        : unknownDecision(journal.openUncertain, now)
  }
}

/**
 * An open uncertain step: reconciled by the next Attempt when its reconcile may run now, waiting
 * for a later pass after a failed reconcile, or else recorded and left for an operator.
 */
const unknownDecision = (open: OpenUncertain, now: number): RecoveryDecision => {
  const reconcile = reconcileStatus(open, now)
  if (reconcile._tag === "Due") return { _tag: "ReconcileUnknown", step: open.step }
  if (reconcile._tag === "Backoff")
    return { _tag: "AwaitReconcileRetry", step: open.step, notBefore: reconcile.notBefore }
  return open.recorded
    ? { _tag: "AwaitUnknownResolution", step: open.step }
    : { _tag: "MarkUnknown", step: open.step }
}

/** What executing (or deferring) a decision means for the pass. @internal */
export const dispositionOf = (decision: RecoveryDecision): RecoveryDisposition => {
  switch (decision._tag) {
    case "CompleteMaterialization":
    case "RepairReadiness":
    case "ReleaseExpiredLease":
    case "AppendReservedSettlement":
    case "FinalizeLedgerFromHistory":
    case "SettleAborted":
    case "ApplyUnknownResolutions":
    case "ResumeSuspended":
    case "ReconcileUnknown":
      return "repaired"
    case "ApplyInput":
    case "ResumeFromTurnBoundary":
    case "AwaitReconcileRetry":
      return "deferred"
    case "MarkUnknown":
    case "AwaitUnknownResolution":
      return "unknown"
    case "AwaitApprovalDecision":
    case "NoAction":
      return "none"
  }
}
