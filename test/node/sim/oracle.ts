/**
 * An independent reading of durable state for the invariants: which lanes hold autonomous work
 * and which heads are stable external waits, decided from ledger rows and canonical records
 * alone (not through the maintenance classification under test).
 */
import type { HistoryEntry, HistoryRecord } from "../../../src/core/ThreadHistory.ts"
import type { SubmissionSnapshot } from "../../../src/core/SubmissionLedger.ts"
import type { MemoryStore } from "../../../src/core/internal/ledger/memory.ts"
import type { ThreadId } from "../../../src/core/Identifiers.ts"

/** Whether the records leave an approval or an uncertain step open. */
export const openWaits = (entries: ReadonlyArray<HistoryEntry>) => {
  const approvals = new Set<number>()
  const uncertain = new Set<number>()
  for (const entry of entries) {
    switch (entry._tag) {
      case "ApprovalRequested":
        approvals.add(entry.step)
        break
      case "ApprovalResolved":
        approvals.delete(entry.step)
        break
      case "UncertainStepStarted":
        uncertain.add(entry.step)
        break
      case "StepCompleted":
      case "StepFailed":
      case "UnknownOutcomeResolved":
        uncertain.delete(entry.step)
        break
    }
  }
  return { approval: approvals.size > 0, uncertain: uncertain.size > 0 }
}

const entriesOf = (store: MemoryStore, row: SubmissionSnapshot): ReadonlyArray<HistoryEntry> =>
  (store.historyBySubmission.get(row.submissionId) ?? []).map((record: HistoryRecord) => record.entry)

/** A head only an external actor can move: an open approval or an unresolved uncertain step. */
export const isStableWait = (store: MemoryStore, row: SubmissionSnapshot): boolean => {
  if (row.abortRequested) return false
  const open = openWaits(entriesOf(store, row))
  return (row.state === "suspended" && open.approval) || (row.state === "unknown" && open.uncertain)
}

/** A lane's nonterminal rows in queue order, with its head's standing. */
export interface LaneView {
  readonly threadId: ThreadId
  readonly head: SubmissionSnapshot
  readonly rows: ReadonlyArray<SubmissionSnapshot>
  readonly headWaits: boolean
  /** Some row can make progress without an external actor. */
  readonly autonomous: boolean
}

/** Every lane with nonterminal work. */
export const lanes = (store: MemoryStore): ReadonlyArray<LaneView> => {
  const out: Array<LaneView> = []
  for (const [threadId, lane] of store.lanes) {
    const rows = lane.nonterminal.flatMap((id) => store.rows.get(id) ?? [])
    const head = rows[0]
    if (head === undefined) continue
    const headWaits = isStableWait(store, head)
    const autonomous =
      !headWaits ||
      rows.slice(1).some(
        (row) =>
          // Plain queued input behind a stable wait is dormant: it cannot run before the head.
          !isStableWait(store, row) &&
          !(row.state === "ready" && row.producerEpoch === 0 && !row.abortRequested),
      )
    out.push({ threadId, head, rows, headWaits, autonomous })
  }
  return out
}
