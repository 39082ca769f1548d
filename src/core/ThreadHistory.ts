/**
 * The canonical history: an append-only log of records per Thread.
 *
 * Appends are fenced by the ledger: a record lands only while the writer's fence holds, in
 * one storage transaction with the fence check, so a stale owner can never add evidence.
 */
import { Context, Effect, Layer, type Option } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { DurableWorkerFailure, ThreadStoreError } from "./internal/runtime/shared/model.ts"
import type { SubmissionId, ThreadId } from "./Identifiers.ts"
import type {
  FeedPage,
  HistoryEntry,
  HistoryEntryKind,
  HistoryPage,
  HistoryRecord,
} from "./internal/history/model.ts"
import type { AppendFence, LedgerError, SubmissionNotFound } from "./internal/ledger/model.ts"
import { makeMemoryHistory } from "./internal/history/memory.ts"
import { makeSqlHistory } from "./internal/history/sql.ts"
import { publishingHistory } from "./internal/progress/publishing.ts"
import { SubmissionLedger } from "./SubmissionLedger.ts"

export { HistoryEntry, HistoryRecord, ReconcileAnswerRecord } from "./internal/history/model.ts"
export type { FeedEntry, FeedPage, HistoryEntryKind, HistoryPage } from "./internal/history/model.ts"

/** The `_tag` of a canonical record's entry: `SubmissionAccepted`, `StepCompleted`, … */
export type HistoryEntryTag = HistoryEntry["_tag"]

/** The entry of one kind, e.g. `HistoryEntryOf<"SubmissionSettled">` with its `outcome` and `output`. */
export type HistoryEntryOf<Tag extends HistoryEntryTag> = Extract<HistoryEntry, { readonly _tag: Tag }>

/** The canonical history of the Threads of one physical Object. */
export class ThreadHistory extends Context.Service<
  ThreadHistory,
  {
    /** Appends one record after checking the fence, atomically with the check. */
    readonly append: (
      submissionId: SubmissionId,
      entry: HistoryEntry,
      fence: AppendFence,
      now: number,
    ) => Effect.Effect<HistoryRecord, SubmissionNotFound | DurableWorkerFailure>
    /**
     * Appends consecutive records of one Submission after checking the fence, atomically with
     * the check; they are stored together, which bills one row for all of them.
     */
    readonly appendAll: (
      submissionId: SubmissionId,
      entries: ReadonlyArray<HistoryEntry>,
      fence: AppendFence,
      now: number,
    ) => Effect.Effect<ReadonlyArray<HistoryRecord>, SubmissionNotFound | DurableWorkerFailure>
    /** All records of one Submission, oldest first. */
    readonly forSubmission: (
      submissionId: SubmissionId,
    ) => Effect.Effect<ReadonlyArray<HistoryRecord>, ThreadStoreError>
    /**
     * One Submission's records with `sequence > after`, oldest first, and the sequence of its
     * newest record (0 without records): a follower's read, which reads and decodes only the
     * records after `after` (and the one stored batch holding its record at `after`), not the
     * whole journal.
     */
    readonly forSubmissionAfter: (
      submissionId: SubmissionId,
      after: number,
    ) => Effect.Effect<
      { readonly records: ReadonlyArray<HistoryRecord>; readonly lastSequence: number },
      ThreadStoreError
    >
    /**
     * The name of the event recorded for the Submission under `eventId` (its first
     * `EventReceived` record of that id), if one is: a read of the Submission's index of event
     * ids, whose cost does not grow with its journal. None once retention removed the
     * Submission.
     */
    readonly eventReceived: (
      submissionId: SubmissionId,
      eventId: string,
    ) => Effect.Effect<Option.Option<string>, ThreadStoreError>
    /** A page of one Thread's records with `sequence > after`. */
    readonly page: (
      threadId: ThreadId,
      options: { readonly after?: number; readonly limit: number },
    ) => Effect.Effect<HistoryPage, ThreadStoreError>
    /**
     * Records of every Thread of this Object committed after feed position `after`, in commit
     * order: the cursor of outboxes and projections that follow the canonical history.
     *
     * `limit` bounds the records the page covers. With `kinds` the page holds only records of
     * those kinds (the others are passed over without being decoded, so a hook that follows
     * settlements does not pay for every step), and may hold fewer than `limit`, even none;
     * `last` is the position of the last record covered either way, the cursor to continue
     * from. An empty `kinds` or an unknown kind is refused.
     */
    readonly feed: (options: {
      readonly after: number
      readonly limit: number
      readonly kinds?: ReadonlyArray<HistoryEntryKind> | undefined
    }) => Effect.Effect<FeedPage, ThreadStoreError>
    /** The position of the newest record (0 when empty); O(1). */
    readonly feedEnd: Effect.Effect<number, ThreadStoreError>
  }
>()("@effect-agent/platform-cloudflare/ThreadHistory") {
  /**
   * The history on Durable Object SQLite; runs its migrations when built. Each append publishes
   * its Submission to the `ProgressHub` of its context, if one is provided.
   */
  static readonly layer: Layer.Layer<ThreadHistory, ThreadStoreError, SqlClient | SubmissionLedger> =
    Layer.effect(this, Effect.flatMap(makeSqlHistory, publishingHistory))
  /**
   * A faithful in-memory history; needs the in-memory ledger, whose store it shares. Publishes
   * like the SQLite one.
   */
  static readonly layerMemory: Layer.Layer<ThreadHistory, ThreadStoreError, SubmissionLedger> = Layer.effect(
    this,
    Effect.flatMap(makeMemoryHistory, publishingHistory),
  )
}

/** The SQLite ledger and history over one `SqlClient`. */
export const layerWithLedger: Layer.Layer<
  ThreadHistory | SubmissionLedger,
  ThreadStoreError | LedgerError,
  SqlClient
> = ThreadHistory.layer.pipe(Layer.provideMerge(SubmissionLedger.layer))

/** The in-memory ledger and history over one shared store. */
export const layerMemoryWithLedger: Layer.Layer<ThreadHistory | SubmissionLedger, ThreadStoreError> =
  ThreadHistory.layerMemory.pipe(Layer.provideMerge(SubmissionLedger.layerMemory))
