/**
 * The durable agent runtime: admission, recovery and bounded Attempts over the Submission
 * Ledger and the canonical history of one physical Object.
 *
 * It never touches the alarm slot: wake hints go through `WakeScheduler`, and the host's
 * maintenance pass decides when `runRecovery` and `processThreadHead` run.
 */
import { Context, Layer } from "effect"
import type { DateTime, Effect, Option } from "effect"
import {
  type AgentDefinition,
  AgentRegistry,
  type AnyAgentDefinition,
  type BindingDigestMismatch,
  type BindingUnavailable,
  type DurableBindingFailure,
} from "./AgentRegistration.ts"
import type { EventRefused } from "./AgentEvent.ts"
import type { EventDelivery, EventPreview, EventRequest } from "./internal/runtime/events/receiveEvent.ts"
import type { IdempotencyKey, SubmissionId, ThreadId } from "./Identifiers.ts"
import { makeRuntime } from "./internal/runtime/make.ts"
import type {
  ApprovalDecision,
  DurableWorkerFailure,
  HeadAttempt,
  HeadAttemptOptions,
  JoinRefused,
  NotPending,
  PreparedSubmission,
  Receipt,
  RecoveryReport,
  SettlementTimeout,
  SubmitFailure,
  SubmitRequest,
  ThreadStoreError,
  UnknownResolution,
} from "./internal/runtime/shared/model.ts"
import type { SubmissionInspection } from "./internal/runtime/recovery/inspect.ts"
import type { InvalidSchedule, ScheduleRequest } from "./internal/runtime/schedules/model.ts"
import type { PreparedSchedule } from "./internal/runtime/schedules/schedule.ts"
import type {
  AdmissionRefused,
  IdempotencyConflict,
  LedgerError,
  ScheduleId,
  ScheduleInfo,
  Settlement,
  SubmissionLedger,
  SubmissionNotFound,
} from "./SubmissionLedger.ts"
import type { ThreadHistory } from "./ThreadHistory.ts"
import type { MessageOutbox } from "./MessageOutbox.ts"
import type {
  DeliveryOutcome,
  OutboxMessage,
  ThreadMessage,
  ThreadMessageReplies,
} from "./internal/outbox/model.ts"
import type { RuntimeFailpoint } from "./RuntimeFailpoint.ts"
import type { WakeScheduler } from "./WakeScheduler.ts"

export {
  RecoveryDecision,
  RecoveryDisposition,
  RecoveryReport,
  Receipt,
  SubmitRequest,
  ApprovalDecision,
  UnknownResolution,
  ThreadStoreError,
  SettlementConflict,
  RunJournalError,
  NotPending,
  SettlementTimeout,
  JoinRefused,
} from "./internal/runtime/shared/model.ts"
export type {
  DurableWorkerFailure,
  HeadAttempt,
  HeadAttemptOptions,
  PreparedSubmission,
  SubmitFailure,
} from "./internal/runtime/shared/model.ts"
export type { EventDelivery, EventPreview, EventRequest } from "./internal/runtime/events/receiveEvent.ts"
export { RecoveryWorklist } from "./internal/runtime/recovery/recoveryExecute.ts"
export { InvalidSchedule, ScheduleRequest } from "./internal/runtime/schedules/model.ts"
export type { PreparedSchedule } from "./internal/runtime/schedules/schedule.ts"
export {
  OpenApproval,
  OpenRetry,
  OpenUncertainStep,
  ReconcileState,
  SubmissionInspection,
} from "./internal/runtime/recovery/inspect.ts"
export { RuntimeFailpoint } from "./RuntimeFailpoint.ts"

/** The durable agent runtime of one physical Object. */
export class DurableAgentRuntime extends Context.Service<
  DurableAgentRuntime,
  {
    /**
     * Everything `submit` checks, without writing: the agent is registered, the input decodes,
     * the ledger would admit it (a used key replays; an input or lane over its limit is
     * refused), and a `join` finds a lane head that takes it. A host refuses bad input with it
     * before it opens a mutation, then `admit`s.
     */
    readonly prepare: (
      request: SubmitRequest,
    ) => Effect.Effect<PreparedSubmission, AdmissionRefused | IdempotencyConflict | JoinRefused | LedgerError>
    /** Admits what `prepare` returned; the ledger checks its limits again as it writes. */
    readonly admit: (prepared: PreparedSubmission) => Effect.Effect<Receipt, SubmitFailure>
    /** Admits an encoded input for a registered agent; a used idempotency key replays its receipt. */
    readonly submit: (request: SubmitRequest) => Effect.Effect<Receipt, SubmitFailure>
    /** Admits a typed input for `agent`, which must be registered with the same digest. */
    readonly submitRegistered: <I, O>(
      agent: AgentDefinition<I, O>,
      request: {
        readonly threadId: ThreadId
        readonly idempotencyKey: IdempotencyKey
        readonly input: I
      },
    ) => Effect.Effect<Receipt, SubmitFailure>
    /**
     * Records an abort intent; the Submission settles `aborted` once. A Submission already
     * settled keeps its settlement (read it with `awaitSettlement`): the call changes nothing.
     */
    readonly abort: (
      submissionId: SubmissionId,
    ) => Effect.Effect<void, SubmissionNotFound | DurableWorkerFailure>
    /**
     * Decides the open approval request; with `step`, only the request at that call position
     * (any other is `NotPending`), so a decision sent twice never answers a later request.
     */
    readonly resolveApproval: (
      submissionId: SubmissionId,
      decision: ApprovalDecision,
      options?: { readonly step?: number },
    ) => Effect.Effect<void, SubmissionNotFound | NotPending | DurableWorkerFailure>
    /**
     * Resolves the open Unknown Outcome; with `step`, only the uncertain step at that call
     * position (any other is `NotPending`).
     */
    readonly resolveUnknown: (
      submissionId: SubmissionId,
      resolution: UnknownResolution,
      options?: { readonly step?: number },
    ) => Effect.Effect<void, SubmissionNotFound | NotPending | DurableWorkerFailure>
    /** Admin retry: revokes any Claim of a running Submission so the next pass reclaims it. */
    readonly retry: (
      submissionId: SubmissionId,
    ) => Effect.Effect<void, SubmissionNotFound | NotPending | DurableWorkerFailure>
    readonly awaitSettlement: (
      submissionId: SubmissionId,
      options?: { readonly timeoutMillis?: number },
    ) => Effect.Effect<Settlement, SubmissionNotFound | SettlementTimeout | LedgerError>
    /**
     * Classifies every nonterminal Submission and executes or defers its decision; with
     * `RecoveryWorklist` set to `candidates`, only those recovery can have to act on (an
     * accepted abort, work an older release left between writes).
     */
    readonly runRecovery: Effect.Effect<ReadonlyArray<RecoveryReport>, DurableWorkerFailure>
    /**
     * Receives a message from another Object's runtime (a child's admission, a child's
     * settlement, an abort for a child) and answers it; a repeated message (the same
     * `messageId`) changes nothing. Hosts run it inside the mutation gate.
     */
    readonly receive: <M extends ThreadMessage>(
      message: M,
      messageId: string,
    ) => Effect.Effect<ThreadMessageReplies[M["_tag"]], DurableWorkerFailure>
    /**
     * What `receiveEvent` would do now, without writing: a replay of a recorded `eventId`, or
     * a new record and whether it ends a wait. Refuses what `receiveEvent` refuses.
     */
    readonly previewEvent: (
      request: EventRequest,
    ) => Effect.Effect<
      EventPreview,
      EventRefused | SubmissionNotFound | DurableBindingFailure | DurableWorkerFailure
    >
    /**
     * Records an event sent to a Submission, once per `eventId` (a repeat answers `replayed`),
     * and wakes the Submission when it waits for the event's name. A declared event's payload
     * must decode with its Schema; any payload must fit `maxStoredValueBytes`; a settled or
     * joined Submission refuses it. With `mayWake: false`, an event that would end a wait is not
     * written (`WakeNeeded`): hosts pass it when they opened no generation for the call.
     */
    readonly receiveEvent: (
      request: EventRequest,
      options?: { readonly mayWake?: boolean },
    ) => Effect.Effect<
      EventDelivery,
      EventRefused | SubmissionNotFound | DurableBindingFailure | DurableWorkerFailure
    >
    /** Records how the delivery of one of this Object's messages ended, and acknowledges it. */
    readonly recordDelivery: (
      row: OutboxMessage,
      outcome: DeliveryOutcome,
    ) => Effect.Effect<void, DurableWorkerFailure>
    /**
     * Claims the lane head if claimable and runs one bounded Attempt; how it ended tells
     * whether the Submission moved forward (settled, parked in a stable wait, journaled).
     */
    readonly attemptThreadHead: (
      threadId: ThreadId,
      options: HeadAttemptOptions,
    ) => Effect.Effect<HeadAttempt, DurableWorkerFailure | BindingUnavailable | BindingDigestMismatch>
    /**
     * Claims a due Submission in place (a timed wait whose due time came, or a due row whose
     * Attempt died) and runs one bounded Attempt; `Unclaimed` when it is not due, or a live
     * Attempt holds it. Its lane stays parked behind it while it runs.
     */
    readonly attemptDueHead: (
      submissionId: SubmissionId,
      options: HeadAttemptOptions,
    ) => Effect.Effect<HeadAttempt, DurableWorkerFailure | BindingUnavailable | BindingDigestMismatch>
    /** Claims the lane head if claimable and runs one bounded Attempt; `Some` iff it settled. */
    readonly processThreadHead: (
      threadId: ThreadId,
      options: { readonly yieldAfter: DateTime.Utc },
    ) => Effect.Effect<
      Option.Option<Settlement>,
      DurableWorkerFailure | BindingUnavailable | BindingDigestMismatch
    >
    /**
     * One Submission as recovery sees it now: its row, the decision recovery would make, and
     * the open approval or uncertain step behind it. Reads only.
     */
    readonly inspect: (
      submissionId: SubmissionId,
    ) => Effect.Effect<Option.Option<SubmissionInspection>, LedgerError | ThreadStoreError>
    /** The decision recovery would make for every nonterminal Submission now; executes nothing. */
    readonly previewRecovery: Effect.Effect<ReadonlyArray<RecoveryReport>, LedgerError | ThreadStoreError>
    /**
     * Everything `schedule` checks, without writing: exactly one of `cron` and `everyMillis`, a
     * cron expression that parses and occurs (in a time zone `Intl` knows) or an interval from 1
     * second to 1 year, a registered agent and an input its Schema decodes. Computes the first
     * occurrence, which the host's mutation makes its alarm cover.
     */
    readonly prepareSchedule: (
      request: ScheduleRequest,
    ) => Effect.Effect<PreparedSchedule, InvalidSchedule | AdmissionRefused | LedgerError>
    /** Stores a prepared schedule, replacing one of the same id; the same definition is kept as it is. */
    readonly schedule: (prepared: PreparedSchedule) => Effect.Effect<ScheduleInfo, DurableWorkerFailure>
    /** Removes a schedule; occurrences already admitted run on. */
    readonly unschedule: (
      scheduleId: ScheduleId,
    ) => Effect.Effect<{ readonly removed: boolean }, DurableWorkerFailure>
    /** Every schedule of this Object, by id. */
    readonly schedules: Effect.Effect<ReadonlyArray<ScheduleInfo>, LedgerError>
    /**
     * Admits the due occurrence of up to `limit` schedules, each with the schedule's advance in
     * one transaction; a refused one is recorded on its schedule and skipped. Returns how many
     * Submissions it admitted. The host's maintenance pass runs it.
     */
    readonly admitDueOccurrences: (limit: number) => Effect.Effect<number, DurableWorkerFailure>
  }
>()("@effect-agent/platform-cloudflare/DurableAgentRuntime") {
  /** The runtime over the Object's ledger, history and registered agents. */
  static readonly layer: Layer.Layer<
    DurableAgentRuntime,
    LedgerError,
    SubmissionLedger | ThreadHistory | MessageOutbox | AgentRegistry | RuntimeFailpoint | WakeScheduler
  > = Layer.effect(this, makeRuntime)

  /** The runtime with its own registry of `registrations`. */
  static readonly layerWithBindings = (
    registrations: ReadonlyArray<AnyAgentDefinition>,
  ): Layer.Layer<
    DurableAgentRuntime,
    LedgerError,
    SubmissionLedger | ThreadHistory | MessageOutbox | RuntimeFailpoint | WakeScheduler
  > => DurableAgentRuntime.layer.pipe(Layer.provide(AgentRegistry.layer(registrations)))
}
