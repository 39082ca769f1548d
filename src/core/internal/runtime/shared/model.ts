/**
 * Schemas and errors of the durable runtime, kept apart from the service so that the ledger,
 * the history and the runtime's own parts can import them without a cycle. Re-exported by
 * `DurableAgentRuntime`.
 */
import { type DateTime, Schema } from "effect"
import { AgentId, IdempotencyKey, ReceiptId, SubmissionId, ThreadId } from "../../../Identifiers.ts"
import type { DurableRuntimeFailpointError } from "./failpointError.ts"
import type {
  AdmissionCheck,
  AdmissionRefused,
  FenceRejected,
  IdempotencyConflict,
  LedgerError,
  OwnershipLost,
  Settlement,
} from "../../ledger/model.ts"
import type { MessageOutboxError } from "../../outbox/model.ts"

/** One recovery classification of a nonterminal Submission. */
export const RecoveryDecision = Schema.Union([
  Schema.TaggedStruct("CompleteMaterialization", {}),
  Schema.TaggedStruct("RepairReadiness", {}),
  Schema.TaggedStruct("ReleaseExpiredLease", {}),
  Schema.TaggedStruct("ApplyInput", {}),
  Schema.TaggedStruct("ResumeFromTurnBoundary", {}),
  Schema.TaggedStruct("AppendReservedSettlement", {}),
  Schema.TaggedStruct("FinalizeLedgerFromHistory", {}),
  Schema.TaggedStruct("SettleAborted", {}),
  Schema.TaggedStruct("MarkUnknown", { step: Schema.Int }),
  Schema.TaggedStruct("AwaitUnknownResolution", { step: Schema.Int }),
  /** An Unknown Outcome whose step has a reconcile that may run now: the next Attempt runs it. */
  Schema.TaggedStruct("ReconcileUnknown", { step: Schema.Int }),
  /** An Unknown Outcome whose last reconcile failed: it is parked until `notBefore`, then runs again. */
  Schema.TaggedStruct("AwaitReconcileRetry", { step: Schema.Int, notBefore: Schema.Finite }),
  Schema.TaggedStruct("ApplyUnknownResolutions", {}),
  Schema.TaggedStruct("AwaitApprovalDecision", {}),
  /** A timed wait (a sleep, a retry's backoff, a timeout, a delayed start) not yet due. */
  Schema.TaggedStruct("AwaitDue", { dueAt: Schema.Finite }),
  /** A timed wait that is due, or a due row whose Attempt died: the due path claims it. */
  Schema.TaggedStruct("Due", { dueAt: Schema.Finite }),
  Schema.TaggedStruct("ResumeSuspended", {}),
  /** A wait for an event, without a timeout, that no received event ends: a stable wait. */
  Schema.TaggedStruct("AwaitEvent", { event: Schema.String }),
  /** A parent parked on a child that has not settled: a stable wait. */
  Schema.TaggedStruct("AwaitChildSettlement", { child: Schema.Int }),
  /**
   * A parent parked on a child whose settlement is recorded: it runs again. The settlement
   * resumes its parent in the transaction that records it, so only a damaged row gets here.
   */
  Schema.TaggedStruct("ResumeWaitingParent", {}),
  /** A join whose host ended before reading it: it runs as ordinary input. */
  Schema.TaggedStruct("RevertJoining", {}),
  /** A join its host already read, not yet marked joined. */
  Schema.TaggedStruct("RepairJoinMarker", {}),
  /** A joined Submission whose host settled: it settles with it. */
  Schema.TaggedStruct("SettleJoinedWithHost", {}),
  /** A join waiting for its live host: read at the host's next step boundary, settled with it. */
  Schema.TaggedStruct("AwaitHostSettlement", {}),
  Schema.TaggedStruct("NoAction", {}),
])
export type RecoveryDecision = typeof RecoveryDecision.Type

/** `repaired`: executed now; `deferred`: a claiming worker finishes it; `none`: nothing owed; `unknown`: blocked on an Unknown Outcome. */
export const RecoveryDisposition = Schema.Literals(["repaired", "deferred", "none", "unknown"])
export type RecoveryDisposition = typeof RecoveryDisposition.Type

/** The outcome of recovery for one nonterminal Submission. */
export class RecoveryReport extends Schema.Class<RecoveryReport>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/RecoveryReport",
)({
  submissionId: SubmissionId,
  threadId: ThreadId,
  decision: RecoveryDecision,
  disposition: RecoveryDisposition,
}) {}

/**
 * How one head Attempt ended (`DurableAgentRuntime.attemptThreadHead`). Every outcome but
 * `Unclaimed` and a `Yielded` that recorded nothing moved the Submission durably forward.
 */
export type HeadAttempt =
  /** The head settled in this Attempt. */
  | { readonly _tag: "Settled"; readonly settlement: Settlement }
  /**
   * The head moved into a wait: a stable one (an approval request, a child, an Unknown
   * Outcome), or a timed one (`waiting`: a sleep, a retry's backoff, a reconcile's next try).
   */
  | { readonly _tag: "Parked"; readonly wait: "suspended" | "unknown" | "waiting" }
  /** The Attempt yielded between turns; `journaled` when it recorded something before. */
  | { readonly _tag: "Yielded"; readonly journaled: boolean }
  /** Nothing was claimable: no head, a live owner elsewhere, or a wait. */
  | { readonly _tag: "Unclaimed" }

/** How one head Attempt runs. */
export interface HeadAttemptOptions {
  /** The Attempt is asked to yield at a step boundary after this instant. */
  readonly yieldAfter: DateTime.Utc
  /**
   * Settles this Submission `failed` with `error` when the Attempt claims it, without running
   * its program (an accepted abort still settles it `aborted`): the maintenance pass sets aside
   * a head whose Attempts keep killing the Object.
   */
  readonly setAside?: { readonly submissionId: SubmissionId; readonly error: string }
}

/** The durable identity returned by admission. */
export class Receipt extends Schema.Class<Receipt>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/Receipt",
)({
  receiptId: ReceiptId,
  submissionId: SubmissionId,
  threadId: ThreadId,
  queueSequence: Schema.Int,
  /** True when the idempotency key had been used and the original receipt is returned. */
  replayed: Schema.Boolean,
  /** Set when the Submission was admitted as joined input of its lane's running head. */
  host: Schema.optionalKey(SubmissionId),
}) {}

/** A request to admit one input for an agent in a Thread. */
export class SubmitRequest extends Schema.Class<SubmitRequest>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/SubmitRequest",
)({
  threadId: ThreadId,
  agentId: AgentId,
  idempotencyKey: IdempotencyKey,
  /** The input in its encoded (JSON) form; decoded with the agent's input Schema. */
  input: Schema.Json,
  /**
   * `queue` (the default) admits ordinary queued input. `join` admits it as input of the
   * lane's running head, which reads it at its next step boundary, or refuses with
   * `JoinRefused`; `join-or-queue` queues it instead of refusing.
   */
  mode: Schema.optionalKey(Schema.Literals(["queue", "join", "join-or-queue"])),
  /**
   * Runs no earlier than this instant (epoch ms, by the Object's clock): admitted now (its
   * receipt, its key), it keeps its place in the lane and waits there until then. A join cannot
   * wait: `join` refuses it (`JoinRefused`, `delayed`), `join-or-queue` queues it.
   */
  notBefore: Schema.optionalKey(Schema.Finite),
}) {}

/** A join the lane's head cannot take; nothing was written. */
export class JoinRefused extends Schema.TaggedError<JoinRefused>()("JoinRefused", {
  threadId: ThreadId,
  reason: Schema.Literals(["no-running-head", "not-joinable", "other-agent", "head-aborting", "delayed"]),
  message: Schema.String,
}) {}

/**
 * A Submission ready to admit, from `DurableAgentRuntime.prepare`: its agent resolved, its input
 * decoded and canonically encoded, and its admission checked against the ledger once.
 */
export interface PreparedSubmission extends AdmissionCheck {
  /** The key was used already: admitting returns the original receipt. */
  readonly replay: boolean
  /** How it is admitted: queued (the default), or joined into the lane's running head. */
  readonly mode?: SubmitRequest["mode"]
}

/** An approval decision for a suspended Submission. */
export class ApprovalDecision extends Schema.Class<ApprovalDecision>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/ApprovalDecision",
)({
  approved: Schema.Boolean,
  note: Schema.optionalKey(Schema.String),
}) {}

/**
 * No decision arrived before an approval request's timeout; journaled (`ApprovalTimedOut`), so
 * the request is closed and every replay takes this branch.
 */
export class ApprovalTimeout extends Schema.TaggedError<ApprovalTimeout>()("ApprovalTimeout", {
  /** The call position of the request. */
  step: Schema.Int,
  /** The request's due time (epoch ms). */
  timedOutAt: Schema.Finite,
  message: Schema.String,
}) {}

/** The authorized result of an Unknown Outcome. */
export const UnknownResolution = Schema.Union([
  Schema.TaggedStruct("Succeeded", { value: Schema.Json }),
  Schema.TaggedStruct("Failed", { message: Schema.String }),
])
export type UnknownResolution = typeof UnknownResolution.Type

/** A storage failure of the canonical history. */
export class ThreadStoreError extends Schema.TaggedError<ThreadStoreError>()("ThreadStoreError", {
  operation: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect()),
}) {}

/** A settlement that disagrees with the one already reserved or recorded. */
export class SettlementConflict extends Schema.TaggedError<SettlementConflict>()("SettlementConflict", {
  submissionId: SubmissionId,
  message: Schema.String,
}) {}

/** A replay that does not match the journal (a step renamed or reordered). */
export class RunJournalError extends Schema.TaggedError<RunJournalError>()("RunJournalError", {
  submissionId: SubmissionId,
  message: Schema.String,
}) {}

/** A resolution asked of a Submission that is not waiting for it. */
export class NotPending extends Schema.TaggedError<NotPending>()("NotPending", {
  submissionId: SubmissionId,
  expected: Schema.Literals(["approval", "unknown-outcome", "retryable"]),
  message: Schema.String,
}) {}

/** `awaitSettlement` gave up before the Submission settled. */
export class SettlementTimeout extends Schema.TaggedError<SettlementTimeout>()("SettlementTimeout", {
  submissionId: SubmissionId,
  message: Schema.String,
}) {}

export type { DurableRuntimeFailpointError } from "./failpointError.ts"

/** Failures of the runtime's own durable work; the pass propagates them. */
export type DurableWorkerFailure =
  | LedgerError
  | OwnershipLost
  | FenceRejected
  | SettlementConflict
  | ThreadStoreError
  | RunJournalError
  | DurableRuntimeFailpointError
  | MessageOutboxError

/** Failures of a caller's request at the runtime boundary. */
export type SubmitFailure = AdmissionRefused | IdempotencyConflict | JoinRefused | DurableWorkerFailure
