/**
 * The journaled calls of subagents and joined input in an `AgentContext`: start a child, await
 * its settlement, read the follow-ups that joined. They share the Attempt's call positions and
 * journal with the other calls (see `attempt/contextCalls.ts`).
 */
import { Effect, Option, Schema } from "effect"
import type { AgentContext, ChildHandle, ChildSettlement, ChildThread } from "../../../AgentContext.ts"
import { AgentFailure, type AgentDefinition } from "../../../AgentRegistration.ts"
import { IdempotencyKey, ThreadId } from "../../../Identifiers.ts"
import { LedgerError } from "../../ledger/model.ts"
import { utf8ByteLength } from "../../ledger/rules.ts"
import { MAX_INPUT_BYTES_CEILING } from "../../rowBytes.ts"
import { messageIds, ObjectAddress } from "../../outbox/model.ts"
import { boundary, guard, halt, isJson, journalMismatch } from "../attempt/attemptState.ts"
import { loadJournal } from "../shared/runtimeEnv.ts"
import type { Journal } from "../shared/journal.ts"
import type { HistoryPage } from "../../../ThreadHistory.ts"
import type { ContextCalls } from "../attempt/contextCalls.ts"
import { awaitChildBriefly } from "./childWait.ts"

type Settled = NonNullable<ReturnType<Journal["childSettled"]["get"]>>

/** Records read per page while looking for a child's settlement after its start. */
const SETTLEMENT_PAGE = 64

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

/**
 * The oldest joins whose inputs together stay within `budget` bytes (the first always: admission
 * bounded it by the same limit). Their `InputJoined` record is one SQLite row, which Cloudflare
 * caps at 2 MB, so a read of every join at once could never be written; the rest stay joining,
 * for the host's next read or to run on their own once it ends.
 */
const takeWithin = <R extends { readonly inputPayload: string }>(
  rows: ReadonlyArray<R>,
  budget: number,
): ReadonlyArray<R> => {
  let left = budget
  let count = 0
  for (const row of rows) {
    const bytes = utf8ByteLength(row.inputPayload)
    if (count > 0 && bytes > left) break
    left -= bytes
    count++
  }
  return rows.slice(0, count)
}

/** `startChild`, `awaitChild` and `receiveJoined` of one Attempt's context. @internal */
export const makeChildCalls = (
  calls: ContextCalls,
): Pick<AgentContext, "startChild" | "awaitChild" | "receiveJoined"> => {
  const { attempt, journal, agent, next, recorded, append, hit } = calls
  const { env } = attempt
  const { submissionId, threadId } = attempt.claim
  /** Children started so far: recorded ones, and those this Attempt starts live. */
  const started = new Map<number, string>()
  /** The Thread sequence of each child start this Attempt recorded: its settlement comes after. */
  const startedAt = new Map<number, number>()
  for (const [step, position] of journal.positions)
    if (position.childStarted !== undefined) started.set(step, position.childStarted.agentId)

  const startChild = <CI, CO>(options: {
    readonly agent: AgentDefinition<CI, CO>
    readonly input: CI
    readonly thread: ChildThread
    readonly idempotencyKey?: string
    readonly joinSettled?: boolean
  }): Effect.Effect<ChildHandle<CO>, AgentFailure> =>
    Effect.gen(function* () {
      const position = next()
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
      // Its Schema may encode a value JSON cannot carry (NaN): it could not be journaled or sent.
      if (!isJson(input))
        return yield* new AgentFailure({
          message: `the input of child agent ${options.agent.id} is not JSON (its Schema encoded a value JSON cannot carry)`,
        })
      // No Thread admits more, and its `ChildStarted` record (one row) could never be written: a
      // smaller input over the child Thread's own limit is refused there, as a value.
      const inputBytes = utf8ByteLength(JSON.stringify(input))
      if (inputBytes > MAX_INPUT_BYTES_CEILING)
        return yield* new AgentFailure({
          message: `the input of child agent ${options.agent.id} is ${inputBytes} bytes; no Thread admits more than ${MAX_INPUT_BYTES_CEILING}`,
        })
      // The default key names this admission of the parent, not only its id: a key admitted
      // again after retention removed the parent gets the same id, and its children must not be
      // taken for the settled children of the first. Journaled with the start, it is never
      // derived again.
      const idempotencyKey =
        options.idempotencyKey === undefined
          ? IdempotencyKey.make(`parent:${submissionId}@${attempt.claim.attemptId}:${position}`)
          : yield* Schema.decodeUnknownEffect(IdempotencyKey)(options.idempotencyKey).pipe(
              Effect.mapError(
                (cause) => new AgentFailure({ message: `invalid child idempotency key: ${cause.message}` }),
              ),
            )
      yield* boundary(attempt)
      const sequence = yield* append(
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
              parentAttemptId: attempt.claim.attemptId,
              ...(options.joinSettled === true && options.idempotencyKey !== undefined
                ? { joinSettled: true as const }
                : {}),
            },
          },
        ],
      )
      started.set(position, options.agent.id)
      startedAt.set(position, sequence)
      attempt.liveSteps++
      yield* hit("child:after-start-append")
      return handle
    })

  /**
   * The recorded settlement of the child started at `step`: the journal's, or a fresh read. For a
   * child this Attempt started, the read covers only the Thread's records after the start (the
   * settlement is recorded after it), not every record from the acceptance on: in a Thread with
   * work queued those are the rows of every Submission behind this one.
   */
  const childSettlement = (step: number) =>
    Effect.gen(function* () {
      const known = journal.childSettled.get(step)
      if (known !== undefined) return Option.some(known)
      // It may have arrived after this Attempt read its journal.
      const from = startedAt.get(step)
      if (from === undefined) {
        const fresh = yield* guard(attempt, loadJournal(env, submissionId))
        const settled = fresh.childSettled.get(step)
        if (settled === undefined && fresh.through !== undefined) covered.set(step, fresh.through)
        return Option.fromUndefinedOr(settled)
      }
      return yield* guard(attempt, settledAfter(from, step))
    })

  /**
   * The last Thread sequence a read that found no settlement of the child started at a step
   * covered: a park on that child checks only the records after it.
   */
  const covered = new Map<number, number>()

  /** The first settlement of the child started at `step` among the Thread's records after `from`. */
  const settledAfter = (from: number, step: number) =>
    Effect.gen(function* () {
      let after: number | undefined = from
      let last = from
      while (after !== undefined) {
        const page: HistoryPage = yield* env.history.page(threadId, { after, limit: SETTLEMENT_PAGE })
        for (const record of page.records) {
          const entry = record.entry
          if (record.submissionId === submissionId && entry._tag === "ChildSettled" && entry.step === step)
            return Option.some(entry)
          last = record.sequence
        }
        after = page.next
      }
      covered.set(step, last)
      return Option.none<Settled>()
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
      const position = next()
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
      const answered = yield* awaitChildBriefly(attempt, childSettlement(handle.step))
      if (Option.isSome(answered)) return yield* settlementValue(handle, answered.value)
      // The park checks for the settlement again, in its own transaction (see `park`).
      const after = covered.get(handle.step)
      return yield* halt(attempt, {
        _tag: "Suspend",
        awaiting: { child: handle.step, ...(after === undefined ? {} : { after }) },
      })
    })

  const receiveJoined: AgentContext["receiveJoined"] = Effect.gen(function* () {
    if (!agent.acceptsJoinedInput) return yield* invalidCall(`agent ${agent.id} takes no joined input`)
    const position = next()
    const found = yield* recorded(position, "joined read", undefined)
    let joined = found?.inputJoined?.joined
    if (joined === undefined) {
      yield* boundary(attempt)
      const rows = yield* guard(attempt, env.ledger.joinsOf(threadId, submissionId))
      const taken = takeWithin(
        rows.filter((row) => row.state === "joining" && !row.abortRequested),
        env.limits.maxInputBytes,
      )
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

  return { startChild, awaitChild, receiveJoined }
}
