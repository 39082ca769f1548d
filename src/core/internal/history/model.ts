/**
 * Schemas of the canonical history, kept apart from the service so that its implementations
 * can import them without a cycle. Re-exported by `ThreadHistory`.
 */
import { Schema } from "effect"
import { AgentId, SubmissionId, ThreadId } from "../../Identifiers.ts"
import { SettlementOutcome } from "../ledger/model.ts"

/**
 * What a reconcile found: the effect happened (with the step's encoded result), did not happen
 * (the step runs again), cannot tell (a person decides), or the reconcile itself failed (it is
 * retried at a later alarm, not before `retryAt`, while attempts remain).
 */
export const ReconcileAnswerRecord = Schema.Union([
  Schema.TaggedStruct("Happened", { value: Schema.Json }),
  Schema.TaggedStruct("NotHappened", {}),
  Schema.TaggedStruct("CannotTell", { reason: Schema.String }),
  Schema.TaggedStruct("Failed", { message: Schema.String, retryAt: Schema.Finite }),
])
export type ReconcileAnswerRecord = typeof ReconcileAnswerRecord.Type

/** The kinds of canonical records. `step` is the 0-based position of a journaled call. */
export const HistoryEntry = Schema.Union([
  Schema.TaggedStruct("SubmissionAccepted", {
    agentId: AgentId,
    agentDigest: Schema.String,
    input: Schema.Json,
  }),
  Schema.TaggedStruct("InputApplied", {}),
  Schema.TaggedStruct("StepCompleted", { step: Schema.Int, name: Schema.String, result: Schema.Json }),
  Schema.TaggedStruct("StepFailed", { step: Schema.Int, name: Schema.String, error: Schema.String }),
  Schema.TaggedStruct("UncertainStepStarted", {
    step: Schema.Int,
    name: Schema.String,
    /** Present when the step can be reconciled: how many reconcile attempts recovery may make. */
    reconcileAttempts: Schema.optionalKey(Schema.Int),
  }),
  /** A reconcile of an Unknown Outcome is about to run (counted even if it never answers). */
  Schema.TaggedStruct("ReconcileStarted", { step: Schema.Int, attempt: Schema.Int }),
  Schema.TaggedStruct("ReconcileAnswered", {
    step: Schema.Int,
    attempt: Schema.Int,
    answer: ReconcileAnswerRecord,
  }),
  Schema.TaggedStruct("UnknownOutcomeRecorded", { step: Schema.Int, name: Schema.String }),
  Schema.TaggedStruct("UnknownOutcomeResolved", {
    step: Schema.Int,
    resolution: Schema.Union([
      Schema.TaggedStruct("Succeeded", { value: Schema.Json }),
      Schema.TaggedStruct("Failed", { message: Schema.String }),
    ]),
  }),
  Schema.TaggedStruct("ApprovalRequested", { step: Schema.Int, payload: Schema.Json }),
  Schema.TaggedStruct("ApprovalResolved", {
    step: Schema.Int,
    approved: Schema.Boolean,
    note: Schema.optionalKey(Schema.String),
  }),
  Schema.TaggedStruct("AbortRequested", {}),
  Schema.TaggedStruct("SubmissionSettled", {
    outcome: SettlementOutcome,
    output: Schema.optionalKey(Schema.Json),
    error: Schema.optionalKey(Schema.String),
  }),
])
export type HistoryEntry = typeof HistoryEntry.Type

/** One record of a Thread's canonical history. */
export class HistoryRecord extends Schema.Class<HistoryRecord>(
  "@effect-agent/platform-cloudflare/ThreadHistory/HistoryRecord",
)({
  threadId: ThreadId,
  /** 1-based, gap-free position within the Thread. */
  sequence: Schema.Int,
  submissionId: SubmissionId,
  recordedAt: Schema.Finite,
  entry: HistoryEntry,
}) {}

/** A page of history, oldest first. */
export interface HistoryPage {
  readonly records: ReadonlyArray<HistoryRecord>
  /** The sequence to pass as `after` for the next page, when there is one. */
  readonly next?: number
}

/** A record with its position in the Object's commit-ordered feed. */
export interface FeedEntry {
  /** Increases with every append across all Threads of the Object; never reused. */
  readonly position: number
  readonly record: HistoryRecord
}

/** A page of the feed, in commit order. */
export interface FeedPage {
  readonly entries: ReadonlyArray<FeedEntry>
  /** The position to pass as `after` next: the last entry's, or `after` itself when empty. */
  readonly last: number
}
