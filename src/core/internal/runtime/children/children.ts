/**
 * Subagents across Objects: what a Thread does with the messages of other Objects' runtimes
 * (a child's admission, a child's settlement, an abort for a child) and with the outcome of
 * delivering its own.
 *
 * Every receiver deduplicates by what the message names: the child's idempotency key, at
 * most one `ChildSettled` record per started child, the abort flag. The parent's side records
 * a child's settlement (or the refusal of its admission) as an input record of the parent; a
 * parent parked on that child is resumed in the same ledger transaction, and a parent that
 * parks on a child checks for its record in the park's own transaction, so no parked parent
 * ever waits on a recorded settlement and none needs a recovery scan. The child's side
 * settles in one transaction with its marker in its outbox, which delivers it until the parent
 * acknowledges it.
 */
import { spanned, withSpanFast } from "../../spanned.ts"
import { Clock, Effect, Option } from "effect"
import type { AgentDefinition } from "../../../AgentRegistration.ts"
import type { SubmissionId } from "../../../Identifiers.ts"
import { unownedFence } from "../../ledger/rules.ts"
import { type Settlement, type SubmissionSnapshot } from "../../ledger/model.ts"
import {
  type ChildRefusalReason,
  type DeliveryOutcome,
  messageIds,
  type OutboxMessage,
  type ThreadMessage,
  type ThreadMessageReplies,
  type ThreadMessageReply,
} from "../../outbox/model.ts"
import type { HistoryEntry } from "../../history/model.ts"
import { type RuntimeEnv, vanished } from "../shared/runtimeEnv.ts"
import { appendInput, journalOf, recordInput } from "../shared/inputRecords.ts"
import type { DurableWorkerFailure } from "../shared/model.ts"
import { admitRow, materialize } from "../admission/admitRow.ts"
import { admissionCheckOf, encodeFor } from "../admission/encodeInput.ts"

const OPERATION = "DurableAgentRuntime.receive"

type Reply<K extends ThreadMessage["_tag"]> = ThreadMessageReplies[K]

/** What a settled (or refused) child reports to its parent. */
interface ChildOutcome {
  readonly childSubmissionId?: SubmissionId
  readonly outcome: Settlement["outcome"]
  readonly output?: Settlement["output"]
  readonly error?: string
  readonly refused?: ChildRefusalReason
  /** The settled child's key, when its marker names it. */
  readonly childKey?: string
}

/**
 * Records a child's outcome in its parent, at most once (see `recordInput`): with the parent's
 * resumption when the parent is parked on that child, else as an input append. `false` when
 * nothing was applied: a repeat, a parent that already settles, or no such child; `"foreign"`
 * when the parent started another child at that step (the marker's parent was removed and its
 * id admitted again), which must not be taken for its own. Callers hold the runtime's lock.
 */
const applyChildOutcome = (env: RuntimeEnv, parentId: SubmissionId, step: number, outcome: ChildOutcome) =>
  Effect.gen(function* () {
    // The parent's Thread once the settlement is applied.
    const applied = yield* recordInput(
      env,
      OPERATION,
      parentId,
      Effect.as(
        Effect.logWarning("A child's settlement names no Submission of this Object", { parentId, step }),
        undefined,
      ),
      journalOf(env),
      (parent, journal, now) =>
        Effect.gen(function* () {
          const done = { _tag: "Done", value: undefined } as const
          const started = journal.positions.get(step)?.childStarted
          if (
            started !== undefined &&
            outcome.childKey !== undefined &&
            started.idempotencyKey !== outcome.childKey
          ) {
            yield* Effect.logWarning("A child's settlement names another child than its parent started", {
              parentId,
              step,
              childSubmissionId: outcome.childSubmissionId,
            })
            return { _tag: "Done", value: null } as const
          }
          if (parent.state === "terminalizing" || parent.state === "settled") return done
          if (journal.childSettled.has(step)) return done
          if (started === undefined) {
            yield* Effect.logError("A child's settlement names no child its parent started", {
              parentId,
              step,
            })
            return done
          }
          const entry = settledRecord(step, outcome)
          const waiting = parent.state === "suspended" && journal.openChildWait?.child === step
          return {
            _tag: "Write",
            value: parent.threadId,
            write: waiting
              ? env.ledger.transition(unownedFence(parent, now, env.incarnation), "ready", {
                  entries: [entry],
                  now,
                })
              : appendInput(env, parent, entry, now),
          } as const
        }),
    )
    if (applied === null) return "foreign" as const
    if (applied === undefined) return false
    yield* env.hit("child:after-settled-append")
    yield* env.wake.notify(applied)
    return true
  })

/** The `ChildSettled` record of an outcome. */
const settledRecord = (step: number, outcome: ChildOutcome): HistoryEntry => ({
  _tag: "ChildSettled",
  step,
  outcome: outcome.outcome,
  ...(outcome.childSubmissionId === undefined ? {} : { childSubmissionId: outcome.childSubmissionId }),
  ...(outcome.output === undefined ? {} : { output: outcome.output }),
  ...(outcome.error === undefined ? {} : { error: outcome.error }),
  ...(outcome.refused === undefined ? {} : { refused: outcome.refused }),
})

/**
 * How the refusal of a child whose key names a Submission another parent (or no parent) started
 * ends: the workflow engine tells that refusal by it. @internal
 */
export const NOT_STARTED_BY_THIS_PARENT = "not started by this parent"

const refusal = (reason: ChildRefusalReason, message: string): Reply<"AdmitChild"> => ({
  _tag: "ChildRefused",
  reason,
  message,
})

/**
 * Where the answer to an admission is remembered: the message's id and the parent's Attempt
 * that started the child. A parent admitted again under a removed parent's id sends under the
 * same message id, and must not be answered with the first one's refusal. A message of an
 * earlier release names no Attempt: its answer stays under the message's id, as it was.
 */
const answerKey = (message: Extract<ThreadMessage, { readonly _tag: "AdmitChild" }>, messageId: string) =>
  message.parentAttemptId === undefined ? messageId : `${messageId}@${message.parentAttemptId}`

/**
 * Admits a child, or answers why its Thread refuses it. The answer to a refusal is remembered
 * under the message's id and the Attempt that sent it (`answerKey`), so a late duplicate of
 * the message (an attempt that outlived its timeout) is refused too: a child its parent was
 * told is refused never runs. The whole decision runs under the runtime's lock, so two
 * deliveries of one message never disagree.
 */
const admitChild = (
  env: RuntimeEnv,
  message: Extract<ThreadMessage, { readonly _tag: "AdmitChild" }>,
  messageId: string,
) =>
  env.exclusive(
    Effect.gen(function* () {
      const key = answerKey(message, messageId)
      const remembered = yield* env.outbox.answerOf(key)
      if (Option.isSome(remembered) && remembered.value._tag === "ChildRefused") return remembered.value
      const refuse = (reason: ChildRefusalReason, text: string) =>
        Effect.gen(function* () {
          const reply = refusal(reason, text)
          yield* env.outbox.rememberAnswer(key, reply, yield* Clock.currentTimeMillis)
          return reply
        })
      const { parent } = message
      const existing = Option.getOrUndefined(
        yield* env.ledger.lookupByKey(message.threadId, message.idempotencyKey),
      )
      if (existing !== undefined) {
        if (existing.agentId !== message.agentId)
          return yield* refuse(
            "idempotency-conflict",
            `key ${message.idempotencyKey} was used for another agent`,
          )
        // Only a repeat of this parent's own admission joins it: another parent's child, or a
        // Submission admitted outside any parent, would never report its settlement here. One
        // that settled already has nothing left to report: with `joinSettled` it answers that.
        const own =
          existing.parent?.submissionId === parent.submissionId && existing.parent.step === parent.step
        if (!own && message.joinSettled === true && existing.state === "settled")
          return admittedReply(existing, true)
        if (!own)
          return yield* refuse(
            "idempotency-conflict",
            existing.parent?.submissionId === parent.submissionId
              ? `key ${message.idempotencyKey} names a Submission (${existing.submissionId}) this parent started at its call ${existing.parent.step}, not at this one`
              : `key ${message.idempotencyKey} names a Submission (${existing.submissionId}) ${NOT_STARTED_BY_THIS_PARENT}`,
          )
        // A repeat: the original admission, finished if an older release cut it short.
        if (existing.state === "admitted") yield* materialize(env, existing)
        return admittedReply(existing, true)
      }
      if (parent.address.objectId !== undefined && parent.address.objectId === env.self.objectId) {
        if (parent.threadId === message.threadId)
          return yield* refuse("same-thread", `a child cannot run in its parent's Thread ${message.threadId}`)
      }
      const encoded = yield* Effect.result(encodeFor(env, message))
      if (encoded._tag === "Failure") return yield* refuse(encoded.failure.reason, encoded.failure.message)
      const { agent } = encoded.success
      if (agent.digest !== message.agentDigest) {
        return yield* refuse(
          "digest-mismatch",
          `agent ${message.agentId} is registered here with digest ${agent.digest}, but the parent expects ${message.agentDigest}`,
        )
      }
      const room = yield* Effect.result(env.capacity.check(message.threadId))
      if (room._tag === "Failure") return yield* refuse(room.failure.reason, room.failure.message)
      const admitted = yield* Effect.result(
        admitRow(env, admissionCheckOf(agent, message, encoded.success.encoded), { parent }),
      )
      if (admitted._tag === "Failure") {
        const failure = admitted.failure
        switch (failure._tag) {
          case "AdmissionRefused":
            return yield* refuse(failure.reason, failure.message)
          case "IdempotencyConflict":
            return yield* refuse("idempotency-conflict", failure.message)
          default:
            return yield* Effect.fail(failure)
        }
      }
      const row = admitted.success.snapshot
      yield* env.hit("child:after-admit")
      yield* env.wake.notify(row.threadId)
      return admittedReply(row, false)
    }),
  )

const admittedReply = (row: SubmissionSnapshot, replayed: boolean): Reply<"AdmitChild"> => ({
  _tag: "ChildAdmitted",
  submissionId: row.submissionId,
  receiptId: row.receiptId,
  replayed,
  ...(row.state === "settled" && row.settlement !== undefined
    ? {
        settled: {
          outcome: row.settlement.outcome,
          ...(row.settlement.output === undefined ? {} : { output: row.settlement.output }),
          ...(row.settlement.error === undefined ? {} : { error: row.settlement.error }),
        },
      }
    : {}),
})

const abortChild = (env: RuntimeEnv, message: Extract<ThreadMessage, { readonly _tag: "AbortChild" }>) =>
  Effect.gen(function* () {
    const found = yield* env.ledger.lookupByKey(message.threadId, message.idempotencyKey)
    if (Option.isNone(found))
      return { _tag: "ChildAbortRecorded", known: false } satisfies Reply<"AbortChild">
    const row = found.value
    yield* env.exclusive(
      Effect.gen(function* () {
        const current = yield* env.ledger.lookup(row.submissionId)
        const state = Option.getOrUndefined(current)?.state
        if (state === undefined || state === "settled" || state === "terminalizing") return
        yield* env.ledger
          .requestAbort(row.submissionId)
          .pipe(Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(OPERATION)(missing))))
        yield* env.hit("abort:after-intent")
      }),
    )
    yield* env.wake.notify(row.threadId)
    return { _tag: "ChildAbortRecorded", known: true } satisfies Reply<"AbortChild">
  })

/** `receive`. @internal */
export const makeReceive =
  (env: RuntimeEnv) =>
  <M extends ThreadMessage>(
    message: M,
    messageId: string,
  ): Effect.Effect<Reply<M["_tag"]>, DurableWorkerFailure> => {
    const reply = (): Effect.Effect<ThreadMessageReply, DurableWorkerFailure> => {
      switch (message._tag) {
        case "AdmitChild":
          return admitChild(
            env,
            message as Extract<ThreadMessage, { readonly _tag: "AdmitChild" }>,
            messageId,
          )
        case "AbortChild":
          return abortChild(env, message as Extract<ThreadMessage, { readonly _tag: "AbortChild" }>)
        case "ChildSettled": {
          const settled = message as Extract<ThreadMessage, { readonly _tag: "ChildSettled" }>
          return env
            .exclusive(
              Effect.tap(
                applyChildOutcome(env, settled.parentSubmissionId, settled.step, {
                  childSubmissionId: settled.childSubmissionId,
                  outcome: settled.outcome,
                  ...(settled.output === undefined ? {} : { output: settled.output }),
                  ...(settled.error === undefined ? {} : { error: settled.error }),
                  ...(settled.childIdempotencyKey === undefined
                    ? {}
                    : { childKey: settled.childIdempotencyKey }),
                }),
                // The child's settlement proves its admission arrived, even when the reply to it
                // was lost: the admission is sent no more, so a retention window that removes
                // the settled child is not followed by an admission that would start it again.
                // A settlement of another child proves nothing about this parent's admission.
                (applied) =>
                  applied === "foreign"
                    ? Effect.void
                    : Effect.flatMap(Clock.currentTimeMillis, (now) =>
                        env.outbox.acknowledge(
                          messageIds.admitChild(settled.parentSubmissionId, settled.step),
                          now,
                        ),
                      ),
              ),
            )
            .pipe(
              Effect.map((applied) => ({ _tag: "ChildSettledRecorded", applied: applied === true }) as const),
            )
        }
      }
    }
    return Effect.suspend(reply).pipe(
      withSpanFast("DurableAgentRuntime.receive", { attributes: { kind: message._tag } }),
    ) as Effect.Effect<Reply<M["_tag"]>, DurableWorkerFailure>
  }

/** Whether recording `outcome` changes native work, so the host advances the generation. @internal */
export const deliveryInvalidatesRecovery = (row: OutboxMessage, outcome: DeliveryOutcome): boolean => {
  switch (row.message._tag) {
    case "AdmitChild":
      // A refused child settles in its parent, which may run again, as does a settled one.
      return (
        outcome._tag === "Undeliverable" ||
        outcome.reply._tag !== "ChildAdmitted" ||
        outcome.reply.settled !== undefined
      )
    case "ChildSettled":
    case "AbortChild":
      // The child settled with its marker: the acknowledgement changes no native work.
      return false
  }
}

/**
 * Whether a message that can never be delivered is recorded as such rather than retried. An
 * admission ends as the child's failure, and an abort ends unsent (a child it cannot reach
 * runs on, as one its parent stopped awaiting does); only a settlement marker waits, because
 * its parent must hear it. @internal
 */
export const undeliverableIsFinal = (row: OutboxMessage): boolean => row.message._tag !== "ChildSettled"

/** `recordDelivery`. @internal */
export const makeRecordDelivery = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.recordDelivery")(function* (row: OutboxMessage, outcome: DeliveryOutcome) {
    const message = row.message
    switch (message._tag) {
      case "AdmitChild": {
        const reply = outcome._tag === "Replied" ? outcome.reply : undefined
        if (reply?._tag !== "ChildAdmitted") {
          const reason = reply?._tag === "ChildRefused" ? reply.reason : undefined
          const text =
            reply?._tag === "ChildRefused"
              ? reply.message
              : outcome._tag === "Undeliverable"
                ? outcome.message
                : `unexpected reply ${reply?._tag}`
          yield* env.exclusive(
            applyChildOutcome(env, message.parent.submissionId, message.parent.step, {
              outcome: "failed",
              error: `the child could not be admitted: ${text}`,
              ...(reason === undefined ? {} : { refused: reason }),
            }),
          )
          // No child of this parent was admitted: the abort an aborted parent queued behind this
          // admission would find the key's other Submission (another caller's) and abort it. It
          // is dropped before the admission is acknowledged, which would make it due.
          yield* env.outbox.acknowledge(
            messageIds.abortChild(message.parent.submissionId, message.parent.step),
            yield* Clock.currentTimeMillis,
          )
        } else if (reply.settled !== undefined) {
          // A repeat of the admission of a child that settled: its marker may have been heard
          // (and acknowledged) by an earlier admission of this parent's id, never by this one.
          const { settled } = reply
          yield* env.exclusive(
            applyChildOutcome(env, message.parent.submissionId, message.parent.step, {
              childSubmissionId: reply.submissionId,
              outcome: settled.outcome,
              ...(settled.output === undefined ? {} : { output: settled.output }),
              ...(settled.error === undefined ? {} : { error: settled.error }),
              childKey: message.idempotencyKey,
            }),
          )
        }
        break
      }
      case "ChildSettled":
        // Never final: a settlement marker is retried until its parent acknowledges it.
        if (outcome._tag === "Undeliverable") return
        yield* env.outbox.acknowledge(row.messageId, yield* Clock.currentTimeMillis)
        yield* env.hit("child:after-marker-ack")
        return
      case "AbortChild":
        break
    }
    const now = yield* Clock.currentTimeMillis
    yield* env.outbox.acknowledge(row.messageId, now)
  })

/** The child definition a parent's handle carries, for decoding its output. @internal */
export type ChildAgent = AgentDefinition<unknown, unknown>
