/**
 * Joined input: a follow-up Submission admitted as input of its lane's running head (the
 * host) instead of queueing behind it.
 *
 * Admission records it `joining` with its host; the host's program reads it at a step boundary
 * (`receiveJoined`: one `InputJoined` record, then `joined`); a joined Submission settles with
 * its host. If the host ends before reading it, the join reverts and runs as ordinary queued
 * input. Recovery repairs a crash between any two of these writes.
 */
import { Clock, Effect, Option } from "effect"
import type { AnyAgentDefinition } from "../../AgentRegistration.ts"
import type { SubmissionId, ThreadId } from "../../Identifiers.ts"
import { LedgerError, Settlement, type SubmissionSnapshot } from "../ledger/model.ts"
import { unownedFence } from "../ledger/rules.ts"
import { admitEncoded, admitRow, type EncodedAdmission, materialize, receiptOf } from "./admission.ts"
import { type RuntimeEnv, vanished } from "./env.ts"
import { JoinRefused } from "./model.ts"
import { settle } from "./settle.ts"

const operation = "DurableAgentRuntime.join"

/** Why the lane's head cannot take `agent`'s input as a join; undefined when it can. @internal */
export const joinRefusal = (
  head: SubmissionSnapshot | undefined,
  agent: AnyAgentDefinition,
): JoinRefused["reason"] | undefined => {
  if (head === undefined) return "no-running-head"
  if (!["ready", "running", "suspended", "unknown"].includes(head.state)) return "no-running-head"
  if (head.abortRequested) return "head-aborting"
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
  }
}

/**
 * Admits `request` as a join of its lane's head, or refuses (`join`) or queues it
 * (`join-or-queue`) when the head cannot take it. A used key replays its original receipt; a
 * join cut short before it was recorded `joining` is completed by the replay while the head can
 * still take it, and otherwise runs as ordinary input (it was accepted: it is never refused).
 * @internal
 */
export const admitJoin = (
  env: RuntimeEnv,
  agent: AnyAgentDefinition,
  request: Omit<EncodedAdmission, "parent" | "host">,
  mode: "join" | "join-or-queue",
) =>
  Effect.gen(function* () {
    const used = Option.getOrUndefined(
      yield* env.ledger.lookupByKey(request.threadId, request.idempotencyKey),
    )
    // A used key whose admission completed answers with its original receipt.
    if (used !== undefined && used.state !== "admitted") return yield* admitEncoded(env, agent, request)
    const joined = yield* env.exclusive(
      Effect.gen(function* () {
        const head = Option.getOrUndefined(yield* env.ledger.head(request.threadId))
        const reason = joinRefusal(head, agent)
        if (used === undefined && (reason !== undefined || head === undefined))
          return { _tag: "Refused", reason } as const
        // The host is part of the row from its first write: a crash anywhere after it leaves a
        // join that recovery (or this replay) completes while the host can still take it.
        const host = used?.host ?? head?.submissionId
        const admission = yield* admitRow(env, agent, { ...request, ...(host === undefined ? {} : { host }) })
        const row = admission.snapshot
        const replayed = admission._tag === "Replayed"
        if (!replayed) yield* env.hit("submit:after-admit")
        if (row.state === "admitted") yield* materialize(env, row, replayed ? undefined : { accepted: false })
        return { _tag: "Admitted", row: yield* current(env, row), replayed } as const
      }),
    )
    if (joined._tag === "Admitted") {
      yield* env.wake.notify(request.threadId)
      return receiptOf(joined.row, joined.replayed)
    }
    const reason = joined.reason ?? "no-running-head"
    if (mode === "join-or-queue") return yield* admitEncoded(env, agent, request)
    return yield* new JoinRefused({
      threadId: request.threadId,
      reason,
      message: refusalMessage(reason, request.threadId, agent),
    })
  })

/** The row as stored now. */
const current = (env: RuntimeEnv, row: SubmissionSnapshot) =>
  Effect.flatMap(env.ledger.lookup(row.submissionId), (found) =>
    Option.isSome(found)
      ? Effect.succeed(found.value)
      : Effect.fail(new LedgerError({ operation, message: `submission ${row.submissionId} vanished` })),
  )

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
    yield* settle(env, unownedFence(join, now), withHost(join, host, now))
  })

/** Reverts one join whose host ended before reading it. Callers hold the runtime's lock. @internal */
export const revertJoin = (env: RuntimeEnv, join: SubmissionSnapshot) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    yield* env.ledger
      .revertJoining(join.submissionId, now)
      .pipe(Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))))
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
            SubmissionNotFound: (missing) => Effect.fail(vanished(operation)(missing)),
          }),
        )
      }
    }),
  )
