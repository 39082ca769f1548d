/**
 * Subagents across Objects: what a Thread does with the messages of other Objects' runtimes
 * (a child's admission, a child's settlement, an abort for a child) and with the outcome of
 * delivering its own.
 *
 * Every receiver deduplicates by what the message names: the child's idempotency key, at
 * most one `ChildSettled` record per started child, the abort flag. The parent's side records
 * a child's settlement (or the refusal of its admission) as an input record of the parent,
 * and makes a parent parked on that child runnable in the same step. The child's side
 * finalizes its settlement only once the parent acknowledged it, so a child evicted after
 * finalization never leaves a parent waiting.
 */
import { Clock, Effect, Option } from "effect"
import type { AgentDefinition } from "../../AgentRegistration.ts"
import type { SubmissionId } from "../../Identifiers.ts"
import { unownedFence } from "../ledger/rules.ts"
import type { Settlement, SubmissionSnapshot } from "../ledger/model.ts"
import {
  type ChildRefusalReason,
  type DeliveryOutcome,
  messageIds,
  type NewMessage,
  type OutboxMessage,
  type ThreadMessage,
  type ThreadMessageReplies,
  type ThreadMessageReply,
} from "../outbox/model.ts"
import type { HistoryEntry } from "../history/model.ts"
import { loadJournal, type RuntimeEnv, vanished } from "./env.ts"
import type { Journal } from "./journal.ts"
import type { DurableWorkerFailure } from "./model.ts"
import { admitRow, materialize, prepare } from "./admission.ts"

const operation = "DurableAgentRuntime.receive"

type Reply<K extends ThreadMessage["_tag"]> = ThreadMessageReplies[K]

/** What a settled (or refused) child reports to its parent. */
interface ChildOutcome {
  readonly childSubmissionId?: SubmissionId
  readonly outcome: Settlement["outcome"]
  readonly output?: Settlement["output"]
  readonly error?: string
  readonly refused?: ChildRefusalReason
}

/**
 * Records a child's outcome in its parent, at most once, and makes a parent parked on that
 * child runnable. `false` when nothing was applied: a repeat, a parent that already settles,
 * or no such child. Callers hold the runtime's lock.
 */
const applyChildOutcome = (env: RuntimeEnv, parentId: SubmissionId, step: number, outcome: ChildOutcome) =>
  Effect.gen(function* () {
    const found = yield* env.ledger.lookup(parentId)
    if (Option.isNone(found)) {
      yield* Effect.logWarning("A child's settlement names no Submission of this Object", { parentId, step })
      return false
    }
    const parent = found.value
    if (parent.state === "terminalizing" || parent.state === "settled") return false
    const journal = yield* loadJournal(env, parentId)
    if (journal.childSettled.has(step)) return false
    if (journal.positions.get(step)?.childStarted === undefined) {
      yield* Effect.logError("A child's settlement names no child its parent started", { parentId, step })
      return false
    }
    const now = yield* Clock.currentTimeMillis
    const entry: HistoryEntry = {
      _tag: "ChildSettled",
      step,
      outcome: outcome.outcome,
      ...(outcome.childSubmissionId === undefined ? {} : { childSubmissionId: outcome.childSubmissionId }),
      ...(outcome.output === undefined ? {} : { output: outcome.output }),
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
      ...(outcome.refused === undefined ? {} : { refused: outcome.refused }),
    }
    const appended = yield* env.history
      .append(parentId, entry, { _tag: "Input", submissionId: parentId }, now)
      .pipe(
        Effect.as(true),
        // The parent began to settle meanwhile: it no longer takes input.
        Effect.catchTag("FenceRejected", () => Effect.succeed(false)),
        Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))),
      )
    if (!appended) return false
    yield* env.hit("child:after-settled-append")
    if (parent.state === "suspended" && journal.openChildWait?.child === step) {
      // A racing writer moved the parent first: recovery resumes it from the journal.
      yield* env.ledger.transition(unownedFence(parent, now), "ready").pipe(
        Effect.catchTags({
          FenceRejected: () => Effect.void,
          InvalidTransition: () => Effect.void,
          OwnershipLost: () => Effect.void,
          SubmissionNotFound: (missing) => Effect.fail(vanished(operation)(missing)),
        }),
      )
    }
    yield* env.wake.notify(parent.threadId)
    return true
  })

const refusal = (reason: ChildRefusalReason, message: string): Reply<"AdmitChild"> => ({
  _tag: "ChildRefused",
  reason,
  message,
})

/**
 * Admits a child, or answers why its Thread refuses it. The answer to a refusal is remembered
 * under the message's id, so a late duplicate of the message (an attempt that outlived its
 * timeout) is refused too: a child its parent was told is refused never runs. The whole
 * decision runs under the runtime's lock, so two deliveries of one message never disagree.
 */
const admitChild = (
  env: RuntimeEnv,
  message: Extract<ThreadMessage, { readonly _tag: "AdmitChild" }>,
  messageId: string,
) =>
  env.exclusive(
    Effect.gen(function* () {
      const remembered = yield* env.outbox.answerOf(messageId)
      if (Option.isSome(remembered) && remembered.value._tag === "ChildRefused") return remembered.value
      const refuse = (reason: ChildRefusalReason, text: string) =>
        Effect.gen(function* () {
          const reply = refusal(reason, text)
          yield* env.outbox.rememberAnswer(messageId, reply, yield* Clock.currentTimeMillis)
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
        // A repeat: the original admission, finished if it was cut short.
        if (existing.state === "admitted") yield* materialize(env, existing)
        return admittedReply(existing, true)
      }
      if (parent.address.objectId !== undefined && parent.address.objectId === env.self.objectId) {
        if (parent.threadId === message.threadId)
          return yield* refuse("same-thread", `a child cannot run in its parent's Thread ${message.threadId}`)
      }
      const prepared = yield* Effect.result(
        prepare(env, { threadId: message.threadId, agentId: message.agentId, input: message.input }),
      )
      if (prepared._tag === "Failure") {
        const refused = prepared.failure
        return yield* refuse(
          refused.reason === "queue-depth" ? "input-bytes" : refused.reason,
          refused.message,
        )
      }
      if (prepared.success.agent.digest !== message.agentDigest) {
        return yield* refuse(
          "digest-mismatch",
          `agent ${message.agentId} is registered here with digest ${prepared.success.agent.digest}, but the parent expects ${message.agentDigest}`,
        )
      }
      const admitted = yield* Effect.result(
        admitRow(env, prepared.success.agent, {
          threadId: message.threadId,
          idempotencyKey: message.idempotencyKey,
          input: prepared.success.encoded,
          parent,
        }),
      )
      if (admitted._tag === "Failure") {
        const failure = admitted.failure
        switch (failure._tag) {
          case "AdmissionRefused":
            return yield* refuse(
              failure.reason === "queue-depth" ? "queue-depth" : "input-bytes",
              failure.message,
            )
          case "IdempotencyConflict":
            return yield* refuse("idempotency-conflict", failure.message)
          default:
            return yield* Effect.fail(failure)
        }
      }
      const row = admitted.success.snapshot
      yield* env.hit("child:after-admit")
      yield* materialize(env, row, { accepted: false })
      yield* env.wake.notify(row.threadId)
      return admittedReply(row, false)
    }),
  )

const admittedReply = (row: SubmissionSnapshot, replayed: boolean): Reply<"AdmitChild"> => ({
  _tag: "ChildAdmitted",
  submissionId: row.submissionId,
  receiptId: row.receiptId,
  replayed,
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
          .pipe(Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))))
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
              applyChildOutcome(env, settled.parentSubmissionId, settled.step, {
                childSubmissionId: settled.childSubmissionId,
                outcome: settled.outcome,
                ...(settled.output === undefined ? {} : { output: settled.output }),
                ...(settled.error === undefined ? {} : { error: settled.error }),
              }),
            )
            .pipe(Effect.map((applied) => ({ _tag: "ChildSettledRecorded", applied }) as const))
        }
      }
    }
    return Effect.suspend(reply).pipe(
      Effect.withSpan("DurableAgentRuntime.receive", { attributes: { kind: message._tag } }),
    ) as Effect.Effect<Reply<M["_tag"]>, DurableWorkerFailure>
  }

/** Whether recording `outcome` changes native work, so the host advances the generation. @internal */
export const deliveryInvalidatesRecovery = (row: OutboxMessage, outcome: DeliveryOutcome): boolean => {
  switch (row.message._tag) {
    case "AdmitChild":
      // A refused child settles in its parent, which may run again.
      return outcome._tag === "Undeliverable" || outcome.reply._tag !== "ChildAdmitted"
    case "ChildSettled":
      // The acknowledged child finalizes, which unblocks its lane.
      return true
    case "AbortChild":
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
  Effect.fn("DurableAgentRuntime.recordDelivery")(function* (row: OutboxMessage, outcome: DeliveryOutcome) {
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
        }
        break
      }
      case "ChildSettled": {
        if (outcome._tag === "Undeliverable") return
        // The acknowledgement first: a crash before the finalization leaves a child whose
        // acknowledged settlement recovery finalizes, never a finalized child still owing it.
        yield* env.outbox.acknowledge(row.messageId, yield* Clock.currentTimeMillis)
        yield* env.hit("child:after-marker-ack")
        yield* env
          .exclusive(
            Effect.gen(function* () {
              const child = yield* env.ledger.lookup(message.childSubmissionId)
              if (Option.isSome(child) && child.value.state === "terminalizing")
                yield* env.ledger
                  .finalizeSettlement(message.childSubmissionId)
                  .pipe(Effect.catchTag("InvalidTransition", () => Effect.void))
            }),
          )
          .pipe(Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))))
        return
      }
      case "AbortChild":
        break
    }
    const now = yield* Clock.currentTimeMillis
    yield* env.outbox.acknowledge(row.messageId, now)
  })

/** The marker a child with a parent sends when its settlement is recorded. @internal */
export const settlementMarker = (
  row: SubmissionSnapshot,
  settlement: Settlement,
): ReadonlyArray<NewMessage> =>
  row.parent === undefined
    ? []
    : [
        {
          messageId: messageIds.childSettled(row.submissionId),
          target: row.parent.address,
          message: {
            _tag: "ChildSettled",
            parentSubmissionId: row.parent.submissionId,
            step: row.parent.step,
            childSubmissionId: row.submissionId,
            outcome: settlement.outcome,
            ...(settlement.output === undefined ? {} : { output: settlement.output }),
            ...(settlement.error === undefined ? {} : { error: settlement.error }),
          },
        },
      ]

/**
 * The aborts an aborted parent sends to the children it started that have not settled; each
 * waits for its child's admission to be acknowledged.
 * @internal
 */
export const childAborts = (parentId: SubmissionId, journal: Journal): ReadonlyArray<NewMessage> =>
  [...journal.positions.entries()].flatMap(([step, position]) => {
    const started = position.childStarted
    if (started === undefined || journal.childSettled.has(step)) return []
    return [
      {
        messageId: messageIds.abortChild(parentId, step),
        target: started.target,
        message: { _tag: "AbortChild", threadId: started.threadId, idempotencyKey: started.idempotencyKey },
        dependsOn: messageIds.admitChild(parentId, step),
      } satisfies NewMessage,
    ]
  })

/** The child definition a parent's handle carries, for decoding its output. @internal */
export type ChildAgent = AgentDefinition<unknown, unknown>
