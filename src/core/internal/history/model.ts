/**
 * Schemas of the canonical history, kept apart from the service so that its implementations
 * can import them without a cycle. Re-exported by `ThreadHistory`.
 */
import { Schema } from "effect"
import { AgentId, IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import { ScheduleOccurrence, SettlementOutcome } from "../ledger/model.ts"
import { ChildRefusalReason } from "../outbox/model.ts"
import { ObjectAddress, ParentLink } from "../outbox/parentLink.ts"

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

/**
 * The kinds of canonical records, by `_tag`; `step` is the 0-based position of a journaled call.
 * The ledger records the two ends of a Submission (`SubmissionAccepted`, `SubmissionSettled`);
 * an Attempt journals its calls (`InputApplied`, `StepCompleted` or `StepFailed`,
 * `UncertainStepStarted`, `ApprovalRequested`, `ChildStarted`, `ChildAwaited`, `InputJoined`,
 * the reconcile records, the ends of waits: `TimerFired`, `EventConsumed`, `EventWaitTimedOut`,
 * `ApprovalTimedOut`); what arrives from outside is recorded with the resumption it causes
 * (`ApprovalResolved`, `UnknownOutcomeRecorded` and `UnknownOutcomeResolved`, `ChildSettled`,
 * `EventReceived`, `AbortRequested`).
 */
export const HistoryEntry = Schema.Union([
  Schema.TaggedStruct("SubmissionAccepted", {
    agentId: AgentId,
    agentDigest: Schema.String,
    input: Schema.Json,
    /** A child Submission's parent. */
    parent: Schema.optionalKey(ParentLink),
    /** The host a joining Submission was admitted into. */
    host: Schema.optionalKey(SubmissionId),
    /** A delayed Submission runs no earlier than this (epoch ms). */
    notBefore: Schema.optionalKey(Schema.Finite),
    /** The schedule occurrence this Submission is. */
    schedule: Schema.optionalKey(ScheduleOccurrence),
  }),
  Schema.TaggedStruct("InputApplied", {}),
  Schema.TaggedStruct("StepCompleted", {
    step: Schema.Int,
    name: Schema.String,
    result: Schema.Json,
    /** The attempts it took, when a retry policy made more than one. */
    attempts: Schema.optionalKey(Schema.Int),
  }),
  Schema.TaggedStruct("StepFailed", {
    step: Schema.Int,
    name: Schema.String,
    error: Schema.String,
    /** The attempts it took, when a retry policy made more than one. */
    attempts: Schema.optionalKey(Schema.Int),
  }),
  /**
   * Attempt `attempt` of a retried step failed at `failedAt`; the next one runs no earlier than
   * `retryAt`, which replay reads and never computes again.
   */
  Schema.TaggedStruct("StepAttemptFailed", {
    step: Schema.Int,
    name: Schema.String,
    attempt: Schema.Int,
    error: Schema.String,
    failedAt: Schema.Finite,
    retryAt: Schema.Finite,
  }),
  /** The sleep at `step` found its due time `dueAt` reached. */
  Schema.TaggedStruct("TimerFired", { step: Schema.Int, name: Schema.String, dueAt: Schema.Finite }),
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
  Schema.TaggedStruct("ApprovalRequested", {
    step: Schema.Int,
    payload: Schema.Json,
    /** A request with a timeout is closed undecided at this instant (epoch ms). */
    dueAt: Schema.optionalKey(Schema.Finite),
  }),
  Schema.TaggedStruct("ApprovalResolved", {
    step: Schema.Int,
    approved: Schema.Boolean,
    note: Schema.optionalKey(Schema.String),
  }),
  /** A child Submission this one started; its admission is sent from the outbox. */
  Schema.TaggedStruct("ChildStarted", {
    step: Schema.Int,
    target: ObjectAddress,
    threadId: ThreadId,
    agentId: AgentId,
    agentDigest: Schema.String,
    idempotencyKey: IdempotencyKey,
    input: Schema.Json,
  }),
  /** The program waits for the child started at `child`. */
  Schema.TaggedStruct("ChildAwaited", { step: Schema.Int, child: Schema.Int }),
  /**
   * The settlement of the child started at `step` (an input record: it takes no call position).
   * `refused` says the child's Thread refused the admission, so no child ran.
   */
  Schema.TaggedStruct("ChildSettled", {
    step: Schema.Int,
    childSubmissionId: Schema.optionalKey(SubmissionId),
    outcome: SettlementOutcome,
    output: Schema.optionalKey(Schema.Json),
    error: Schema.optionalKey(Schema.String),
    refused: Schema.optionalKey(ChildRefusalReason),
  }),
  /** Joined input the program read at `step`: the joined Submissions and their inputs. */
  Schema.TaggedStruct("InputJoined", {
    step: Schema.Int,
    joined: Schema.Array(Schema.Struct({ submissionId: SubmissionId, input: Schema.Json })),
  }),
  /**
   * An event sent to this Submission (an input record: it takes no call position), kept until
   * a wait for its name takes it. `payload` is its JSON: a declared event's encoded value.
   */
  Schema.TaggedStruct("EventReceived", {
    event: Schema.String,
    eventId: Schema.String,
    payload: Schema.Json,
  }),
  /** The wait for `event` at `step` took the event `eventId`. */
  Schema.TaggedStruct("EventConsumed", { step: Schema.Int, event: Schema.String, eventId: Schema.String }),
  /** The wait for `event` at `step` reached its due time `dueAt` with no event: it failed. */
  Schema.TaggedStruct("EventWaitTimedOut", { step: Schema.Int, event: Schema.String, dueAt: Schema.Finite }),
  /** The approval request at `step` reached its due time `dueAt` undecided: it is closed. */
  Schema.TaggedStruct("ApprovalTimedOut", { step: Schema.Int, dueAt: Schema.Finite }),
  Schema.TaggedStruct("AbortRequested", {}),
  Schema.TaggedStruct("SubmissionSettled", {
    outcome: SettlementOutcome,
    output: Schema.optionalKey(Schema.Json),
    error: Schema.optionalKey(Schema.String),
    /** A joined Submission settles with its host. */
    host: Schema.optionalKey(SubmissionId),
  }),
])
export type HistoryEntry = typeof HistoryEntry.Type

/** The kind of a record: its entry's tag. */
export type HistoryEntryKind = HistoryEntry["_tag"]

/** Every record kind, from the entry schema. @internal */
export const HISTORY_ENTRY_KINDS: ReadonlySet<string> = new Set(
  HistoryEntry.members.map((member) => member.fields._tag.ast.literal as string),
)

/** One record of a Thread's canonical history. */
export class HistoryRecord extends Schema.Class<HistoryRecord>(
  "@effect-agent/platform-cloudflare/ThreadHistory/HistoryRecord",
)({
  threadId: ThreadId,
  /** 1-based position within the Thread; gap-free until retention removes settled Submissions. */
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
