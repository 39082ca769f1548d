/**
 * Joined input: a follow-up Submission admitted as input of its lane's running head (the
 * host) instead of queueing behind it.
 *
 * Admission records it `joining` with its host (the row and its acceptance in one transaction,
 * which checks that the host still takes joins); the host's program reads it at a step boundary
 * (`receiveJoined`: one `InputJoined` record, then `joined`); a joined Submission settles with
 * its host. If the host ends before reading it, the join reverts and runs as ordinary queued
 * input. Recovery repairs a crash between any two of these writes.
 */
import { Clock, Effect, Option } from "effect"
import type { AnyAgentDefinition } from "../../../AgentRegistration.ts"
import type { SubmissionId, ThreadId } from "../../../Identifiers.ts"
import { type AdmissionCheck, LedgerError, Settlement, type SubmissionSnapshot } from "../../ledger/model.ts"
import { takesJoins, unownedFence } from "../../ledger/rules.ts"
import { admitQueued, admitRow, receiptOf } from "../admission/admitRow.ts"
import { type RuntimeEnv, vanished } from "../shared/runtimeEnv.ts"
import { JoinRefused } from "../shared/model.ts"
import { settle } from "../settlement/settle.ts"

const OPERATION = "DurableAgentRuntime.join"

/** Why the lane's head cannot take `agent`'s input as a join; undefined when it can. @internal */
export const joinRefusal = (
  head: SubmissionSnapshot | undefined,
  agent: AnyAgentDefinition,
): JoinRefused["reason"] | undefined => {
  if (head === undefined) return "no-running-head"
  if (head.abortRequested) return "head-aborting"
  if (!takesJoins(head)) return "no-running-head"
  if (head.agentId !== agent.id || head.agentDigest !== agent.digest) return "other-agent"
  if (!agent.acceptsJoinedInput) return "not-joinable"
  return undefined
}

const refusalMessage = (reason: JoinRefused["reason"], threadId: ThreadId, agent: AnyAgentDefinition) => {
  switch (reason) {
    case "no-running-head":
      return `thread ${threadId} has no running Submission to join`
    case "head-aborting":
      return `the running Submission of thread ${threadId} is being aborted`
    case "other-agent":
      return `the running Submission of thread ${threadId} runs another agent than ${agent.id}`
    case "not-joinable":
      return `agent ${agent.id} takes no joined input`
    case "delayed":
      return `a join runs with the head of thread ${threadId} at once: it cannot take notBefore`
  }
}

const refused = (threadId: ThreadId, reason: JoinRefused["reason"], agent: AnyAgentDefinition) =>
  new JoinRefused({ threadId, reason, message: refusalMessage(reason, threadId, agent) })

/** The agent a prepared Submission names; `admit` checked it is registered here. */
const agentOf = (env: RuntimeEnv, prepared: AdmissionCheck) =>
  Option.match(env.registry.lookup(prepared.agentId), {
    onNone: () =>
      Effect.fail(
        new LedgerError({
          operation: OPERATION,
          message: `agent ${prepared.agentId} is not registered in this deployment`,
        }),
      ),
    onSome: (agent) => Effect.succeed(agent),
  })

/** Refuses a join that the lane's head cannot take now, before anything is written. @internal */
export const checkJoin = (env: RuntimeEnv, agent: AnyAgentDefinition, threadId: ThreadId) =>
  Effect.flatMap(env.ledger.head(threadId), (head) => {
    const reason = joinRefusal(Option.getOrUndefined(head), agent)
    return reason === undefined ? Effect.void : Effect.fail(refused(threadId, reason, agent))
  })

/**
 * Admits `prepared` as a join of its lane's head, or refuses (`join`) or queues it
 * (`join-or-queue`) when the head cannot take it. The admission names the head as its host and
 * checks again, in its transaction, that the host still takes joins: one that ended meanwhile
 * leaves an ordinary queued Submission (it was accepted: it is never refused then). A key
 * admitted by another caller since this one was prepared replays, even once its host has ended.
 * @internal
 */
export const admitJoin = (env: RuntimeEnv, prepared: AdmissionCheck, mode: "join" | "join-or-queue") =>
  Effect.gen(function* () {
    const agent = yield* agentOf(env, prepared)
    const joined = yield* env.exclusive(
      Effect.gen(function* () {
        const head = Option.getOrUndefined(yield* env.ledger.head(prepared.threadId))
        const reason = joinRefusal(head, agent)
        if (reason !== undefined || head === undefined) {
          // A key admitted since `prepare` checked it (its host may have ended since) replays.
          const used = yield* env.ledger.lookupByKey(prepared.threadId, prepared.idempotencyKey)
          if (Option.isSome(used)) return { _tag: "Used" } as const
          return { _tag: "Refused", reason: reason ?? "no-running-head" } as const
        }
        const admission = yield* admitRow(env, prepared, { host: head.submissionId })
        const row = admission.snapshot
        if (admission._tag === "Admitted") {
          yield* env.hit(row.state === "joining" ? "join:after-claim" : "submit:after-admit")
        }
        return { _tag: "Admitted", row, replayed: admission._tag === "Replayed" } as const
      }),
    )
    if (joined._tag === "Used") return yield* admitQueued(env, prepared)
    if (joined._tag === "Refused") {
      if (mode === "join-or-queue") return yield* admitQueued(env, prepared)
      return yield* refused(prepared.threadId, joined.reason, agent)
    }
    yield* env.wake.notify(prepared.threadId)
    return receiptOf(joined.row, joined.replayed)
  })

/** The settlement of a joined Submission: its host's, naming the host. */
const withHost = (join: SubmissionSnapshot, host: Settlement, settledAt: number) =>
  new Settlement({
    submissionId: join.submissionId,
    threadId: join.threadId,
    outcome: host.outcome,
    settledAt,
    host: host.submissionId,
    ...(host.output === undefined ? {} : { output: host.output }),
    ...(host.error === undefined ? {} : { error: host.error }),
  })

/** Settles one joined Submission with its host's settlement. Callers hold the runtime's lock. @internal */
export const settleJoined = (env: RuntimeEnv, join: SubmissionSnapshot, host: Settlement) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    yield* settle(env, unownedFence(join, now, env.incarnation), join, withHost(join, host, now))
  })

/** Reverts one join whose host ended before reading it. Callers hold the runtime's lock. @internal */
export const revertJoin = (env: RuntimeEnv, join: SubmissionSnapshot) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    yield* env.ledger
      .revertJoining(join.submissionId, now)
      .pipe(Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(OPERATION)(missing))))
    yield* env.wake.notify(join.threadId)
  })

/**
 * After a host's settlement is recorded: its joined Submissions settle with it and its joins
 * not yet read revert. A join that moved on meanwhile is left to recovery.
 * @internal
 */
export const finishJoinsOf = (
  env: RuntimeEnv,
  host: { readonly threadId: ThreadId; readonly submissionId: SubmissionId },
  settlement: Settlement,
) =>
  env.exclusive(
    Effect.gen(function* () {
      const joins = yield* env.ledger.joinsOf(host.threadId, host.submissionId)
      for (const join of joins) {
        const done = join.state === "joined" ? settleJoined(env, join, settlement) : revertJoin(env, join)
        yield* done.pipe(
          Effect.catchTags({
            FenceRejected: () => Effect.void,
            InvalidTransition: () => Effect.void,
            OwnershipLost: () => Effect.void,
            SubmissionNotFound: (missing) => Effect.fail(vanished(OPERATION)(missing)),
          }),
        )
      }
    }),
  )
