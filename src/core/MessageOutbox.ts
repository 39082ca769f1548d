/**
 * The outbox of one physical Object: messages to the Threads of other Objects (a child's
 * admission, a child's settlement for its parent, an abort for a child).
 *
 * A message is enqueued in the same storage transaction as the fact that caused it, so a
 * fact is never durable without its message nor a message without its fact; a delivery
 * driver sends due messages at least once and records an acknowledgement or the next attempt.
 * A message waits for the one it depends on to be acknowledged, so the receiver sees them in
 * that order.
 */
import { Context, Effect, Layer } from "effect"
import type { Option } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SubmissionId } from "./Identifiers.ts"
import type { HistoryEntry, HistoryRecord } from "./internal/history/model.ts"
import type { RetentionItem } from "./internal/ledger/retention.ts"
import type {
  AppendFence,
  Fence,
  LedgerError,
  FenceFailure,
  InvalidTransition,
  Settlement,
  SubmissionNotFound,
  SubmissionSnapshot,
} from "./internal/ledger/model.ts"
import type {
  MessageOutboxError,
  NewMessage,
  OutboxMessage,
  ThreadMessageReply,
} from "./internal/outbox/model.ts"
import { makeMemoryOutbox } from "./internal/outbox/memory.ts"
import { makeSqlOutbox } from "./internal/outbox/sql.ts"
import { publishingOutbox } from "./internal/progress/publishing.ts"
import type { DurableWorkerFailure } from "./internal/runtime/shared/model.ts"
import type { SubmissionLedger } from "./SubmissionLedger.ts"
import type { ThreadHistory } from "./ThreadHistory.ts"

export {
  ChildAbortRecorded,
  ChildAdmitted,
  ChildRefusalReason,
  ChildRefused,
  ChildSettledRecorded,
  MessageOutboxError,
  ObjectAddress,
  OutboxMessage,
  ParentLink,
  ThreadMessage,
  ThreadMessageReply,
} from "./internal/outbox/model.ts"
export type { DeliveryOutcome, NewMessage, ThreadMessageReplies } from "./internal/outbox/model.ts"

/**
 * Where this Object is reached: its namespace binding and its id. A Submission starts children
 * only when both are known (its children send their settlements here); the id alone lets a
 * child Thread refuse a parent in its own lane.
 */
export const SelfAddress = Context.Reference<{ readonly namespace?: string; readonly objectId?: string }>(
  "@effect-agent/platform-cloudflare/SelfAddress",
  { defaultValue: () => ({}) },
)

/** The outbox of one physical Object. */
export class MessageOutbox extends Context.Service<
  MessageOutbox,
  {
    /**
     * Appends history records (fenced like `ThreadHistory.appendAll`) and enqueues `messages`,
     * atomically: both commit or neither does.
     */
    readonly appendWithMessages: (
      submissionId: SubmissionId,
      entries: ReadonlyArray<HistoryEntry>,
      fence: AppendFence,
      now: number,
      messages: ReadonlyArray<NewMessage>,
    ) => Effect.Effect<ReadonlyArray<HistoryRecord>, SubmissionNotFound | DurableWorkerFailure>
    /**
     * Settles as `SubmissionLedger.settle` does and enqueues `messages`, atomically: a child's
     * settlement marker for its parent, an aborted parent's aborts for its children. A repeat
     * of the identical settlement enqueues nothing new (message ids are unique).
     */
    readonly settleWithMessages: (
      fence: Fence,
      settlement: Settlement,
      preceding: ReadonlyArray<HistoryEntry>,
      messages: ReadonlyArray<NewMessage>,
    ) => Effect.Effect<SubmissionSnapshot, FenceFailure | InvalidTransition | MessageOutboxError>
    /** Enqueues messages due at `now`; an id already in the outbox is left as it is. */
    readonly enqueue: (
      messages: ReadonlyArray<NewMessage>,
      now: number,
    ) => Effect.Effect<void, MessageOutboxError>
    /**
     * Unacknowledged messages due at `now` whose dependency (if any) is acknowledged, earliest
     * first, at most `limit`.
     */
    readonly due: (
      now: number,
      limit: number,
    ) => Effect.Effect<ReadonlyArray<OutboxMessage>, MessageOutboxError>
    /** When the earliest sendable message is due; none when nothing is left to send. */
    readonly nextDue: Effect.Effect<Option.Option<number>, MessageOutboxError>
    /** Records a failed delivery: one more attempt, the next one at `nextAttemptAt`. */
    readonly retry: (
      messageId: string,
      failure: { readonly nextAttemptAt: number; readonly error: string },
    ) => Effect.Effect<void, MessageOutboxError>
    /** Records the receiver's acknowledgement; a repeat is a no-op. */
    readonly acknowledge: (messageId: string, now: number) => Effect.Effect<void, MessageOutboxError>
    readonly lookup: (messageId: string) => Effect.Effect<Option.Option<OutboxMessage>, MessageOutboxError>
    /**
     * Remembers, on the receiving side, the answer given to a message whose effect nothing else
     * records (a refused admission writes no row): a late duplicate of the message gets the
     * same answer, so a refused child never runs.
     */
    readonly rememberAnswer: (
      messageId: string,
      reply: ThreadMessageReply,
      now: number,
    ) => Effect.Effect<void, MessageOutboxError>
    /** The answer remembered for a message, if any. */
    readonly answerOf: (
      messageId: string,
    ) => Effect.Effect<Option.Option<ThreadMessageReply>, MessageOutboxError>
    /**
     * The messages a Submission sent: its children's admissions and aborts, and its own
     * settlement for its parent (ranges of the outbox's key, no other row read).
     */
    readonly messagesOf: (
      submissionId: SubmissionId,
    ) => Effect.Effect<ReadonlyArray<OutboxMessage>, MessageOutboxError>
    /**
     * Removes settled Submissions as `SubmissionLedger.removeSettled` does, with the messages
     * they sent, in one transaction. A Submission with a message not yet acknowledged is
     * skipped, whole. Returns the ids removed.
     */
    readonly removeSettled: (
      items: ReadonlyArray<RetentionItem>,
    ) => Effect.Effect<ReadonlyArray<SubmissionId>, MessageOutboxError | LedgerError>
  }
>()("@effect-agent/platform-cloudflare/MessageOutbox") {
  /**
   * The outbox on Durable Object SQLite; runs its migration when built. Each append or settlement
   * publishes its Submission to the `ProgressHub` of its context, if one is provided.
   */
  static readonly layer: Layer.Layer<
    MessageOutbox,
    MessageOutboxError,
    SqlClient | SubmissionLedger | ThreadHistory
  > = Layer.effect(this, Effect.flatMap(makeSqlOutbox, publishingOutbox))
  /**
   * A faithful in-memory outbox; needs the in-memory ledger and history, whose store it shares.
   * Publishes like the SQLite one.
   */
  static readonly layerMemory: Layer.Layer<MessageOutbox, MessageOutboxError, SubmissionLedger> =
    Layer.effect(this, Effect.flatMap(makeMemoryOutbox, publishingOutbox))
}
