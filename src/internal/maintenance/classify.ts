/**
 * Classification of nonterminal Submissions for quiescence: which heads are stable external
 * waits (only an external actor can move them) and whether any autonomous work remains.
 */
import type { RecoveryReport } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import type { SubmissionSnapshot } from "../../core/SubmissionLedger.ts"

/** @internal Pass-start recovery reports by Submission. */
export type ReportIndex = ReadonlyMap<SubmissionId, RecoveryReport>

type Row = Pick<SubmissionSnapshot, "submissionId" | "threadId" | "state">

/** @internal */
export const indexReports = (reports: ReadonlyArray<RecoveryReport>): ReportIndex =>
  new Map(reports.map((report) => [report.submissionId, report]))

/**
 * @internal A stable external wait: suspended (for an approval or a child), an Unknown Outcome
 * awaiting an authorized resolution, or a join waiting for its live host. An accepted abort is
 * never a wait: it still owes its settlement.
 */
export const isStableExternalWait = (row: Row, reports: ReportIndex): boolean => {
  const decision = reports.get(row.submissionId)?.decision._tag
  if (decision === "SettleAborted") return false
  switch (row.state) {
    case "suspended":
    case "joined":
      return true
    case "waiting":
      // A timed wait ends by itself, at a due time the alarm covers: no pass polls for it.
      return true
    case "unknown":
      // Recovery reports an unknown row only when something may have resolved it or it owes a
      // record; one it did not report waits for its resolution, which resumes it in its own
      // transaction.
      return decision === undefined || decision === "AwaitUnknownResolution" || decision === "MarkUnknown"
    case "joining":
      return decision === "AwaitHostSettlement"
    case "admitted":
    case "ready":
    case "running":
    case "terminalizing":
    case "settled":
      return false
  }
}

/**
 * @internal Whether the residual set holds autonomous work: a row that is neither a stable wait
 * nor a dormant follower (plain queued input behind a stable-wait head cannot execute).
 */
export const hasAutonomousWork = (rows: ReadonlyArray<Row>, reports: ReportIndex): boolean => {
  const headWaits = new Map<ThreadId, boolean>()
  return rows.some((row) => {
    const waiting = isStableExternalWait(row, reports)
    const laneWaits = headWaits.get(row.threadId)
    if (laneWaits === undefined) {
      headWaits.set(row.threadId, waiting)
      return !waiting
    }
    if (waiting) return false
    const dormant =
      laneWaits && row.state === "ready" && reports.get(row.submissionId)?.decision._tag === "ApplyInput"
    return !dormant
  })
}
