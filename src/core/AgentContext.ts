/**
 * The durable building blocks an agent program receives for one Submission.
 *
 * Every call is journaled in the Thread's canonical history at its 0-based call position.
 * After a crash, a cooperative yield or a resumption, the program runs again from the start
 * and each journaled call returns its recorded outcome instead of running again; the first
 * call without a record runs live. A program must therefore make the same calls in the same
 * order, one at a time (a different step name at a recorded position fails the Attempt with
 * `RunJournalError`).
 *
 * When the Attempt must stop (a yield, a suspension, an accepted abort, an Unknown Outcome or
 * a storage failure), the call interrupts the program; the runtime then ends the Attempt and
 * ignores whatever the program does afterwards.
 */
import type { Duration, Effect, Schedule, Schema } from "effect"
import type { AgentEvent, WaitForEventFunction } from "./AgentEvent.ts"
import type { AgentDefinition, AgentFailure, JsonCodec } from "./AgentRegistration.ts"
import type { ChildRefusalReason } from "./internal/outbox/model.ts"
import type { ApprovalDecision, ApprovalTimeout } from "./internal/runtime/shared/model.ts"
import type { AttemptId, SubmissionId, ThreadId } from "./Identifiers.ts"

export { ChildRefusalReason } from "./internal/outbox/model.ts"
export { ApprovalDecision, ApprovalTimeout } from "./internal/runtime/shared/model.ts"
export { EventPayloadInvalid, EventTimeout } from "./AgentEvent.ts"
export type { WaitForEventFunction, WaitOptions } from "./AgentEvent.ts"

/** The longest an approval request may wait, in milliseconds (one year). */
export const MAX_APPROVAL_TIMEOUT_MILLIS = 31_536_000_000

/**
 * An approval request: without options it waits until `resolveApproval`; with `timeoutMillis`
 * (1 to one year from the moment the request first ran) it fails with `ApprovalTimeout` once
 * that passes without a decision, and the request is closed (a later decision is refused).
 */
export interface RequestApprovalFunction {
  (payload: Schema.Json): Effect.Effect<ApprovalDecision>
  (
    payload: Schema.Json,
    options: { readonly timeoutMillis?: number },
  ): Effect.Effect<ApprovalDecision, ApprovalTimeout>
}

/** How a step's result is stored: a Schema whose encoded side is JSON. */
export interface StepOptions<A> {
  readonly result: JsonCodec<A>
}

/**
 * The wait before a retry: `baseMillis` before the second attempt, multiplied by `factor` for
 * each further one, at most `capMillis`, each scaled by a random factor in
 * `[1 - jitter, 1 + jitter]` (drawn once, journaled, and the same for every replay).
 */
export interface Backoff {
  /** The first wait, 0..`capMillis`. */
  readonly baseMillis: number
  /** Default 2, at least 1. */
  readonly factor?: number
  /** Default 300,000 (5 minutes); no wait is longer. */
  readonly capMillis?: number
  /** 0..1, default 0.2. */
  readonly jitter?: number
}

/** The defaults of `Backoff` and of a retry policy's attempts. */
export const BACKOFF_DEFAULTS = { baseMillis: 1_000, factor: 2, capMillis: 300_000, jitter: 0.2 } as const

/**
 * How a step is retried after a typed failure. `attempts` counts the first run (1: no retry),
 * at most 100; `schedule` decides each wait from the failures so far (an Effect `Schedule`,
 * stepped again over the recorded failures on replay; it retries until it ends). A failure made
 * with `AgentFailure.nonRetryable`, or one `retryable` answers false for, is not retried.
 */
export type RetryPolicy =
  | {
      readonly attempts: number
      readonly backoff?: Backoff
      readonly retryable?: (error: AgentFailure) => boolean
    }
  | {
      readonly schedule: Schedule.Schedule<unknown, AgentFailure>
      readonly retryable?: (error: AgentFailure) => boolean
    }

/** The longest a step attempt may take: an attempt must fit in one alarm event. */
export const STEP_TIMEOUT_MAX_MILLIS = 600_000

/** How a step runs: its retries and the limit of one attempt. */
export interface StepRunOptions {
  /**
   * Retries after a typed failure, each attempt journaled (`StepAttemptFailed` with its error
   * and the next attempt's due time) and each wait a durable timer: an eviction during a
   * backoff resumes at the right time. The last failure fails the step with its error.
   */
  readonly retry?: RetryPolicy
  /**
   * One attempt's limit, 1..600,000 ms; an attempt that runs longer is interrupted and counts
   * as a failed attempt.
   */
  readonly timeoutMillis?: number
}

/**
 * A journaled step; without a result Schema its result must be JSON itself. Invalid options
 * (attempts, backoff or timeout out of range) fail the step, naming the option.
 */
export interface StepFunction {
  <A extends Schema.Json>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options?: StepRunOptions,
  ): Effect.Effect<A, AgentFailure>
  <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options: StepRunOptions & StepOptions<A>,
  ): Effect.Effect<A, AgentFailure>
}

/**
 * The Thread a child runs in: a Thread of the Object reached by `objectName` (`getByName`) in
 * the namespace bound as `namespace`, by default this Object's own namespace.
 */
export interface ChildThread {
  readonly objectName: string
  readonly threadId: string
  readonly namespace?: string
}

/** A started child, returned by `startChild` (and by its replay); pass it to `awaitChild`. */
export interface ChildHandle<O> {
  /** The call position of the `startChild` that started it. */
  readonly step: number
  readonly agent: AgentDefinition<unknown, O>
  readonly thread: ChildThread
}

/** How a child ended: a value the parent handles, never a failure of the parent. */
export type ChildSettlement<O> =
  | { readonly outcome: "completed"; readonly output: O; readonly submissionId: SubmissionId }
  | {
      readonly outcome: "failed"
      readonly error: string
      /** Absent when the child's Thread refused the admission, so no child ran. */
      readonly submissionId?: SubmissionId
      readonly refused?: ChildRefusalReason
    }
  | { readonly outcome: "aborted"; readonly submissionId: SubmissionId }

/**
 * What a reconcile found out about an uncertain step whose outcome is unknown: the effect
 * happened (with the step's result), it did not happen (the step then runs its effect again),
 * or it cannot tell (an operator decides, as without a reconcile).
 */
export type ReconcileAnswer<A> =
  | { readonly _tag: "Happened"; readonly value: A }
  | { readonly _tag: "NotHappened" }
  | { readonly _tag: "CannotTell"; readonly reason: string }

/** Constructors of `ReconcileAnswer`. */
export const Reconcile = {
  happened: <A>(value: A): ReconcileAnswer<A> => ({ _tag: "Happened", value }),
  notHappened: { _tag: "NotHappened" } as ReconcileAnswer<never>,
  cannotTell: (reason: string): ReconcileAnswer<never> => ({ _tag: "CannotTell", reason }),
} as const

/** Defaults of an uncertain step's reconcile. */
export const RECONCILE_DEFAULTS = { attempts: 5, timeoutMillis: 30_000 } as const

/** How an uncertain step's outcome can be found out after a crash. */
export interface ReconcileOptions<A> {
  /**
   * Asks the outside world whether the effect happened (a payment provider looked up by the
   * idempotency key the effect sent). Recovery has it run, journaled, by the next Attempt when
   * the outcome is unknown; a failure or a timeout is retried at later alarms (1 s doubling to
   * 60 s) until `reconcileAttempts` reconciles have started, then an operator decides. Answer
   * `NotHappened` only when the effect cannot still take place later.
   */
  readonly reconcile?: Effect.Effect<ReconcileAnswer<A>, AgentFailure>
  /**
   * Reconciles recovery may start for one run of the step (default 5, at least 1; a value that
   * is not a number of at least 1 fails the Submission, naming the step).
   */
  readonly reconcileAttempts?: number
  /** How long one reconcile may run (default 30 s, at least 1 ms); a timeout counts as a failure. */
  readonly reconcileTimeoutMillis?: number
}

/** An uncertain step; without a result Schema its result must be JSON itself. */
export interface UncertainStepFunction {
  <A extends Schema.Json>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options?: ReconcileOptions<A>,
  ): Effect.Effect<A, AgentFailure>
  <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options: StepOptions<A> & ReconcileOptions<A>,
  ): Effect.Effect<A, AgentFailure>
}

/**
 * The context of one Attempt of one Submission whose agent takes input `I` and declares the
 * events `Ev`.
 */
export interface AgentContext<I = unknown, Ev extends AgentEvent.Any = never> {
  readonly submissionId: SubmissionId
  readonly threadId: ThreadId
  readonly attemptId: AttemptId
  /**
   * Runs `effect` and journals its encoded result (`StepCompleted`) or its failure
   * (`StepFailed`); a replay returns the recorded outcome. At least once per step, exactly
   * one recorded result. With `retry`, a typed failure is journaled and retried after a
   * durable backoff; with `timeoutMillis`, an attempt that runs longer fails.
   */
  readonly step: StepFunction
  /**
   * Waits `duration` from the moment the call first ran (its due time is journaled with the
   * wait), durably: the Submission parks (its lane waits behind it), no fiber sleeps, and an
   * alarm at the due time resumes it, after eviction, redeploy or a crash too. It returns no
   * earlier than the due time by the Object's clock, and once. A duration of 0 or less
   * returns at once; one that is not finite (`NaN`, `Duration.infinity`) is a defect, which
   * fails the Submission. A due time after 2189 (the latest alarm Cloudflare accepts) waits
   * with the alarm at 2189-01-01. `name` labels the wait in the journal and the operator views.
   */
  readonly sleep: (name: string, duration: Duration.Input) => Effect.Effect<void>
  /** Like `sleep`, until `epochMillis` by the Object's clock; an instant already past returns at once. */
  readonly sleepUntil: (name: string, epochMillis: number) => Effect.Effect<void>
  /**
   * An external effect that must not run twice: `UncertainStepStarted` is journaled before it
   * runs. If the Attempt dies before its result is journaled, recovery records an Unknown
   * Outcome and the lane waits for `resolveUnknown`, whose resolution is then this call's
   * result (`Failed` fails it with `AgentFailure`). The effect never runs again, unless a
   * `reconcile` finds it did not happen. With a `reconcile`, recovery settles the outcome
   * itself when the reconcile can tell.
   */
  readonly uncertainStep: UncertainStepFunction
  /**
   * Journals `ApprovalRequested` and suspends the Submission until `resolveApproval`. An
   * approval resumes the program with the decision; a denial settles the Submission `failed`.
   * With `timeoutMillis`, no decision by then fails the call with `ApprovalTimeout`. Its record
   * keeps the payload: one over `maxStoredValueBytes` (or not JSON) is a defect naming its size.
   */
  readonly requestApproval: RequestApprovalFunction
  /**
   * Waits for an event sent to this Submission (`ThreadClient.sendEvent`) and returns its
   * payload: `waitForEvent(event, options?)` for an event the agent declares (decoded when it
   * was sent), or `waitForEvent(name, schema, options?)` for any name, decoded here (a payload
   * that does not decode is consumed and fails the wait with `EventPayloadInvalid`). Events
   * that arrived before the wait are kept, and each wait takes the earliest one of its name
   * not taken yet; with none, the Submission parks (no fiber waits) until one arrives or
   * `timeoutMillis` passes (`EventTimeout`, final: a later event stays for the next wait).
   */
  readonly waitForEvent: WaitForEventFunction<Ev>
  /**
   * Starts a child Submission of `agent` in another Thread (usually another Object): the
   * intent is journaled together with the child's admission message, which is delivered at
   * least once and admitted exactly once. Several children may run at once. An abort of this
   * Submission aborts its children that have not settled; children still running when it
   * completes or fails keep running. Fails only when the call itself is invalid (no address
   * of this Object, an input the agent cannot encode or over the 1,934,464 bytes no Thread
   * admits, a malformed Thread); a smaller input over the child Thread's own limit is refused
   * there (`refused: "input-bytes"`, as `awaitChild`'s value).
   */
  readonly startChild: <CI, CO>(options: {
    readonly agent: AgentDefinition<CI, CO>
    readonly input: CI
    readonly thread: ChildThread
    /**
     * The child's idempotency key in its Thread (by default one of this call's own). A child
     * Thread already holding a Submission of that key started by another parent, or by a
     * caller outside any parent, refuses the admission (`idempotency-conflict`).
     */
    readonly idempotencyKey?: string
    /**
     * With `idempotencyKey`: a Submission of that key another caller started that has already
     * settled is not refused but joined, its settlement this child's. One still running is
     * refused as without it.
     */
    readonly joinSettled?: boolean
  }) => Effect.Effect<ChildHandle<CO>, AgentFailure>
  /**
   * The settlement of a started child. If it is not recorded yet the Submission waits for it in
   * memory up to `childAwaitMillis`, then parks in a stable wait (no alarm keeps the Object
   * awake) until the child's settlement arrives. It takes no deadline: an `Effect.timeout`
   * around it races only the in-memory wait (one shorter than `childAwaitMillis` may fire, a
   * longer one never does once the Submission parks), so bound a child by its own timeouts or
   * abort it (the parent then gets `aborted`).
   */
  readonly awaitChild: <CO>(handle: ChildHandle<CO>) => Effect.Effect<ChildSettlement<CO>, AgentFailure>
  /**
   * Reads the follow-up inputs that joined this Submission since the last read (submitted
   * with `mode: "join"` while it ran), oldest first; journaled, so a replay reads the same.
   * One read takes the oldest inputs that together fit `limits.maxInputBytes` (at least one),
   * since its record is one SQLite row; the next read takes the rest. Each joined Submission
   * settles with this one. Inputs not read before this Submission settles run as ordinary
   * Submissions. Fails for an agent that takes no joined input.
   */
  readonly receiveJoined: Effect.Effect<ReadonlyArray<I>, AgentFailure>
}
