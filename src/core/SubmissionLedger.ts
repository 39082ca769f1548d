/**
 * The Submission Ledger: admission, FIFO lanes, Claims and fencing for the Threads of one
 * physical Object.
 *
 * The ledger is the control plane; the canonical history (`ThreadHistory`) is the evidence.
 * Every write that an owner makes is fenced by the Submission's producer epoch and the
 * Attempt's ownership token; recovery writes are fenced by the epoch and the absence of a
 * live lease. The epoch only grows: each Claim and each forced release advances it.
 *
 * Timed waits (a sleep, a retry's backoff, a timeout, a delayed admission) are parked rows with a
 * due time: `parkTimed` starts one, `nextDue` finds the rows that are due in due order (an
 * index on due time: reads follow the rows due, never the rows waiting), and `claimDue` claims
 * one in place, so its lane stays parked behind it until it settles or parks again.
 *
 * Schedules are rows beside the Submissions (`ScheduleMethods`): a schedule's occurrence is
 * admitted in the transaction that advances it, so a crash or a repeated pass never admits an
 * occurrence twice.
 */
import { Context, Effect, Layer } from "effect"
import type { Option, Stream } from "effect"
import type { IdempotencyKey, SubmissionId, ThreadId } from "./Identifiers.ts"
import type { HistoryEntry } from "./internal/history/model.ts"
import type {
  Admission,
  AdmissionCheck,
  AppendFence,
  AdmissionRefused,
  AdmissionRequest,
  Claim,
  ClaimGrant,
  Fence,
  FenceFailure,
  DueCursor,
  IdempotencyConflict,
  InputFence,
  InvalidTransition,
  LedgerError,
  ParkCheck,
  Settlement,
  SubmissionNotFound,
  SubmissionSnapshot,
  UnownedFence,
  WaitRecord,
} from "./internal/ledger/model.ts"
import type { RetentionCandidate, RetentionItem } from "./internal/ledger/retention.ts"
import type { EarlyEvent, EarlyEventRefused, EarlyEvents, EarlyKeep } from "./internal/ledger/early.ts"
import type { LaneCounts, LaneQuery, LaneQueryPage } from "./internal/ledger/pages.ts"
import type { ScheduleMethods } from "./internal/schedule/methods.ts"
import { makeMemoryLedger } from "./internal/ledger/memory.ts"
import { makeSqlLedger } from "./internal/ledger/sql.ts"
import { attachStore, memoryStoreOf } from "./internal/ledger/memoryStore.ts"
import { publishingLedger } from "./internal/progress/publishing.ts"
import type { SqlClient } from "effect/sql/SqlClient"

export {
  AdmissionRefused,
  Claim,
  FenceRejected,
  IdempotencyConflict,
  InvalidTransition,
  LEDGER_LIMIT_DEFAULTS,
  LedgerError,
  LedgerLimits,
  Ownership,
  OwnershipLost,
  ScheduleOccurrence,
  Settlement,
  SettlementOutcome,
  SubmissionLedgerLimits,
  SubmissionLedgerRetention,
  SubmissionNotFound,
  SubmissionSnapshot,
  SubmissionState,
  WaitRecord,
} from "./internal/ledger/model.ts"
export type { RetentionCandidate, RetentionItem } from "./internal/ledger/retention.ts"
export {
  EarlyEventRefusalReason,
  EarlyEventRefused,
  EarlyEvents,
  EarlyKey,
  MAX_EARLY_BYTES,
  MAX_EARLY_EVENTS,
} from "./internal/ledger/early.ts"
export type { EarlyEvent, EarlyKeep } from "./internal/ledger/early.ts"
export { COUNT_CAP, PAGE_WINDOW } from "./internal/ledger/pages.ts"
export {
  MissedPolicy,
  ScheduleId,
  ScheduleInfo,
  ScheduleRefusal,
  ScheduleSpec,
} from "./internal/schedule/model.ts"
export type { ScheduleAdvance, ScheduleAdvanced } from "./internal/schedule/model.ts"
export type { ScheduleMethods } from "./internal/schedule/methods.ts"
export type { LaneCounts, LaneFilter, LaneQuery, LaneQueryPage, LaneWalk } from "./internal/ledger/pages.ts"
export type {
  Admission,
  AdmissionCheck,
  AdmissionRequest,
  AppendFence,
  ClaimGrant,
  DueCursor,
  Fence,
  FenceFailure,
  InputFence,
  ParkCheck,
  UnownedFence,
} from "./internal/ledger/model.ts"

/**
 * A park into a timed wait (`parkTimed`): the row is `waiting`, parked, until `dueAt`, and
 * `wait` says what for.
 */
export interface TimedPark {
  readonly wait: WaitRecord
  readonly dueAt: number
  /** When the park happens: the instant its records are appended at. */
  readonly now: number
  /** Records appended in the park's transaction (a failed attempt's record). */
  readonly entries?: ReadonlyArray<HistoryEntry>
  /**
   * What may have arrived before the park: when it is recorded, the row is left due at `now`
   * instead, so the due path serves it at once and its replay finds it.
   */
  readonly awaiting?: ParkCheck
}

/**
 * The ledger of one physical Object. The two ends of a Submission's life are recorded in the
 * canonical history by the ledger itself, in the transaction that changes the row: `admit`
 * appends `SubmissionAccepted`, `settle` appends `SubmissionSettled`, and a resolution passed
 * to `transition` is appended with the resumption.
 */
export class SubmissionLedger extends Context.Service<
  SubmissionLedger,
  ScheduleMethods & {
    /**
     * Admits a new Submission and records its acceptance, in one transaction: the row is
     * `ready` at once (a join of a host that still takes joins is `joining`; a child keeps its
     * parent link). Returns the original row for a used key. The Submission id is derived from
     * the Thread and the key.
     */
    readonly admit: (
      request: AdmissionRequest,
    ) => Effect.Effect<Admission, AdmissionRefused | IdempotencyConflict | LedgerError>
    /**
     * What `admit` would answer, without writing: the original row of a used key, a refusal
     * (a conflicting key, an input or lane over its limit), or `None` for a new Submission.
     * `admit` checks again in its transaction: a lane may fill in between.
     */
    readonly checkAdmission: (
      request: AdmissionCheck,
    ) => Effect.Effect<
      Option.Option<SubmissionSnapshot>,
      AdmissionRefused | IdempotencyConflict | LedgerError
    >
    /**
     * `admitted` → `ready` once the acceptance record is in the history; a no-op when `ready`.
     * Only rows admitted by an older release are ever `admitted`.
     */
    readonly markReady: (
      submissionId: SubmissionId,
      now: number,
    ) => Effect.Effect<SubmissionSnapshot, InvalidTransition | SubmissionNotFound | LedgerError>
    readonly lookup: (
      submissionId: SubmissionId,
    ) => Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError>
    /** The Submission admitted in a lane under an idempotency key. */
    readonly lookupByKey: (
      threadId: ThreadId,
      idempotencyKey: IdempotencyKey,
    ) => Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError>
    /**
     * Starts an incarnation of the Object over this storage: returns its id, which sorts after
     * the id of every incarnation that stamped a Claim before it began (and of every one begun
     * earlier through this ledger). Its Claims then expire for later incarnations only, so a
     * replaced incarnation still running cannot take them over. The id is stored with the
     * incarnation's first Claim: one that only answers reads writes nothing.
     */
    readonly beginIncarnation: Effect.Effect<string, LedgerError>
    /** The first nonterminal Submission of a lane. */
    readonly head: (threadId: ThreadId) => Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError>
    /** Nonterminal Submissions of one lane (admission limits). */
    readonly countNonterminal: (threadId: ThreadId) => Effect.Effect<number, LedgerError>
    /**
     * Claims the lane head when it is `ready`, or `running` with an expired lease (a Claim of
     * an earlier incarnation than the grant's is expired). Advances the producer epoch. `None`
     * when the head is absent, waiting, owned by a live lease, or admitted with a `notBefore`
     * later than the grant's `now`.
     */
    readonly claim: (
      threadId: ThreadId,
      grant: ClaimGrant,
    ) => Effect.Effect<Option.Option<Claim>, LedgerError>
    /** Extends the owner's lease. */
    readonly renew: (claim: Claim, leaseExpiresAt: number) => Effect.Effect<Claim, FenceFailure>
    /**
     * Ends the owner's Attempt: `running` → `ready`; a row claimed in place by `claimDue` is
     * left `waiting` at its due time instead, so the due path serves it next.
     */
    readonly release: (claim: Claim) => Effect.Effect<void, FenceFailure>
    /**
     * Ends the owner's Attempt in a stable wait: `running` → `suspended` or `unknown`, with
     * `wait` recorded and no due time. A wait `awaiting` the child started at a call position
     * checks, in the same transaction, whether that child's settlement is recorded: then the
     * row is `ready` instead, since no other writer would resume it. Returns the state the row
     * was left in.
     */
    readonly park: (
      claim: Claim,
      state: "suspended" | "unknown",
      awaiting?: ParkCheck,
      wait?: WaitRecord,
    ) => Effect.Effect<"ready" | "suspended" | "unknown", FenceFailure>
    /**
     * Parks a row in a timed wait: `waiting` until `park.dueAt`, its lane parked behind it, with
     * `park.wait` recorded and `park.recorded` appended in the same transaction. An owner parks
     * its `running` row; a recovery fence parks a `running` row whose lease is not live
     * (advancing the epoch), an `unknown` row, or a `waiting` one again. A second park of a row
     * that was claimed in place keeps its lane's parked entry.
     */
    readonly parkTimed: (
      fence: Fence,
      park: TimedPark,
    ) => Effect.Effect<SubmissionSnapshot, FenceFailure | InvalidTransition>
    /**
     * Claims a due row in place: `waiting` with `dueAt <= grant.now`, or `running` whose Claim
     * is expired (taken over; its due time becomes `grant.now`, so a row whose Attempts keep
     * dying goes behind the rows due before it). The row stays parked and keeps its due time, so
     * a crashed Attempt is found again by `nextDue`. Advances the producer epoch. `None` when
     * the row is absent, not due, or held by a live lease.
     */
    readonly claimDue: (
      submissionId: SubmissionId,
      grant: ClaimGrant,
    ) => Effect.Effect<Option.Option<Claim>, LedgerError>
    /**
     * Ends a parked wait early (an event arrived, a workflow was resumed): a `suspended` or
     * `waiting` row at the fence's epoch and state becomes `waiting`, due at `dueAt`, with
     * `recorded` appended in the same transaction. A row that moved fails the fence.
     */
    readonly wake: (
      fence: InputFence,
      dueAt: number,
      recorded?: { readonly entries: ReadonlyArray<HistoryEntry>; readonly now: number },
    ) => Effect.Effect<SubmissionSnapshot, FenceFailure | InvalidTransition>
    /**
     * Parks an open lane head admitted with a `notBefore` later than the fence's `now`: it
     * becomes `waiting` until then. A repeat on the waiting row is a no-op; a row that is not
     * its lane's open head, or is already due, is refused.
     */
    readonly deferHead: (
      fence: UnownedFence,
    ) => Effect.Effect<SubmissionSnapshot, FenceFailure | InvalidTransition>
    /**
     * Up to `limit` parked rows due at `now` (`waiting`, or `running` when claimed in place), in
     * due order (`dueAt`, then Submission id), after `after` when given. Reads the rows it
     * returns, never the rows that are not due.
     */
    readonly nextDue: (
      now: number,
      options: { readonly limit: number; readonly after?: DueCursor },
    ) => Effect.Effect<ReadonlyArray<SubmissionSnapshot>, LedgerError>
    /**
     * The first `limit` parked rows with a due time, due or not, in due order: what the alarm
     * must cover. Runs no statement while this ledger knows it holds no timed wait.
     */
    readonly earliestDue: (limit: number) => Effect.Effect<ReadonlyArray<SubmissionSnapshot>, LedgerError>
    /**
     * Recovery transitions of an unowned row: expired-lease release (`running` → `ready` or
     * `unknown`, clears the ownership and advances the epoch), `ready` → `unknown` marking,
     * resumption of a resolved wait (`suspended`/`waiting`/`unknown` → `ready`, clearing its due
     * time) and readiness repair
     * (`admitted` → `ready`). Asking for the current state is a no-op. With `recorded`, the
     * records (a resolution) are appended in the same transaction, and the row must change.
     */
    readonly transition: (
      fence: Fence,
      to: "ready" | "unknown",
      recorded?: { readonly entries: ReadonlyArray<HistoryEntry>; readonly now: number },
    ) => Effect.Effect<SubmissionSnapshot, FenceFailure | InvalidTransition>
    /** `joining` → `joined` once the host read it; a repeat is a no-op. */
    readonly markJoined: (
      submissionId: SubmissionId,
    ) => Effect.Effect<SubmissionSnapshot, InvalidTransition | SubmissionNotFound | LedgerError>
    /** `joining` → `ready`: its host ended first, so it runs as ordinary input; a repeat is a no-op. */
    readonly revertJoining: (
      submissionId: SubmissionId,
      now: number,
    ) => Effect.Effect<SubmissionSnapshot, InvalidTransition | SubmissionNotFound | LedgerError>
    /** The `joining` and `joined` Submissions of `host` (in its lane), in queue order. */
    readonly joinsOf: (
      threadId: ThreadId,
      host: SubmissionId,
    ) => Effect.Effect<ReadonlyArray<SubmissionSnapshot>, LedgerError>
    /** Records an accepted abort intent; idempotent, and a settled row is returned unchanged. */
    readonly requestAbort: (
      submissionId: SubmissionId,
    ) => Effect.Effect<SubmissionSnapshot, SubmissionNotFound | LedgerError>
    /**
     * Reserves the settlement: any other nonterminal state → `terminalizing`, clearing the
     * ownership. Repeating the identical settlement at the same epoch returns the row; a
     * different one fails with `InvalidTransition`.
     */
    readonly reserveSettlement: (
      fence: Fence,
      settlement: Settlement,
    ) => Effect.Effect<SubmissionSnapshot, FenceFailure | InvalidTransition>
    /**
     * Settles in one transaction: any nonterminal state but `terminalizing` → `settled`,
     * clearing the ownership, and appends `preceding` then `SubmissionSettled` (recorded at the
     * settlement's time). Repeating the identical settlement returns the row; any other is
     * refused with `InvalidTransition`.
     */
    readonly settle: (
      fence: Fence,
      settlement: Settlement,
      preceding?: ReadonlyArray<HistoryEntry>,
    ) => Effect.Effect<SubmissionSnapshot, FenceFailure | InvalidTransition>
    /** `terminalizing` → `settled`, once the settlement record is in the history; a no-op when settled. */
    readonly finalizeSettlement: (
      submissionId: SubmissionId,
    ) => Effect.Effect<SubmissionSnapshot, InvalidTransition | SubmissionNotFound | LedgerError>
    /** Checks a fence without writing (history appends run it in their transaction). */
    readonly checkFence: (fence: AppendFence) => Effect.Effect<SubmissionSnapshot, FenceFailure>
    /** Every nonterminal Submission of this Object, ordered by `(threadId, queueSequence)`. */
    readonly scanNonterminal: Stream.Stream<SubmissionSnapshot, LedgerError>
    /**
     * The nonterminal Submissions recovery must look at: an accepted abort, and rows an older
     * release left mid-admission or mid-settlement (`admitted`, `terminalizing`), and joins
     * (`joining`, `joined`), which their host's settlement finishes in a later write. Same
     * order as the scan; queued input, running Attempts and waits nothing resolved add
     * nothing to it.
     */
    readonly scanRecoveryCandidates: Stream.Stream<SubmissionSnapshot, LedgerError>
    /**
     * The head of every lane with work to run, in lane order: a parked lane (its head
     * `suspended`, `unknown`, `waiting`, or claimed in place by the due path) is left out. Reads
     * one row per lane. An open head admitted with a later `notBefore` is included: the pass
     * parks it with `deferHead`.
     */
    readonly laneHeads: Effect.Effect<ReadonlyArray<SubmissionSnapshot>, LedgerError>
    /**
     * The head of the first lane strictly after `after` in lane order (UTF-16 order of the
     * ThreadId), or of the first lane when `after` is undefined, skipping parked lanes (as
     * `laneHeads`); a few indexed rows, never the parked Submissions.
     */
    readonly nextLaneHead: (
      after: ThreadId | undefined,
    ) => Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError>
    /** The number of nonterminal Submissions of this Object, without reading them. */
    readonly countAllNonterminal: Effect.Effect<number, LedgerError>
    /**
     * Every Submission of this Object, settled ones included, in no particular order: reads
     * every row, for operator checks only.
     */
    readonly scanAll: Stream.Stream<SubmissionSnapshot, LedgerError>
    /** Up to `limit` Submissions of one lane with `queueSequence > after`, oldest first. */
    readonly lanePage: (
      threadId: ThreadId,
      options: { readonly after: number; readonly limit: number },
    ) => Effect.Effect<ReadonlyArray<SubmissionSnapshot>, LedgerError>
    /**
     * Every Thread with at least one Submission, settled or not, in the order SQLite stores their
     * ids (code point order: unlike lane order, an astral character sorts after U+E000–U+FFFF);
     * one seek per lane.
     */
    readonly threadIds: Effect.Effect<ReadonlyArray<ThreadId>, LedgerError>
    /**
     * The earliest instant retention counts a settled Submission's age from (its settlement
     * time, or when a pass last had to keep it); `None` when nothing is settled. One seek. While
     * retention is off (`SubmissionLedgerRetention`) a settlement is not dated, so neither this
     * nor `retentionCandidates` finds it until the ledger opens with retention on.
     */
    readonly retentionStart: Effect.Effect<Option.Option<number>, LedgerError>
    /**
     * Up to `limit` settled Submissions whose age counts from at or before `countedBefore`,
     * earliest first, each with its lane's tail.
     */
    readonly retentionCandidates: (options: {
      readonly countedBefore: number
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<RetentionCandidate>, LedgerError>
    /** Counts the age of these settled Submissions from `from` again (retention kept them). */
    readonly deferRetention: (
      submissionIds: ReadonlyArray<SubmissionId>,
      from: number,
    ) => Effect.Effect<void, LedgerError>
    /**
     * Removes settled Submissions, in one transaction: each ledger row, its history records, its
     * idempotency key and any event still kept under that key (another agent's). An item whose row is gone, not settled or admitted under another
     * receipt is skipped. Sequences, lane tails and feed positions continue past what is
     * removed. Returns the ids removed.
     */
    readonly removeSettled: (
      items: ReadonlyArray<RetentionItem>,
    ) => Effect.Effect<ReadonlyArray<SubmissionId>, LedgerError>
    /**
     * Keeps an event for the Submission not yet admitted under its key (a workflow's deferred
     * completed before its execution starts), in one transaction with the check: answers the
     * Submission when it is admitted (the caller sends the event to it as any event), else keeps
     * the event, once per event id under the key (a repeat answers `replayed`). The admission of
     * that key by the event's agent takes what was kept, in its own transaction, and records it
     * after its acceptance as `EventReceived` records. At most `MAX_EARLY_EVENTS` events and
     * `MAX_EARLY_BYTES` of payloads per Object (`EarlyEventRefused`).
     */
    readonly keepEarly: (event: EarlyEvent) => Effect.Effect<EarlyKeep, EarlyEventRefused | LedgerError>
    /** What the Object keeps for Submissions not yet admitted: totals, bounds, and each key. */
    readonly earlyEvents: Effect.Effect<EarlyEvents, LedgerError>
    /**
     * Removes every event kept under a key, whatever its agent: a Submission's `forget` before it
     * was admitted. `removeSettled` removes them with the Submission admitted under the key.
     */
    readonly forgetEarly: (
      threadId: ThreadId,
      idempotencyKey: IdempotencyKey,
    ) => Effect.Effect<void, LedgerError>
    /**
     * One page of a lane's Submissions for operators, filtered by state and agent: in queue order
     * when the filter names unsettled states only, newest first otherwise. It examines at most
     * `PAGE_WINDOW` positions, so a sparse filter answers a short page with a `next` to go on
     * from; the rows follow the cursor of the previous page of the same filter.
     */
    readonly queryLane: (threadId: ThreadId, query: LaneQuery) => Effect.Effect<LaneQueryPage, LedgerError>
    /** A lane's admissions and its unsettled rows, open and parked, each counted up to `COUNT_CAP`. */
    readonly laneCounts: (threadId: ThreadId) => Effect.Effect<LaneCounts, LedgerError>
    /** Up to `limit` Threads with Submissions after `after`, in the order of `threadIds`; one seek each. */
    readonly threadPage: (options: {
      readonly after?: ThreadId
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<ThreadId>, LedgerError>
  }
>()("@effect-agent/platform-cloudflare/SubmissionLedger") {
  /**
   * The ledger on Durable Object SQLite; runs its migrations when built. Each write publishes the
   * Submission it moves to the `ProgressHub` of its context, if one is provided.
   */
  static readonly layer: Layer.Layer<SubmissionLedger, LedgerError, SqlClient> = Layer.effect(
    this,
    Effect.flatMap(makeSqlLedger, publishingLedger),
  )
  /**
   * A faithful in-memory ledger with its own store; publishes like the SQLite one to the
   * `ProgressHub` of its context, if one is provided.
   */
  static readonly layerMemory: Layer.Layer<SubmissionLedger> = Layer.effect(
    this,
    Effect.flatMap(makeMemoryLedger, (ledger) =>
      Effect.map(publishingLedger(ledger), (published) => {
        // The in-memory history and outbox find the shared store through the service they get.
        const store = memoryStoreOf(ledger)
        if (store !== undefined) attachStore(published, store)
        return published
      }),
    ),
  )
}
