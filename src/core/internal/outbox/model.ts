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
import { AgentId, IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import { SettlementOutcome } from "../ledger/model.ts"

const Name = (what: string) =>
  Schema.String.check(
    Schema.isNonEmpty({ expected: `a non-empty ${what}` }),
    Schema.isMaxLength(256, { expected: `a ${what} of at most 256 characters` }),
  )

/**
 * Where an Object lives: the name of the Worker binding of its namespace, and either its id
 * (`DurableObjectId.toString()`) or the name it is reached by (`getByName`).
 */
export const ObjectAddress = Schema.Struct({
  namespace: Name("namespace binding name"),
  objectId: Schema.optionalKey(Name("object id")),
  objectName: Schema.optionalKey(Name("object name")),
}).check(
  Schema.makeFilter((address) => (address.objectId === undefined) !== (address.objectName === undefined), {
    expected: "an address with exactly one of objectId and objectName",
  }),
)
export type ObjectAddress = typeof ObjectAddress.Type

/** The parent of a child Submission: where its settlement marker goes. */
export const ParentLink = Schema.Struct({
  address: ObjectAddress,
  threadId: ThreadId,
  submissionId: SubmissionId,
  /** The call position of `startChild` in the parent's journal. */
  step: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
})
export type ParentLink = typeof ParentLink.Type

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
  }),
  /** A child's settlement, for its parent; at most one is applied per child. */
  Schema.TaggedStruct("ChildSettled", {
    parentSubmissionId: SubmissionId,
    step: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
    childSubmissionId: SubmissionId,
    outcome: SettlementOutcome,
    output: Schema.optionalKey(Schema.Json),
    error: Schema.optionalKey(Schema.String),
  }),
  /** Abort the child admitted under this key; an unknown key records nothing. */
  Schema.TaggedStruct("AbortChild", { threadId: ThreadId, idempotencyKey: IdempotencyKey }),
])
export type ThreadMessage = typeof ThreadMessage.Type

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
export class OutboxMessage extends Schema.Class<OutboxMessage>("@effect-agent/OutboxMessage")({
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
