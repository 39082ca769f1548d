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
import type { Effect, Schema } from "effect"
import type { AgentFailure, JsonCodec } from "./AgentRegistration.ts"
import type { ApprovalDecision } from "./internal/runtime/model.ts"
import type { AttemptId, SubmissionId, ThreadId } from "./Identifiers.ts"

/** How a step's result is stored: a Schema whose encoded side is JSON. */
export interface StepOptions<A> {
  readonly result: JsonCodec<A>
}

/** A journaled step; without options its result must be JSON itself. */
export interface StepFunction {
  <A extends Schema.Json>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
  ): Effect.Effect<A, AgentFailure>
  <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options: StepOptions<A>,
  ): Effect.Effect<A, AgentFailure>
}

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
export const reconcileDefaults = { attempts: 5, timeoutMillis: 30_000 } as const

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
  /** Reconciles recovery may start for one run of the step (default 5, at least 1). */
  readonly reconcileAttempts?: number
  /** How long one reconcile may run (default 30 s); a timeout counts as a failure. */
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

/** The context of one Attempt of one Submission. */
export interface AgentContext {
  readonly submissionId: SubmissionId
  readonly threadId: ThreadId
  readonly attemptId: AttemptId
  /**
   * Runs `effect` once and journals its encoded result (`StepCompleted`) or its failure
   * (`StepFailed`); a replay returns the recorded outcome. At least once per step, exactly
   * one recorded result.
   */
  readonly step: StepFunction
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
   */
  readonly requestApproval: (payload: Schema.Json) => Effect.Effect<ApprovalDecision>
}
