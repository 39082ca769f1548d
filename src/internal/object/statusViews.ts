/**
 * What read-only entry points return: views of ledger rows, lanes, history pages and the
 * maintenance record, safe to send to any caller (no ownership tokens, no stored inputs).
 */
import { Schema } from "effect"
import { AgentId, ReceiptId, SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { HistoryRecord } from "../../core/ThreadHistory.ts"
import { Settlement, SubmissionState, type SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import { ThreadMaintenanceState } from "../maintenance/state.ts"

/** The state of one Submission. */
export class SubmissionStatus extends Schema.Class<SubmissionStatus>(
  "@effect-agent/platform-cloudflare/ThreadClient/SubmissionStatus",
)({
  submissionId: SubmissionId,
  threadId: ThreadId,
  receiptId: ReceiptId,
  agentId: AgentId,
  queueSequence: Schema.Int,
  state: SubmissionState,
  /** Advances with every Claim and forced release. */
  producerEpoch: Schema.Int,
  /** Whether an Attempt currently holds the Submission. */
  owned: Schema.Boolean,
  abortRequested: Schema.Boolean,
  createdAt: Schema.Finite,
  settlement: Schema.optionalKey(Settlement),
}) {}

/** @internal */
export const submissionStatus = (row: SubmissionSnapshot): SubmissionStatus =>
  SubmissionStatus.make({
    submissionId: row.submissionId,
    threadId: row.threadId,
    receiptId: row.receiptId,
    agentId: row.agentId,
    queueSequence: row.queueSequence,
    state: row.state,
    producerEpoch: row.producerEpoch,
    owned: row.ownership !== undefined,
    abortRequested: row.abortRequested,
    createdAt: row.createdAt,
    ...(row.settlement === undefined ? {} : { settlement: row.settlement }),
  })

/** The state of one lane. */
export class ThreadStatus extends Schema.Class<ThreadStatus>(
  "@effect-agent/platform-cloudflare/ThreadClient/ThreadStatus",
)({
  threadId: ThreadId,
  /** Submissions not yet settled, the head included. */
  nonterminal: Schema.Int,
  head: Schema.optionalKey(SubmissionStatus),
}) {}

/** A page of canonical history, oldest first. */
export class HistoryPageView extends Schema.Class<HistoryPageView>(
  "@effect-agent/platform-cloudflare/ThreadClient/HistoryPage",
)({
  records: Schema.Array(HistoryRecord),
  /** Pass as `after` for the next page. */
  next: Schema.optionalKey(Schema.Int),
}) {}

/** Counters of this incarnation (they restart with it). */
export class MaintenanceCounters extends Schema.Class<MaintenanceCounters>(
  "@effect-agent/platform-cloudflare/ThreadClient/MaintenanceCounters",
)({
  passes: Schema.Int,
  caughtUpPasses: Schema.Int,
  failedPasses: Schema.Int,
  settled: Schema.Int,
  /** Mean delay between an alarm's scheduled time and the start of its pass, in ms. */
  meanAlarmLagMillis: Schema.Finite,
  maxAlarmLagMillis: Schema.Finite,
}) {}

/** The maintenance record and the alarm slot, as stored. */
export class MaintenanceInspection extends Schema.Class<MaintenanceInspection>(
  "@effect-agent/platform-cloudflare/ThreadClient/MaintenanceInspection",
)({
  /** Absent until the first gate, pass or mutation persists it, and when it is damaged. */
  record: Schema.optionalKey(ThreadMaintenanceState),
  /** Why the stored record does not decode; `repairMaintenance` rebuilds it. */
  damage: Schema.optionalKey(Schema.Struct({ field: Schema.String, message: Schema.String })),
  /** Whether native maintenance is owed (`dirty > processed`). */
  owed: Schema.Boolean,
  /** The scheduled alarm (epoch ms), or null when the slot is empty. */
  alarm: Schema.NullOr(Schema.Finite),
  counters: MaintenanceCounters,
}) {}

/** @internal */
export const inspection = (
  view: {
    readonly state: ThreadMaintenanceState | undefined
    readonly damage: { readonly field: string; readonly message: string } | undefined
    readonly alarm: number | null
  },
  counters: MaintenanceCounters,
): MaintenanceInspection =>
  MaintenanceInspection.make({
    ...(view.state === undefined ? {} : { record: view.state }),
    ...(view.damage === undefined
      ? {}
      : { damage: { field: view.damage.field, message: view.damage.message } }),
    owed: view.state === undefined || view.state.dirty > view.state.processed,
    alarm: view.alarm,
    counters,
  })
