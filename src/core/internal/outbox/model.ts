/**
 * Messages between Threads in different Objects, and the outbox rows that carry them. Kept
 * apart from the service so that the runtime and the outbox implementations import them
 * without a cycle. Re-exported by `MessageOutbox`.
 *
 * A message is written to the sender's outbox in the same storage transaction as the fact
 * that caused it and is delivered from there at least once; each kind names what the
 * receiver deduplicates by, so a repeated delivery changes nothing.
 */
import { Schema } from "effect"
import { AgentId, AttemptId, IdempotencyKey, ReceiptId, SubmissionId, ThreadId } from "../../Identifiers.ts"
import { SettlementOutcome } from "../ledger/model.ts"
import { ObjectAddress, ParentLink } from "./parentLink.ts"

export { ObjectAddress, ParentLink } from "./parentLink.ts"

/** A message from one Object's runtime to another's. */
export const ThreadMessage = Schema.Union([
  /** Admit a child Submission; the child's Thread deduplicates by its idempotency key. */
  Schema.TaggedStruct("AdmitChild", {
    threadId: ThreadId,
    idempotencyKey: IdempotencyKey,
    agentId: AgentId,
    agentDigest: Schema.String,
    input: Schema.Json,
    parent: ParentLink,
    /**
     * The parent's Attempt that started the child. A parent admitted again under the same id
     * (its first admission removed by retention or `forget`) sends its children's admissions
     * under the same message ids; the receiver remembers a refusal per starting Attempt, so
     * the new parent's child is decided anew, not answered with the first one's refusal.
     * Absent in messages of earlier releases.
     */
    parentAttemptId: Schema.optionalKey(AttemptId),
    /**
     * A settled Submission of the key that this parent did not start answers its settlement
     * instead of refusing the child. Absent in messages of earlier releases.
     */
    joinSettled: Schema.optionalKey(Schema.Literal(true)),
  }),
  /** A child's settlement, for its parent; at most one is applied per child. */
  Schema.TaggedStruct("ChildSettled", {
    parentSubmissionId: SubmissionId,
    step: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
    childSubmissionId: SubmissionId,
    /**
     * The child's idempotency key, which its parent's journal names: a parent admitted again
     * under the same id (its first admission removed by retention or `forget`) starts children
     * under other keys, and must not take the first one's children's settlements for its own.
     * Absent in markers of earlier releases.
     */
    childIdempotencyKey: Schema.optionalKey(IdempotencyKey),
    outcome: SettlementOutcome,
    output: Schema.optionalKey(Schema.Json),
    error: Schema.optionalKey(Schema.String),
  }),
  /** Abort the child admitted under this key; an unknown key records nothing. */
  Schema.TaggedStruct("AbortChild", { threadId: ThreadId, idempotencyKey: IdempotencyKey }),
])
export type ThreadMessage = typeof ThreadMessage.Type

/** Why a child Thread refused an admission; the parent records it as the child's failure. */
export const ChildRefusalReason = Schema.Literals([
  "unknown-agent",
  "digest-mismatch",
  "malformed-input",
  "input-bytes",
  "queue-depth",
  "database-bytes",
  "idempotency-conflict",
  "same-thread",
  "reserved-key",
])
export type ChildRefusalReason = typeof ChildRefusalReason.Type

/** The child was admitted (or had been, under the same key). */
export const ChildAdmitted = Schema.TaggedStruct("ChildAdmitted", {
  submissionId: SubmissionId,
  receiptId: ReceiptId,
  replayed: Schema.Boolean,
  /**
   * A repeat of an admission whose child has settled: its settlement, which the parent records
   * as the marker's. A parent admitted again under a removed parent's id, whose key names a
   * child that settled for the first one (and whose marker that one acknowledged), hears it so.
   */
  settled: Schema.optionalKey(
    Schema.Struct({
      outcome: SettlementOutcome,
      output: Schema.optionalKey(Schema.Json),
      error: Schema.optionalKey(Schema.String),
    }),
  ),
})
/** The child Thread refused the admission; nothing was written there. */
export const ChildRefused = Schema.TaggedStruct("ChildRefused", {
  reason: ChildRefusalReason,
  message: Schema.String,
})
/** `applied` is false for a repeat, or when the parent had already settled. */
export const ChildSettledRecorded = Schema.TaggedStruct("ChildSettledRecorded", { applied: Schema.Boolean })
/** `known` is false when no child was admitted under the key. */
export const ChildAbortRecorded = Schema.TaggedStruct("ChildAbortRecorded", { known: Schema.Boolean })

/** The receiver's answer to a message. */
export const ThreadMessageReply = Schema.Union([
  ChildAdmitted,
  ChildRefused,
  ChildSettledRecorded,
  ChildAbortRecorded,
])
export type ThreadMessageReply = typeof ThreadMessageReply.Type

/** The reply each message kind answers with. */
export interface ThreadMessageReplies {
  readonly AdmitChild: typeof ChildAdmitted.Type | typeof ChildRefused.Type
  readonly ChildSettled: typeof ChildSettledRecorded.Type
  readonly AbortChild: typeof ChildAbortRecorded.Type
}

/** The reply tags each message kind may be answered with. @internal */
export const EXPECTED_REPLIES: {
  readonly [K in ThreadMessage["_tag"]]: ReadonlyArray<ThreadMessageReplies[K]["_tag"]>
} = {
  AdmitChild: ["ChildAdmitted", "ChildRefused"],
  ChildSettled: ["ChildSettledRecorded"],
  AbortChild: ["ChildAbortRecorded"],
}

/** Whether `reply` answers `message`'s kind. @internal */
export const answers = (
  message: ThreadMessage,
  reply: { readonly _tag: string },
): reply is ThreadMessageReply =>
  (EXPECTED_REPLIES[message._tag] as ReadonlyArray<string>).includes(reply._tag)

/**
 * How one delivery ended for the sender: the receiver's reply, or a failure that retrying the
 * same message cannot cure (the address names no Object, the receiver cannot decode it).
 */
export type DeliveryOutcome =
  | { readonly _tag: "Replied"; readonly reply: ThreadMessageReply }
  | { readonly _tag: "Undeliverable"; readonly message: string }

/** A message to enqueue. */
export interface NewMessage {
  /** Unique in the sender's outbox; the same id is never enqueued twice. */
  readonly messageId: string
  readonly target: ObjectAddress
  readonly message: ThreadMessage
  /** A message that must be acknowledged before this one is sent. */
  readonly dependsOn?: string
}

/** One row of the outbox. */
export class OutboxMessage extends Schema.Class<OutboxMessage>(
  "@effect-agent/platform-cloudflare/MessageOutbox/OutboxMessage",
)({
  messageId: Schema.String,
  target: ObjectAddress,
  message: ThreadMessage,
  dependsOn: Schema.optionalKey(Schema.String),
  /** Deliveries that failed so far. */
  attempts: Schema.Int,
  nextAttemptAt: Schema.Finite,
  createdAt: Schema.Finite,
  acknowledgedAt: Schema.optionalKey(Schema.Finite),
  lastError: Schema.optionalKey(Schema.String),
}) {}

/** A storage failure of the outbox. */
export class MessageOutboxError extends Schema.TaggedError<MessageOutboxError>()("MessageOutboxError", {
  operation: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect()),
}) {}

/** Ids of the messages the runtime sends, one per fact. @internal */
export const messageIds = {
  admitChild: (parentSubmissionId: string, step: number) => `admit:${parentSubmissionId}:${step}`,
  abortChild: (parentSubmissionId: string, step: number) => `abort:${parentSubmissionId}:${step}`,
  childSettled: (childSubmissionId: string) => `settled:${childSubmissionId}`,
} as const

/**
 * Whether a message is one `submissionId` sent: an admission or an abort of one of its
 * children, or its own settlement for its parent. @internal
 */
export const sentBy = (messageId: string, submissionId: string): boolean =>
  messageId.startsWith(`admit:${submissionId}:`) ||
  messageId.startsWith(`abort:${submissionId}:`) ||
  messageId === messageIds.childSettled(submissionId)
