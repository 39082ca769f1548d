/**
 * The `AgentContext` of one Attempt: journaled calls that replay from the Submission's
 * canonical records and run live past them. See `AgentContext` for the contract.
 */
import { Cause, Clock, Effect, Exit, Option, Schema } from "effect"
import type {
  AgentContext,
  ChildHandle,
  ChildSettlement,
  ChildThread,
  StepFunction,
  StepOptions,
} from "../../AgentContext.ts"
import {
  AgentFailure,
  type AgentDefinition,
  type AnyAgentDefinition,
  type JsonCodec,
} from "../../AgentRegistration.ts"
import { IdempotencyKey, ThreadId } from "../../Identifiers.ts"
import { ApprovalDecision } from "./model.ts"
import type { HistoryEntry } from "../history/model.ts"
import { messageIds, type NewMessage, ObjectAddress } from "../outbox/model.ts"
import { loadJournal } from "./env.ts"
import {
  type AttemptState,
  boundary,
  guard,
  halt,
  journalMismatch,
  ownerFence,
  oversized,
  runWatched,
  takeStaged,
} from "./attemptState.ts"
import type { Journal, JournalPosition } from "./journal.ts"
import { LedgerError } from "../ledger/model.ts"

type Kind = "step" | "uncertain step" | "approval request" | "child start" | "child await" | "joined read"

const kindOf = (position: JournalPosition): Kind | undefined =>
  position.approvalRequested !== undefined
    ? "approval request"
    : position.uncertainStarted !== undefined
      ? "uncertain step"
      : position.completed !== undefined || position.failed !== undefined
        ? "step"
        : position.childStarted !== undefined
          ? "child start"
          : position.childAwaited !== undefined
            ? "child await"
            : position.inputJoined !== undefined
              ? "joined read"
              : undefined

type Settled = NonNullable<ReturnType<Journal["childSettled"]["get"]>>

const invalidCall = (message: string) => Effect.fail(new AgentFailure({ message }))

const decodeThread = (thread: ChildThread, namespace: string) =>
  Effect.gen(function* () {
    const threadId = yield* Schema.decodeUnknownEffect(ThreadId)(thread.threadId).pipe(
      Effect.mapError((cause) => new AgentFailure({ message: `invalid child thread: ${cause.message}` })),
    )
    const target = yield* Schema.decodeUnknownEffect(ObjectAddress)({
      namespace: thread.namespace ?? namespace,
      objectName: thread.objectName,
    }).pipe(
      Effect.mapError((cause) => new AgentFailure({ message: `invalid child object: ${cause.message}` })),
    )
    return { threadId, target }
  })

/** Builds the context of an Attempt over the journal read when it started. @internal */
export const makeAgentContext = (
  attempt: AttemptState,
  journal: Journal,
  agent: AnyAgentDefinition,
): AgentContext => {
  const { submissionId, threadId, attemptId } = attempt.claim
  const { env } = attempt
  let cursor = 0
  /** Children started so far: recorded ones, and those this Attempt starts live. */
  const started = new Map<number, string>()
  for (const [step, position] of journal.positions)
    if (position.childStarted !== undefined) started.set(step, position.childStarted.agentId)

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
      yield* guard(
        attempt,
        messages.length === 0
          ? env.history.appendAll(submissionId, entries, fence, now)
          : env.outbox.appendWithMessages(submissionId, entries, fence, now, messages),
      )
      takeStaged(attempt, [])
      if (applying) yield* hit("input:after-canonical-append")
    })

  /** The recorded call at `step`, checked against what the program asks for now. */
  const recorded = (step: number, kind: Kind, name: string | undefined) =>
    Effect.suspend(() => {
      const position = journal.positions.get(step)
      if (position === undefined) return Effect.succeed(undefined)
      const found = kindOf(position)
      const recordedName =
        position.completed?.name ??
        position.failed?.name ??
        position.uncertainStarted?.name ??
        position.childStarted?.agentId
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

  /** Runs a call live and journals its result or its failure. */
  const runLive = <A>(
    step: number,
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    codec: JsonCodec<A>,
    interruptible: boolean,
  ): Effect.Effect<A, AgentFailure> =>
    Effect.gen(function* () {
      const exit = yield* runWatched(attempt, effect, interruptible)
      let outcome: Exit.Exit<A, AgentFailure> = exit
      let entry: HistoryEntry
      if (Exit.isSuccess(exit)) {
        const encoded = yield* Effect.result(Schema.encodeEffect(codec)(exit.value))
        const refusal =
          encoded._tag === "Success"
            ? oversized(attempt, `the result of step "${name}"`, encoded.success)
            : `the result of step "${name}" does not encode: ${encoded.failure.message}`
        if (encoded._tag === "Success" && refusal === undefined) {
          entry = { _tag: "StepCompleted", step, name, result: encoded.success }
        } else {
          // A result that cannot be stored is the step's failure: journaled, so replay agrees.
          const message = refusal ?? `the result of step "${name}" cannot be stored`
          outcome = Exit.fail(new AgentFailure({ message }))
          entry = { _tag: "StepFailed", step, name, error: message }
        }
      } else {
        const failure = Cause.findErrorOption(exit.cause)
        // Defects and interruptions are not outcomes of the step: they are not journaled.
        if (failure._tag === "None") return yield* Effect.failCause(exit.cause)
        entry = { _tag: "StepFailed", step, name, error: failure.value.message }
      }
      yield* append(entry)
      attempt.liveSteps++
      // A plain step is at-least-once: a crash here replays it; an uncertain one has no such point.
      if (interruptible) yield* hit("step:after-step-append")
      return yield* outcome
    })

  const step = <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options?: StepOptions<A>,
  ): Effect.Effect<A, AgentFailure> =>
    Effect.gen(function* () {
      const position = cursor++
      const codec = options?.result ?? (Schema.Json as unknown as JsonCodec<A>)
      const found = yield* recorded(position, "step", name)
      if (found !== undefined) return yield* replayResult(found, codec, position, name)
      yield* boundary(attempt)
      return yield* runLive(position, name, effect, codec, true)
    })

  const uncertainStep = <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    options?: StepOptions<A>,
  ): Effect.Effect<A, AgentFailure> =>
    Effect.gen(function* () {
      const position = cursor++
      const codec = options?.result ?? (Schema.Json as unknown as JsonCodec<A>)
      const found = yield* recorded(position, "uncertain step", name)
      if (found !== undefined) {
        if (found.completed !== undefined || found.failed !== undefined) {
          return yield* replayResult(found, codec, position, name)
        }
        const resolution = found.unknownResolved?.resolution
        if (resolution?._tag === "Succeeded")
          return yield* decodeRecorded(codec, position, name, resolution.value)
        if (resolution?._tag === "Failed") return yield* new AgentFailure({ message: resolution.message })
        // Started, never finished, not resolved: its outcome is unknown and it never runs again.
        if (found.unknownRecorded === undefined)
          yield* append({ _tag: "UnknownOutcomeRecorded", step: position, name })
        return yield* halt(attempt, { _tag: "Unknown" })
      }
      yield* boundary(attempt)
      yield* append({ _tag: "UncertainStepStarted", step: position, name })
      yield* hit("uncertain:after-start-append")
      return yield* runLive(position, name, effect, codec, false)
    })

  const requestApproval = (payload: Schema.Json): Effect.Effect<ApprovalDecision> =>
    Effect.gen(function* () {
      const position = cursor++
      const found = yield* recorded(position, "approval request", undefined)
      if (found !== undefined) {
        const decision = found.approvalResolved
        if (decision === undefined) return yield* halt(attempt, { _tag: "Suspend" })
        if (!decision.approved) {
          return yield* halt(attempt, {
            _tag: "Denied",
            ...(decision.note === undefined ? {} : { note: decision.note }),
          })
        }
        return new ApprovalDecision({
          approved: true,
          ...(decision.note === undefined ? {} : { note: decision.note }),
        })
      }
      yield* boundary(attempt)
      yield* append({ _tag: "ApprovalRequested", step: position, payload })
      yield* hit("approval:after-request-append")
      return yield* halt(attempt, { _tag: "Suspend" })
    })

  const startChild = <CI, CO>(options: {
    readonly agent: AgentDefinition<CI, CO>
    readonly input: CI
    readonly thread: ChildThread
  }): Effect.Effect<ChildHandle<CO>, AgentFailure> =>
    Effect.gen(function* () {
      const position = cursor++
      const handle: ChildHandle<CO> = {
        step: position,
        agent: options.agent as AgentDefinition<unknown, CO>,
        thread: options.thread,
      }
      const found = yield* recorded(position, "child start", options.agent.id)
      if (found !== undefined) return handle
      const self = env.self
      if (self.namespace === undefined || self.objectId === undefined) {
        return yield* invalidCall(
          "this Object has no address its children can answer to: set the namespaceBinding option to start children",
        )
      }
      const { threadId: childThread, target } = yield* decodeThread(options.thread, self.namespace)
      const input = yield* Schema.encodeEffect(options.agent.input)(options.input).pipe(
        Effect.mapError(
          (cause) =>
            new AgentFailure({
              message: `the input of child agent ${options.agent.id} does not encode: ${cause.message}`,
            }),
        ),
      )
      yield* boundary(attempt)
      const idempotencyKey = IdempotencyKey.make(`parent:${submissionId}:${position}`)
      yield* append(
        {
          _tag: "ChildStarted",
          step: position,
          target,
          threadId: childThread,
          agentId: options.agent.id,
          agentDigest: options.agent.digest,
          idempotencyKey,
          input,
        },
        [
          {
            messageId: messageIds.admitChild(submissionId, position),
            target,
            message: {
              _tag: "AdmitChild",
              threadId: childThread,
              idempotencyKey,
              agentId: options.agent.id,
              agentDigest: options.agent.digest,
              input,
              parent: {
                address: { namespace: self.namespace, objectId: self.objectId },
                threadId,
                submissionId,
                step: position,
              },
            },
          },
        ],
      )
      started.set(position, options.agent.id)
      attempt.liveSteps++
      yield* hit("child:after-start-append")
      return handle
    })

  /** The recorded settlement of the child started at `step`: the journal's, or a fresh read. */
  const childSettlement = (step: number) =>
    Effect.gen(function* () {
      const known = journal.childSettled.get(step)
      if (known !== undefined) return Option.some(known)
      // It may have arrived after this Attempt read its journal.
      const fresh = yield* guard(attempt, loadJournal(env, submissionId))
      return Option.fromUndefinedOr(fresh.childSettled.get(step))
    })

  const settlementValue = <CO>(
    handle: ChildHandle<CO>,
    settled: Settled,
  ): Effect.Effect<ChildSettlement<CO>, AgentFailure> => {
    switch (settled.outcome) {
      case "completed":
        return Schema.decodeUnknownEffect(handle.agent.output)(settled.output ?? null).pipe(
          Effect.map((output): ChildSettlement<CO> => ({
            outcome: "completed",
            output,
            submissionId: settled.childSubmissionId as NonNullable<Settled["childSubmissionId"]>,
          })),
          Effect.catch((cause) =>
            Effect.succeed<ChildSettlement<CO>>({
              outcome: "failed",
              error: `the output of child agent ${handle.agent.id} does not decode: ${cause.message}`,
              ...(settled.childSubmissionId === undefined ? {} : { submissionId: settled.childSubmissionId }),
            }),
          ),
        )
      case "failed":
        return Effect.succeed({
          outcome: "failed",
          error: settled.error ?? "the child failed",
          ...(settled.childSubmissionId === undefined ? {} : { submissionId: settled.childSubmissionId }),
          ...(settled.refused === undefined ? {} : { refused: settled.refused }),
        })
      case "aborted":
        return Effect.succeed({
          outcome: "aborted",
          submissionId: settled.childSubmissionId as NonNullable<Settled["childSubmissionId"]>,
        })
    }
  }

  const awaitChild = <CO>(handle: ChildHandle<CO>): Effect.Effect<ChildSettlement<CO>, AgentFailure> =>
    Effect.gen(function* () {
      const position = cursor++
      const found = yield* recorded(position, "child await", undefined)
      if (!started.has(handle.step)) {
        return yield* journalMismatch(
          attempt,
          `call ${position} awaits a child, but call ${handle.step} started none`,
        )
      }
      if (found?.childAwaited !== undefined && found.childAwaited.child !== handle.step) {
        return yield* journalMismatch(
          attempt,
          `call ${position} is journaled as awaiting the child of call ${found.childAwaited.child}, not ${handle.step}`,
        )
      }
      const settled = yield* childSettlement(handle.step)
      if (Option.isSome(settled)) return yield* settlementValue(handle, settled.value)
      if (found === undefined) {
        yield* boundary(attempt)
        yield* append({ _tag: "ChildAwaited", step: position, child: handle.step })
        attempt.liveSteps++
        yield* hit("child:after-await-append")
      }
      // The park checks for the settlement again, in its own transaction (see `park`).
      return yield* halt(attempt, { _tag: "Suspend", child: handle.step })
    })

  const receiveJoined: AgentContext["receiveJoined"] = Effect.gen(function* () {
    if (!agent.acceptsJoinedInput) return yield* invalidCall(`agent ${agent.id} takes no joined input`)
    const position = cursor++
    const found = yield* recorded(position, "joined read", undefined)
    let joined = found?.inputJoined?.joined
    if (joined === undefined) {
      yield* boundary(attempt)
      const rows = yield* guard(attempt, env.ledger.joinsOf(threadId, submissionId))
      const taken = rows.filter((row) => row.state === "joining" && !row.abortRequested)
      const entries = yield* guard(
        attempt,
        Effect.forEach(taken, (row) =>
          Effect.try({
            try: () => ({
              submissionId: row.submissionId,
              input: JSON.parse(row.inputPayload) as Schema.Json,
            }),
            catch: (cause) =>
              new LedgerError({
                operation: "AgentContext.receiveJoined",
                message: `stored input of ${row.submissionId} is not JSON`,
                cause,
              }),
          }),
        ),
      )
      yield* append({ _tag: "InputJoined", step: position, joined: entries })
      attempt.liveSteps++
      yield* hit("join:after-canonical-append")
      for (const entry of entries) {
        // A join aborted meanwhile settles on its own: its mark is not needed.
        yield* guard(
          attempt,
          env.ledger
            .markJoined(entry.submissionId)
            .pipe(Effect.catchTag("InvalidTransition", () => Effect.void)),
        )
      }
      joined = entries
    }
    return yield* Effect.forEach(joined, (entry) =>
      Schema.decodeUnknownEffect(agent.input)(entry.input).pipe(
        Effect.mapError(
          (cause) =>
            new AgentFailure({
              message: `joined input ${entry.submissionId} does not decode: ${cause.message}`,
            }),
        ),
      ),
    )
  })

  return {
    submissionId,
    threadId,
    attemptId,
    step: step as StepFunction,
    uncertainStep: uncertainStep as StepFunction,
    requestApproval,
    startChild,
    awaitChild,
    receiveJoined,
  }
}
