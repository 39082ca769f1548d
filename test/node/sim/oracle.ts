/**
 * An independent reading of durable state for the invariants: which lanes hold autonomous work
 * and which heads are stable external waits, decided from ledger rows and canonical records
 * alone (not through the maintenance classification under test).
 */
import type { HistoryEntry, HistoryRecord } from "../../../src/core/ThreadHistory.ts"
import type { SubmissionSnapshot } from "../../../src/core/SubmissionLedger.ts"
import type { MemoryStore } from "../../../src/core/internal/ledger/memoryStore.ts"
import type { ThreadId } from "../../../src/core/Identifiers.ts"

/** Whether the records leave an approval, an uncertain step or a wait for a child open. */
export const openWaits = (entries: ReadonlyArray<HistoryEntry>) => {
  const approvals = new Set<number>()
  const uncertain = new Set<number>()
  const awaited = new Set<number>()
  const settledChildren = new Set<number>()
  for (const entry of entries) {
    switch (entry._tag) {
      case "ChildAwaited":
        awaited.add(entry.child)
        break
      case "ChildSettled":
        settledChildren.add(entry.step)
        break
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
  return {
    approval: approvals.size > 0,
    uncertain: uncertain.size > 0,
    child: [...awaited].some((step) => !settledChildren.has(step)),
  }
}

/** Whether the row is parked on a wait for an event none of its records can end. */
export const awaitsEvent = (row: SubmissionSnapshot, entries: ReadonlyArray<HistoryEntry>): boolean => {
  const wait = row.wait
  if (row.state !== "suspended" || wait?._tag !== "Event") return false
  const taken = new Set(entries.flatMap((entry) => (entry._tag === "EventConsumed" ? [entry.eventId] : [])))
  return !entries.some(
    (entry) => entry._tag === "EventReceived" && entry.event === wait.event && !taken.has(entry.eventId),
  )
}

const entriesOf = (store: MemoryStore, row: SubmissionSnapshot): ReadonlyArray<HistoryEntry> =>
  (store.historyBySubmission.get(row.submissionId) ?? []).map((record: HistoryRecord) => record.entry)

/**
 * A row only something outside its lane can move: an open approval, an unresolved uncertain
 * step, a child it waits for, an event no record can end, a join whose live host has not read it yet (or has, and will
 * settle it), or a child whose recorded settlement waits for its parent's acknowledgement.
 */
export const isStableWait = (store: MemoryStore, row: SubmissionSnapshot): boolean => {
  // A settling row's abort is moot: its settlement is reserved.
  if (row.abortRequested && row.state !== "terminalizing") return false
  switch (row.state) {
    case "suspended": {
      const entries = entriesOf(store, row)
      const open = openWaits(entries)
      return open.approval || open.child || awaitsEvent(row, entries)
    }
    case "unknown":
      return openWaits(entriesOf(store, row)).uncertain
    case "joined":
      return true
    case "joining": {
      const host = row.host === undefined ? undefined : store.rows.get(row.host)
      if (host === undefined || host.state === "terminalizing" || host.state === "settled") return false
      return !(store.historyBySubmission.get(host.submissionId) ?? []).some(
        (record) =>
          record.entry._tag === "InputJoined" &&
          record.entry.joined.some((joined) => joined.submissionId === row.submissionId),
      )
    }
    case "terminalizing":
      return (
        row.parent !== undefined &&
        entriesOf(store, row).some((entry) => entry._tag === "SubmissionSettled") &&
        store.outbox.get(`settled:${row.submissionId}`)?.acknowledgedAt === undefined
      )
    default:
      return false
  }
}

/**
 * A timed wait: a row parked until its due time (`waiting`), or claimed in place by the due path
 * (`running` with a due time). No outside actor has to move it: its alarm does.
 */
export const isTimedWait = (row: SubmissionSnapshot): boolean =>
  !row.abortRequested && row.dueAt !== undefined && (row.state === "waiting" || row.state === "running")

/** Every timed wait of the Object. */
export const timedWaits = (store: MemoryStore): ReadonlyArray<SubmissionSnapshot> =>
  [...store.rows.values()].filter(isTimedWait)

/** Whether the outbox holds a message still to be sent (its dependency acknowledged). */
export const hasPendingMessages = (store: MemoryStore): boolean =>
  [...store.outbox.values()].some(
    (row) =>
      row.acknowledgedAt === undefined &&
      (row.dependsOn === undefined || store.outbox.get(row.dependsOn)?.acknowledgedAt !== undefined),
  )

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
    // A timed wait is covered by its own alarm (the `timer-covered` invariant), not a backoff.
    const headWaits = isStableWait(store, head) || isTimedWait(head)
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
