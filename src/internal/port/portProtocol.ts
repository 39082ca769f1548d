/**
 * The routed port protocol between `ThreadObject`s: the requests one Object sends another
 * (`portCall`), their replies, and the classification that decides which requests run through
 * the receiver's mutation gate.
 *
 * The classification is a record over every request tag, so the compiler refuses a new kind
 * until it is classified: no kind can bypass the prearm by being forgotten.
 */
import { Schema } from "effect"
import { IdempotencyKey, SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import {
  ThreadMessage,
  ThreadMessageReply,
  type ThreadMessageReplies,
} from "../../core/internal/outbox/model.ts"
import { Settlement, SubmissionState } from "../../core/internal/ledger/model.ts"

/** A read-only request: how the child admitted under a key stands. */
export const DescribeChild = Schema.TaggedStruct("DescribeChild", {
  threadId: ThreadId,
  idempotencyKey: IdempotencyKey,
})

/** Every request kind: the messages of the outbox, and read-only queries. */
export const PortRequest = Schema.Union([ThreadMessage, DescribeChild])
export type PortRequest = typeof PortRequest.Type
/** The `_tag` of a routed request: `AdmitChild`, `DescribeChild`, … */
export type PortRequestTag = PortRequest["_tag"]

/** What a port call carries: the request and the sender's id for it (its deduplication key). */
export const PortEnvelope = Schema.Struct({
  messageId: Schema.String.check(
    Schema.isNonEmpty({ expected: "a non-empty message id" }),
    Schema.isMaxLength(512, { expected: "a message id of at most 512 characters" }),
  ),
  request: PortRequest,
})
export type PortEnvelope = typeof PortEnvelope.Type

export const ChildDescribed = Schema.TaggedStruct("ChildDescribed", {
  child: Schema.optionalKey(
    Schema.Struct({
      submissionId: SubmissionId,
      state: SubmissionState,
      settlement: Schema.optionalKey(Settlement),
    }),
  ),
})

/** Every reply: the messages' and the queries'. */
export const PortReply = Schema.Union([ThreadMessageReply, ChildDescribed])
export type PortReply = typeof PortReply.Type

/** The reply each request kind answers with. */
export interface PortReplies extends ThreadMessageReplies {
  readonly DescribeChild: typeof ChildDescribed.Type
}

/** Whether a request kind changes the receiver (and so runs through its mutation gate). */
export type PortAccess = "mutating" | "read-only"

/** The classification of every request kind. */
export const PORT_REQUEST_ACCESS: { readonly [K in PortRequestTag]: PortAccess } = {
  AdmitChild: "mutating",
  ChildSettled: "mutating",
  AbortChild: "mutating",
  DescribeChild: "read-only",
}

/**
 * A port call the receiver refused before running it (a malformed request, a failed prearm:
 * nothing was written) or failed while running it (its handlers are idempotent, so the
 * sender retries).
 */
export class PortProtocolError extends Schema.TaggedError<PortProtocolError>()("PortProtocolError", {
  reason: Schema.Literals([
    /** The request does not decode: a sender on other code, or a corrupt message. */
    "malformed-request",
    /** The receiver could not arm its maintenance alarm, so it did not run the mutation. */
    "prearm-failed",
    /** The receiver failed while handling the request; it may be retried. */
    "receiver-failed",
  ]),
  message: Schema.String,
}) {}
