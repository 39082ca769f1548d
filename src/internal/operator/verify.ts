/**
 * `verify`: the invariants that can be checked from storage alone, each violation reported
 * with the rows that show it. It reads every ledger row and every history record: an
 * operator's tool, not a hot path. Exact when no pass or mutation is running; one that is
 * running may show a transient state (a binding wait the next finish drops, a reservation
 * without its record yet).
 */
import type { Schema } from "effect"
import type { RecoveryReport } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import type { ScheduleInfo, Settlement, SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import type { HistoryRecord } from "../../core/ThreadHistory.ts"
import { hasAutonomousWork, indexReports } from "../maintenance/classify.ts"
import type { MaintenanceView } from "./explain.ts"
import { eventViolations } from "./verifyEvents.ts"
import { type Invariant, Invariant as InvariantSchema, VerifyReport, Violation } from "./reports.ts"
import type { AlarmTiming } from "../maintenance/alarmPolicy.ts"
import { verifySchedules } from "./verifySchedules.ts"
import { verifyTimers } from "./verifyTimers.ts"

/** @internal */
export interface VerifyInput {
  readonly maintenance: MaintenanceView
  /** Every ledger row, in lane order. */
  readonly rows: ReadonlyArray<SubmissionSnapshot>
  /** Every history record, in commit order. */
  readonly records: ReadonlyArray<HistoryRecord>
  /**
   * Retention or `forget` has removed Submissions: their Thread sequences and lane positions
   * are gone, so only the order of what is kept can be checked, not that nothing is missing.
   */
  readonly historyRemoved?: boolean
  /** The ledger's own nonterminal counts: of the Object, and per lane. */
  readonly counted: { readonly all: number; readonly lanes: ReadonlyMap<ThreadId, number> }
  readonly reports: ReadonlyArray<RecoveryReport>
  readonly now: number
  /** A pass runs now: its finish writes the alarm, so an empty slot is not a violation. */
  readonly passRunning: boolean
  readonly timing: AlarmTiming
  /** `timerCoalesceMillis`: how late past its due time a timed wait's alarm may be. */
  readonly timerCoalesceMillis: number
  /** Every schedule of the Object. */
  readonly schedules: ReadonlyArray<ScheduleInfo>
}

/** Every invariant `verify` checks. */
export const verifiedInvariants: ReadonlyArray<Invariant> = InvariantSchema.literals

const groupBy = <A, K>(items: ReadonlyArray<A>, key: (item: A) => K): Map<K, Array<A>> => {
  const groups = new Map<K, Array<A>>()
  for (const item of items) {
    const k = key(item)
    const group = groups.get(k)
    if (group === undefined) groups.set(k, [item])
    else group.push(item)
  }
  return groups
}

const settledEntry = (record: HistoryRecord) =>
  record.entry._tag === "SubmissionSettled" ? record.entry : undefined

const sameSettlement = (settlement: Settlement, record: HistoryRecord): boolean => {
  const entry = settledEntry(record)
  return (
    entry !== undefined &&
    entry.outcome === settlement.outcome &&
    JSON.stringify(entry.output ?? null) === JSON.stringify(settlement.output ?? null) &&
    (entry.error ?? null) === (settlement.error ?? null)
  )
}

/** @internal */
export const verifyStorage = (input: VerifyInput): VerifyReport => {
  const violations: Array<Violation> = []
  const violate = (
    invariant: Invariant,
    message: string,
    submissionIds: ReadonlyArray<SubmissionId>,
    evidence: Schema.Json,
    threadId?: ThreadId,
  ) =>
    violations.push(
      Violation.make({
        invariant,
        message,
        submissionIds: [...submissionIds],
        evidence,
        ...(threadId === undefined ? {} : { threadId }),
      }),
    )
  const { maintenance, rows, records } = input
  const state = maintenance.state
  const byId = new Map(rows.map((row) => [row.submissionId, row]))
  const recordsOf = groupBy(records, (record) => record.submissionId)
  const settledRecordsOf = (id: SubmissionId) =>
    (recordsOf.get(id) ?? []).filter((record) => settledEntry(record) !== undefined)
  const nonterminal = rows.filter((row) => row.state !== "settled")

  if (maintenance.damage !== undefined) {
    violate("maintenance-record", maintenance.damage.message, [], { field: maintenance.damage.field })
  }

  for (const [id, group] of recordsOf) {
    const settled = group.filter((record) => settledEntry(record) !== undefined)
    if (settled.length > 1)
      violate("one-settlement", `submission ${id} has ${settled.length} settlement records`, [id], {
        sequences: settled.map((record) => record.sequence),
      })
    for (const broken of eventViolations(group)) violate("event-once", broken.message, [id], broken.evidence)
    if (!byId.has(id))
      violate(
        "settlement-agreement",
        `history holds records of ${id}, which the ledger does not know`,
        [id],
        {
          sequences: group.map((record) => record.sequence),
        },
      )
  }

  // After a removal the gaps are expected: only the order of what is kept can be checked.
  const gapFree = input.historyRemoved !== true
  for (const [threadId, group] of gapFree ? groupBy(records, (record) => record.threadId) : []) {
    const sequences = group.map((record) => record.sequence).sort((a, b) => a - b)
    const gap = sequences.findIndex((sequence, index) => sequence !== index + 1)
    if (gap !== -1)
      violate(
        "history-gap-free",
        `thread ${threadId} expects sequence ${gap + 1}, finds ${sequences[gap]}`,
        [],
        { found: sequences[gap] ?? null, expected: gap + 1 },
        threadId,
      )
  }

  for (const [threadId, lane] of groupBy(rows, (row) => row.threadId)) {
    const ordered = [...lane].sort((a, b) => a.queueSequence - b.queueSequence)
    const gap = gapFree ? ordered.findIndex((row, index) => row.queueSequence !== index + 1) : -1
    if (gap !== -1)
      violate(
        "fifo",
        `lane ${threadId} has queue sequence ${ordered[gap]?.queueSequence} at position ${gap + 1}`,
        [ordered[gap]?.submissionId].flatMap((id) => id ?? []),
        { position: gap + 1 },
        threadId,
      )
    // A Submission runs only after every earlier one of its lane settled: one walk keeping
    // the earlier row that settled last (or has not settled).
    let blocker: { readonly row: SubmissionSnapshot; readonly settledAt: number | undefined } | undefined
    for (const row of ordered) {
      const applied = recordsOf.get(row.submissionId)?.find((record) => record.entry._tag === "InputApplied")
      if (
        applied !== undefined &&
        blocker !== undefined &&
        (blocker.settledAt === undefined || blocker.settledAt > applied.sequence)
      ) {
        violate(
          "fifo",
          `${row.submissionId} started (sequence ${applied.sequence}) before ${blocker.row.submissionId}, ahead of it, settled`,
          [blocker.row.submissionId, row.submissionId],
          {
            started: applied.sequence,
            earlierSettled: blocker.settledAt ?? null,
            earlierState: blocker.row.state,
          },
          threadId,
        )
      }
      const settledAt = settledRecordsOf(row.submissionId)[0]?.sequence
      if (blocker?.settledAt === undefined && blocker !== undefined) continue
      if (blocker === undefined || settledAt === undefined || settledAt > (blocker.settledAt ?? Infinity))
        blocker = { row, settledAt }
    }
    const counted = input.counted.lanes.get(threadId) ?? 0
    const actual = lane.filter((row) => row.state !== "settled").length
    if (counted !== actual)
      violate(
        "nonterminal-counted",
        `lane ${threadId} counts ${counted} nonterminal, holds ${actual}`,
        [],
        { counted, actual },
        threadId,
      )
  }
  if (input.counted.all !== nonterminal.length)
    violate(
      "nonterminal-counted",
      `the ledger counts ${input.counted.all} nonterminal, holds ${nonterminal.length}`,
      [],
      {
        counted: input.counted.all,
        actual: nonterminal.length,
      },
    )

  for (const row of rows) {
    const settled = settledRecordsOf(row.submissionId)
    const id = [row.submissionId]
    if (row.state === "settled") {
      if (row.settlement === undefined)
        violate("settlement-agreement", `${row.submissionId} is settled without a settlement`, id, {
          state: row.state,
        })
      else if (settled.length === 0)
        violate(
          "settlement-agreement",
          `${row.submissionId} is settled in the ledger, not in the history`,
          id,
          { outcome: row.settlement.outcome },
        )
      else if (!settled.every((record) => sameSettlement(row.settlement as Settlement, record)))
        violate(
          "settlement-agreement",
          `ledger and history disagree on how ${row.submissionId} settled`,
          id,
          {
            ledger: row.settlement.outcome,
            history: settled.map((record) => settledEntry(record)?.outcome ?? null),
          },
        )
    } else if (row.state === "terminalizing") {
      if (
        row.settlement !== undefined &&
        settled.some((record) => !sameSettlement(row.settlement as Settlement, record))
      )
        violate(
          "settlement-agreement",
          `the reserved settlement of ${row.submissionId} disagrees with its record`,
          id,
          { ledger: row.settlement.outcome },
        )
    } else if (settled.length > 0) {
      violate(
        "settlement-agreement",
        `${row.submissionId} is ${row.state} in the ledger but settled in the history`,
        id,
        {
          state: row.state,
        },
      )
    }
  }

  if (state !== undefined) {
    if (state.dirty < state.processed)
      violate("dirty-at-least-processed", `dirty ${state.dirty} is below processed ${state.processed}`, [], {
        dirty: state.dirty.toString(),
        processed: state.processed.toString(),
      })
    const autonomous = hasAutonomousWork(nonterminal, indexReports(input.reports))
    if ((state.dirty > state.processed || autonomous) && maintenance.alarm === null && !input.passRunning)
      violate(
        "owed-work-has-alarm",
        autonomous
          ? "autonomous work remains and no alarm is set"
          : "a generation is owed and no alarm is set",
        [],
        {
          dirty: state.dirty.toString(),
          processed: state.processed.toString(),
          autonomous,
        },
      )
    // The next actionable finish drops waits of settled work; with nothing owed, none may remain.
    if (state.dirty <= state.processed) {
      for (const wait of state.bindingRetries ?? []) {
        const row = byId.get(wait.submissionId)
        if (row === undefined || row.state === "settled")
          violate(
            "binding-waits-nonterminal",
            `a binding wait remains for ${row === undefined ? "unknown" : "settled"} submission ${wait.submissionId}`,
            [wait.submissionId],
            {
              state: row?.state ?? null,
            },
            wait.threadId,
          )
      }
    }
  }

  violations.push(...verifyTimers(input))
  violations.push(...verifySchedules(input))

  return VerifyReport.make({
    submissions: rows.length,
    historyRecords: records.length,
    invariants: [...verifiedInvariants],
    violations,
    passRunning: input.passRunning,
    verifiedAt: input.now,
  })
}
