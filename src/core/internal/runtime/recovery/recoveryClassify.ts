/**
 * Recovery classification: one decision per nonterminal Submission from its ledger row and,
 * only when the row's state needs it, its canonical records. Pure, so every case is unit-tested
 * without storage.
 */
import type { RecoveryDecision, RecoveryDisposition } from "../shared/model.ts"
import type { Settlement, SubmissionSnapshot } from "../../ledger/model.ts"
import { hasLiveLease } from "../../ledger/rules.ts"
import { firstUnconsumed, type Journal, type OpenUncertain, reconcileStatus } from "../shared/journal.ts"

type Row = Pick<
  SubmissionSnapshot,
  "state" | "producerEpoch" | "ownership" | "abortRequested" | "dueAt" | "wait"
>

/** What some decisions need beyond the row and its journal. @internal */
export interface RecoveryFacts {
  /** The classifying incarnation: a Claim of an earlier one is not live (see `hasLiveLease`). */
  readonly incarnation?: string | undefined
  /** The host of a join, when it still exists. */
  readonly host?: {
    readonly state: SubmissionSnapshot["state"]
    readonly settlement?: Settlement
    /** Whether the host's journal already lists this join as read. */
    readonly readsThis: boolean
  }
}

/**
 * Whether classifying the row reads its history. A `ready` row, a live owner and an accepted
 * abort are decided by the row alone. `incarnation` is the classifying one: a Claim of an
 * earlier one is not live (see `hasLiveLease`).
 * @internal
 */
export const recoveryNeedsHistory = (row: Row, now: number, incarnation?: string): boolean => {
  switch (row.state) {
    case "terminalizing":
      return true
    case "ready":
    case "settled":
    case "joining":
    case "joined":
    case "waiting":
      return false
    case "running":
      // A row claimed in place by the due path goes back to it: its row decides.
      return !hasLiveLease(row, now, incarnation) && !row.abortRequested && row.dueAt === undefined
    case "admitted":
    case "suspended":
    case "unknown":
      return !row.abortRequested
  }
}

const hostEnded = (host: RecoveryFacts["host"]) =>
  host === undefined || host.state === "terminalizing" || host.state === "settled"

/**
 * Classifies one nonterminal row; `journal` is read only where `recoveryNeedsHistory` says so,
 * the host in `facts` only for a join.
 * @internal
 */
export const classifyRecovery = (
  row: Row,
  now: number,
  journal: Journal,
  facts: RecoveryFacts = {},
): RecoveryDecision => {
  if (row.state === "terminalizing") {
    return journal.settled ? { _tag: "FinalizeLedgerFromHistory" } : { _tag: "AppendReservedSettlement" }
  }
  if (row.state === "settled") return { _tag: "NoAction" }
  if (row.state === "running" && hasLiveLease(row, now, facts.incarnation)) return { _tag: "NoAction" }
  // An accepted abort settles without waiting for the lane head or an external decision.
  if (row.abortRequested) return { _tag: "SettleAborted" }
  switch (row.state) {
    case "admitted":
      return journal.accepted ? { _tag: "RepairReadiness" } : { _tag: "CompleteMaterialization" }
    case "joining":
      if (facts.host?.readsThis === true) return { _tag: "RepairJoinMarker" }
      return hostEnded(facts.host) ? { _tag: "RevertJoining" } : { _tag: "AwaitHostSettlement" }
    case "joined":
      return hostEnded(facts.host) ? { _tag: "SettleJoinedWithHost" } : { _tag: "AwaitHostSettlement" }
    case "ready":
      return row.producerEpoch === 0 ? { _tag: "ApplyInput" } : { _tag: "ResumeFromTurnBoundary" }
    case "waiting":
      return row.dueAt === undefined || row.dueAt <= now
        ? { _tag: "Due", dueAt: row.dueAt ?? now }
        : { _tag: "AwaitDue", dueAt: row.dueAt }
    case "running":
      // Its Claim is not live: the due path takes it over, and the replay finds the evidence.
      if (row.dueAt !== undefined) return { _tag: "Due", dueAt: row.dueAt }
      return journal.openUncertain === undefined
        ? { _tag: "ReleaseExpiredLease" }
        : unknownDecision(journal.openUncertain, now)
    case "suspended":
      if (journal.openApproval !== undefined) return { _tag: "AwaitApprovalDecision" }
      if (journal.openChildWait !== undefined)
        return { _tag: "AwaitChildSettlement", child: journal.openChildWait.child }
      // A received event resumes the wait for it in the transaction that records it.
      if (row.wait?._tag === "Event" && firstUnconsumed(journal, row.wait.event) === undefined)
        return { _tag: "AwaitEvent", event: row.wait.event }
      return journal.lastWait === "child" ? { _tag: "ResumeWaitingParent" } : { _tag: "ResumeSuspended" }
    case "unknown":
      return journal.openUncertain === undefined
        ? { _tag: "ApplyUnknownResolutions" }
        : unknownDecision(journal.openUncertain, now)
  }
}

/**
 * An open uncertain step: reconciled by the next Attempt when its reconcile may run now, parked
 * until its next try after a failed reconcile (a timed wait), or else recorded and left for an
 * operator.
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
    case "ResumeWaitingParent":
    case "RevertJoining":
    case "RepairJoinMarker":
    case "SettleJoinedWithHost":
    case "ReconcileUnknown":
    case "AwaitReconcileRetry":
      return "repaired"
    case "ApplyInput":
    case "ResumeFromTurnBoundary":
    case "Due":
      return "deferred"
    case "MarkUnknown":
    case "AwaitUnknownResolution":
      return "unknown"
    case "AwaitApprovalDecision":
    case "AwaitChildSettlement":
    case "AwaitEvent":
    case "AwaitHostSettlement":
    case "AwaitDue":
    case "NoAction":
      return "none"
  }
}
