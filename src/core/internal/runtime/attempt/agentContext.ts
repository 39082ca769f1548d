/**
 * The `AgentContext` of one Attempt: journaled calls that replay from the Submission's
 * canonical records and run live past them. See `AgentContext` for the contract.
 */
import { Cause, Clock, Effect, Exit, Schema } from "effect"
import {
  type AgentContext,
  type ReconcileAnswer,
  type ReconcileOptions,
  RECONCILE_DEFAULTS,
  type StepFunction,
  type StepOptions,
  type StepRunOptions,
  type UncertainStepFunction,
} from "../../../AgentContext.ts"
import { AgentFailure, type AnyAgentDefinition, type JsonCodec } from "../../../AgentRegistration.ts"
import type { HistoryEntry, ReconcileAnswerRecord } from "../../history/model.ts"
import type { NewMessage } from "../../outbox/model.ts"
import {
  type AttemptState,
  boundary,
  guard,
  halt,
  isJson,
  journalMismatch,
  ownerFence,
  storableMessage,
  unstorable,
  runWatched,
  takeStaged,
} from "./attemptState.ts"
import {
  type Journal,
  type JournalPosition,
  type OpenUncertain,
  reconciledHappened,
  reconciledNotHappened,
  reconcileRetryDelay,
  reconcileStatus,
} from "../shared/journal.ts"
import { makeChildCalls } from "../children/agentContextChildren.ts"
import type { ContextCalls, Kind, StepOutcome } from "./contextCalls.ts"
import { kindOf, unfitName } from "./callKinds.ts"
import { makeWaitCalls } from "./agentContextWaits.ts"
import { makeEventCalls } from "./agentContextEvents.ts"
import type { WaitRecord } from "../../ledger/model.ts"

/** The reconcile attempts an uncertain step's start records. */
/**
 * A reconcile option that is not a number of at least 1 (`NaN` included, which `Math.max` would
 * pass on): the program's defect, naming the step, rather than a reconcile cut off at once.
 */
const invalidReconcileOption = (
  name: string,
  options: ReconcileOptions<unknown> | undefined,
): RangeError | undefined => {
  for (const key of ["reconcileAttempts", "reconcileTimeoutMillis"] as const) {
    const value = options?.[key]
    if (value !== undefined && !(Number.isFinite(value) && value >= 1))
      return new RangeError(
        `uncertain step "${name}": ${key} must be a finite number of at least 1, got ${value}`,
      )
  }
  return undefined
}

const reconcileAttemptsOf = (options: ReconcileOptions<unknown>): number =>
  Math.max(1, Math.floor(options.reconcileAttempts ?? RECONCILE_DEFAULTS.attempts))

/**
 * Builds the context of an Attempt over the journal read when it started and the wait its row
 * recorded. @internal
 */
export const makeAgentContext = (
  attempt: AttemptState,
  journal: Journal,
  agent: AnyAgentDefinition,
  wait: WaitRecord | undefined,
): AgentContext => {
  const { submissionId, threadId, attemptId } = attempt.claim
  const { env } = attempt
  let cursor = 0

  const hit = (location: Parameters<typeof attempt.env.hit>[0]) => guard(attempt, attempt.env.hit(location))

  /**
   * Appends `entry`, with the records the Attempt staged before it (its `InputApplied`), and
   * enqueues `messages` in the same transaction.
   */
  const append = (entry: HistoryEntry, messages: ReadonlyArray<NewMessage> = []) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const applying = attempt.staged.length > 0
      const entries = [...attempt.staged, entry]
      const fence = ownerFence(attempt)
      const records = yield* guard(
        attempt,
        messages.length === 0
          ? env.history.appendAll(submissionId, entries, fence, now)
          : env.outbox.appendWithMessages(submissionId, entries, fence, now, messages),
      )
      takeStaged(attempt, [])
      attempt.recorded = true
      if (applying) yield* hit("input:after-canonical-append")
      // The entry is the last record appended.
      return records[records.length - 1]?.sequence ?? 0
    })

  /** The recorded call at `step`, checked against what the program asks for now. */
  const recorded = (step: number, kind: Kind, name: string | undefined) =>
    Effect.suspend(() => {
      const position = journal.positions.get(step)
      if (position === undefined) {
        // A new call's name goes into its records: checked here, never on a replay of one.
        const unfit = name === undefined ? undefined : unfitName(attempt, kind, name)
        return unfit === undefined ? Effect.succeed(undefined) : Effect.die(new RangeError(unfit))
      }
      const found = kindOf(position)
      const recordedName =
        position.completed?.name ??
        position.failed?.name ??
        position.uncertainStarted?.name ??
        position.childStarted?.agentId ??
        position.timerFired?.name ??
        position.attemptsFailed?.[0]?.name ??
        position.eventConsumed?.event ??
        position.eventTimedOut?.event
      // An uncertain step's result is a `StepCompleted`, so both kinds of step share it.
      const sameKind = found === kind || (kind === "uncertain step" && found === "step")
      if (found !== undefined && (!sameKind || (name !== undefined && recordedName !== name))) {
        return journalMismatch(
          attempt,
          `call ${step} is journaled as ${found} "${recordedName ?? ""}", but the program asked for ${kind}${name === undefined ? "" : ` "${name}"`}`,
        )
      }
      return Effect.succeed(found === undefined ? undefined : position)
    })

  const decodeRecorded = <A>(codec: JsonCodec<A>, step: number, name: string, value: Schema.Json) =>
    Schema.decodeUnknownEffect(codec)(value).pipe(
      Effect.catch((cause) =>
        journalMismatch(
          attempt,
          `the recorded result of step ${step} "${name}" does not decode: ${cause.message}`,
        ),
      ),
    )

  /** The recorded outcome of a completed step. */
  const replayResult = <A>(position: JournalPosition, codec: JsonCodec<A>, step: number, name: string) =>
    position.completed !== undefined
      ? decodeRecorded(codec, step, name, position.completed.result)
      : Effect.fail(new AgentFailure({ message: position.failed?.error ?? `step ${name} failed` }))

  /** Runs one attempt of a call live and encodes its result; defects and interruptions die. */
  const runOnce = <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    codec: JsonCodec<A>,
    options: { readonly interruptible: boolean; readonly timeoutMillis?: number | undefined },
  ): Effect.Effect<StepOutcome<A>> =>
    Effect.gen(function* () {
      const { timeoutMillis } = options
      const limited =
        timeoutMillis === undefined
          ? effect
          : effect.pipe(
              Effect.timeoutOrElse({
                duration: timeoutMillis,
                orElse: () =>
                  Effect.fail(
                    new AgentFailure({ message: `step "${name}" timed out after ${timeoutMillis} ms` }),
                  ),
              }),
            )
      const exit = yield* runWatched(attempt, limited, options.interruptible)
      if (Exit.isSuccess(exit)) {
        const encoded = yield* Effect.result(Schema.encodeEffect(codec)(exit.value))
        const refusal =
          encoded._tag === "Success"
            ? unstorable(attempt, `the result of step "${name}"`, encoded.success)
            : `the result of step "${name}" does not encode: ${encoded.failure.message}`
        if (encoded._tag === "Success" && refusal === undefined)
          return { _tag: "Succeeded", value: exit.value, result: encoded.success } as const
        // A result that cannot be stored is the step's failure: journaled, so replay agrees.
        return {
          _tag: "Failed",
          failure: AgentFailure.nonRetryable(refusal ?? `the result of step "${name}" cannot be stored`),
        } as const
      }
      const failure = Cause.findErrorOption(exit.cause)
      // The effect ran in a fiber of its own: an interruption of the Attempt never returns an
      // exit here, so a step that interrupted only itself dies, rather than leave the work for
      // a later Attempt that runs it again, and again. (An uncertain step cut so is an Unknown
      // Outcome, which runs nothing again.)
      if (options.interruptible && failure._tag === "None" && Cause.hasInterruptsOnly(exit.cause))
        return yield* Effect.die(new Error(`step "${name}" interrupted itself`))
      if (failure._tag === "None" && Cause.hasInterruptsOnly(exit.cause)) attempt.cut = true
      // Defects and interruptions are not outcomes of the step: they are not journaled.
      if (failure._tag === "None") return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
      // Its message is journaled like a result: one too large to store fails the step naming its
      // size (retried as the failure would be), or every append of the Attempt would fail.
      const refusal = unstorable(attempt, `the error of step "${name}"`, failure.value.message)
      if (refusal === undefined) return { _tag: "Failed", failure: failure.value } as const
      const { retryable } = failure.value
      return {
        _tag: "Failed",
        failure: new AgentFailure({ message: refusal, ...(retryable === undefined ? {} : { retryable }) }),
      } as const
    })

  /** Runs a call live and journals its result or its failure. */
  const runLive = <A>(
    step: number,
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    codec: JsonCodec<A>,
    interruptible: boolean,
  ): Effect.Effect<A, AgentFailure> =>
    Effect.gen(function* () {
      const outcome = yield* runOnce(name, effect, codec, { interruptible })
      yield* append(
        outcome._tag === "Succeeded"
          ? { _tag: "StepCompleted", step, name, result: outcome.result }
          : { _tag: "StepFailed", step, name, error: outcome.failure.message },
      )
      attempt.liveSteps++
      // A plain step is at-least-once: a crash here replays it; an uncertain one has no such point.
      if (interruptible) yield* hit("step:after-step-append")
      return outcome._tag === "Succeeded" ? outcome.value : yield* Effect.fail(outcome.failure)
    })

  const calls: ContextCalls = {
    attempt,
    journal,
    agent,
    next: () => cursor++,
    recorded,
    append,
    hit,
    wait,
    runOnce,
  }

  const waits = makeWaitCalls(calls)
  const events = makeEventCalls(calls)

  const step = <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options?: Partial<StepOptions<A>> & StepRunOptions,
  ): Effect.Effect<A, AgentFailure> =>
    Effect.gen(function* () {
      const position = cursor++
      const codec = options?.result ?? (Schema.Json as unknown as JsonCodec<A>)
      const found = yield* recorded(position, "step", name)
      if (found?.completed !== undefined || found?.failed !== undefined)
        return yield* replayResult(found, codec, position, name)
      if (options?.retry === undefined && options?.timeoutMillis === undefined) {
        yield* boundary(attempt)
        return yield* runLive(position, name, effect, codec, true)
      }
      return yield* waits.retriedStep(position, name, effect, codec, options, found)
    })

  /** Starts a run of an uncertain step: its start is journaled before the effect runs. */
  const startUncertain = <A>(
    step: number,
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    codec: JsonCodec<A>,
    options: ReconcileOptions<A> | undefined,
  ) =>
    Effect.gen(function* () {
      yield* boundary(attempt)
      const attempts = options?.reconcile === undefined ? undefined : reconcileAttemptsOf(options)
      yield* append({
        _tag: "UncertainStepStarted",
        step,
        name,
        ...(attempts === undefined ? {} : { reconcileAttempts: attempts }),
      })
      yield* hit("uncertain:after-start-append")
      return yield* runLive(step, name, effect, codec, false)
    })

  /**
   * Runs the reconcile of an open uncertain step, journaled: its start (so a reconcile that
   * never answers still counts), then its answer. `Happened` is the step's result, `NotHappened`
   * runs the effect again, and anything else leaves the Unknown Outcome for a later
   * reconcile or an operator.
   */
  const runReconcile = <A>(
    step: number,
    name: string,
    position: JournalPosition,
    effect: Effect.Effect<A, AgentFailure>,
    codec: JsonCodec<A>,
    options: ReconcileOptions<A> & { readonly reconcile: Effect.Effect<ReconcileAnswer<A>, AgentFailure> },
  ): Effect.Effect<A, AgentFailure> =>
    Effect.gen(function* () {
      yield* boundary(attempt)
      const number = (position.reconcileAttempts ?? 0) + 1
      yield* append({ _tag: "ReconcileStarted", step, attempt: number })
      yield* hit("reconcile:after-start-append")
      const timeoutMillis = Math.max(1, options.reconcileTimeoutMillis ?? RECONCILE_DEFAULTS.timeoutMillis)
      const exit = yield* runWatched(
        attempt,
        options.reconcile.pipe(
          Effect.timeoutOrElse({
            duration: timeoutMillis,
            orElse: () =>
              Effect.fail(
                new AgentFailure({ message: `the reconcile did not answer within ${timeoutMillis} ms` }),
              ),
          }),
        ),
        true,
      )
      attempt.liveSteps++
      let answer: ReconcileAnswerRecord
      let value: A | undefined
      if (Exit.isSuccess(exit)) {
        const found = exit.value
        if (found._tag === "Happened") {
          const encoded = yield* Effect.result(Schema.encodeEffect(codec)(found.value))
          // Stored like the step's own result: one the live step would refuse is an operator's.
          const unfit =
            encoded._tag === "Success" && isJson(encoded.success)
              ? unstorable(attempt, "the reconciled result", encoded.success)
              : undefined
          if (unfit !== undefined) answer = { _tag: "CannotTell", reason: unfit }
          else if (encoded._tag === "Success" && isJson(encoded.success)) {
            answer = { _tag: "Happened", value: encoded.success }
            value = found.value
          } else {
            answer = {
              _tag: "CannotTell",
              reason:
                encoded._tag === "Success"
                  ? "the reconciled result is not JSON (its Schema encoded a value JSON cannot carry)"
                  : `the reconciled result does not encode: ${encoded.failure.message}`,
            }
          }
        } else {
          answer =
            found._tag === "NotHappened"
              ? { _tag: "NotHappened" }
              : { _tag: "CannotTell", reason: storableMessage(attempt, found.reason) }
        }
      } else {
        // Stopped by an abort or a lost Claim: the started reconcile counts, nothing is answered.
        if (attempt.stop !== undefined) return yield* halt(attempt, attempt.stop)
        const failure = Cause.findErrorOption(exit.cause)
        const now = yield* Clock.currentTimeMillis
        answer = {
          _tag: "Failed",
          message: storableMessage(
            attempt,
            failure._tag === "Some"
              ? failure.value.message
              : `the reconcile died: ${Cause.pretty(exit.cause)}`,
          ),
          retryAt: now + reconcileRetryDelay(number),
        }
      }
      yield* append({ _tag: "ReconcileAnswered", step, attempt: number, answer })
      yield* hit("reconcile:after-answer-append")
      if (answer._tag === "Happened") return value as A
      if (answer._tag === "NotHappened") return yield* startUncertain(step, name, effect, codec, options)
      const started = position.uncertainStarted
      return yield* unresolved(step, {
        step,
        name,
        recorded: true,
        reconcileAttempts: started?.reconcileAttempts ?? 0,
        reconciles: number,
        lastAnswer: answer,
      })
    })

  const uncertainStep = <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options?: Partial<StepOptions<A>> & ReconcileOptions<A>,
  ): Effect.Effect<A, AgentFailure> =>
    Effect.gen(function* () {
      const invalid = invalidReconcileOption(name, options)
      if (invalid !== undefined) return yield* Effect.die(invalid)
      const position = cursor++
      const codec = options?.result ?? (Schema.Json as unknown as JsonCodec<A>)
      const found = yield* recorded(position, "uncertain step", name)
      if (found === undefined) return yield* startUncertain(position, name, effect, codec, options)
      if (found.completed !== undefined || found.failed !== undefined) {
        return yield* replayResult(found, codec, position, name)
      }
      const resolution = found.unknownResolved?.resolution
      if (resolution?._tag === "Succeeded") {
        const decoded = yield* Effect.result(Schema.decodeUnknownEffect(codec)(resolution.value))
        if (decoded._tag === "Success") return decoded.success
        // An operator's value that is not a result of this step cannot be its result, and no
        // later code makes it one: the outcome is recorded open again for another resolution.
        yield* Effect.logWarning(
          `the resolution of step ${position} "${name}" does not decode, so its Unknown Outcome is open again: ${decoded.failure.message}`,
        )
        yield* append({ _tag: "UnknownOutcomeRecorded", step: position, name })
        return yield* halt(attempt, { _tag: "Unknown" })
      }
      if (resolution?._tag === "Failed") return yield* new AgentFailure({ message: resolution.message })
      const happened = reconciledHappened(found)
      if (happened !== undefined) return yield* decodeRecorded(codec, position, name, happened.value)
      // The effect verifiably never took place: this run is its first real one.
      if (reconciledNotHappened(found)) return yield* startUncertain(position, name, effect, codec, options)
      // Started, never finished, not resolved: its outcome is unknown and it never runs again
      // unless its reconcile finds it did not happen.
      if (found.unknownRecorded === undefined)
        yield* append({ _tag: "UnknownOutcomeRecorded", step: position, name })
      const started = found.uncertainStarted
      const reconcile = options?.reconcile
      if (reconcile !== undefined && started !== undefined) {
        const status = reconcileStatus(
          {
            step: position,
            name,
            recorded: true,
            reconcileAttempts: started.reconcileAttempts ?? 0,
            reconciles: found.reconcileAttempts ?? 0,
            ...(found.reconciled === undefined ? {} : { lastAnswer: found.reconciled.answer }),
          },
          yield* Clock.currentTimeMillis,
        )
        if (status._tag === "Due")
          return yield* runReconcile(position, name, found, effect, codec, { ...options, reconcile })
        return yield* unresolved(position, {
          step: position,
          name,
          recorded: true,
          reconcileAttempts: started.reconcileAttempts ?? 0,
          reconciles: found.reconcileAttempts ?? 0,
          ...(found.reconciled === undefined ? {} : { lastAnswer: found.reconciled.answer }),
        })
      }
      return yield* halt(attempt, { _tag: "Unknown" })
    })

  /**
   * An Unknown Outcome nothing settled: while a failed reconcile waits for its next try the
   * Submission waits for that time (an alarm runs it); otherwise a person decides.
   */
  const unresolved = (step: number, open: OpenUncertain) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const status = reconcileStatus(open, now)
      if (status._tag !== "Backoff") return yield* halt(attempt, { _tag: "Unknown" })
      return yield* halt(attempt, {
        _tag: "Wait",
        park: {
          wait: { _tag: "Reconcile", step, dueAt: status.notBefore, since: now },
          dueAt: status.notBefore,
          entries: [],
        },
      })
    })

  return {
    submissionId,
    threadId,
    attemptId,
    step: step as StepFunction,
    uncertainStep: uncertainStep as UncertainStepFunction,
    requestApproval: events.requestApproval as AgentContext["requestApproval"],
    waitForEvent: events.waitForEvent as AgentContext["waitForEvent"],
    sleep: waits.sleep,
    sleepUntil: waits.sleepUntil,
    ...makeChildCalls(calls),
  }
}
