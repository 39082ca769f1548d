/**
 * The steps of admission shared by submissions, children and joins: check the agent and
 * decode the input before anything is written, admit the row (the ledger checks its limits
 * and the idempotency key first), record `SubmissionAccepted`, mark the row ready and hint the
 * host. Recovery repairs a crash between these writes; a replayed admission of a half-admitted
 * row finishes it too.
 */
import { Clock, Effect, Option, Schema } from "effect"
import type { AnyAgentDefinition } from "../../AgentRegistration.ts"
import { Receipt, type SubmitRequest } from "./model.ts"
import type { IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import type { ParentLink } from "../outbox/parentLink.ts"
import { canonicalJson, contentDigest } from "../digest.ts"
import {
  AdmissionRefused,
  LedgerError,
  type SubmissionSnapshot,
  SubmissionLedgerLimits,
} from "../ledger/model.ts"
import { unownedFence, utf8ByteLength } from "../ledger/rules.ts"
import { loadJournal, vanished, type RuntimeEnv } from "./env.ts"

/** @internal */
export const refuse = (threadId: ThreadId, reason: AdmissionRefused["reason"], message: string) =>
  new AdmissionRefused({ threadId, reason, message })

const parsePayload = (operation: string, row: SubmissionSnapshot) =>
  Effect.try({
    try: () => JSON.parse(row.inputPayload) as Schema.Json,
    catch: (cause) =>
      new LedgerError({ operation, message: `stored input of ${row.submissionId} is not JSON`, cause }),
  })

/**
 * Records `SubmissionAccepted` unless the history holds it, then marks the row ready. Callers
 * hold the runtime's lock, so admission and recovery never both record the acceptance. A
 * caller that already knows whether the record exists (a row admitted just now has none;
 * recovery read the journal) passes `accepted` and saves reading the history again.
 * @internal
 */
export const materialize = (
  env: RuntimeEnv,
  row: SubmissionSnapshot,
  known?: { readonly accepted: boolean },
) =>
  Effect.gen(function* () {
    const operation = "DurableAgentRuntime.materialize"
    yield* accept(env, row, known, row.host)
    // A join completes while its host can still take it; otherwise it runs as ordinary input.
    if (row.host !== undefined && (yield* hostTakesJoins(env, row.host))) {
      yield* env.ledger.claimJoining(row.submissionId, row.host).pipe(
        Effect.catchTag("InvalidTransition", () => Effect.void),
        Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))),
      )
      yield* env.hit("join:after-claim")
      return
    }
    const now = yield* Clock.currentTimeMillis
    // A row that moved on (an accepted abort settled it meanwhile) needs no readiness.
    yield* env.ledger.markReady(row.submissionId, now).pipe(
      Effect.catchTag("InvalidTransition", () => Effect.void),
      Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))),
    )
  })

/**
 * Records `SubmissionAccepted` (with the parent link of a child, or the host of a join) unless
 * the history holds it. Callers hold the runtime's lock.
 * @internal
 */
export const accept = (
  env: RuntimeEnv,
  row: SubmissionSnapshot,
  known?: { readonly accepted: boolean },
  host?: SubmissionId,
) =>
  Effect.gen(function* () {
    const operation = "DurableAgentRuntime.materialize"
    const accepted = known?.accepted ?? (yield* loadJournal(env, row.submissionId)).accepted
    if (accepted) return
    const now = yield* Clock.currentTimeMillis
    const input = yield* parsePayload(operation, row)
    yield* env.history
      .append(
        row.submissionId,
        {
          _tag: "SubmissionAccepted",
          agentId: row.agentId,
          agentDigest: row.agentDigest,
          input,
          ...(row.parent === undefined ? {} : { parent: row.parent }),
          ...(host === undefined ? {} : { host }),
        },
        unownedFence(row, now),
        now,
      )
      .pipe(Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))))
  })

/** An admission whose input the agent's Schema already encoded. @internal */
export interface EncodedAdmission {
  readonly threadId: ThreadId
  readonly idempotencyKey: IdempotencyKey
  readonly input: Schema.Json
  /** The parent Submission that started this one as its child. */
  readonly parent?: ParentLink
  /** The lane head whose run a join delivers into. */
  readonly host?: SubmissionId
}

/** Admits an input already encoded by the agent's input Schema. @internal */
export const admitEncoded = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  agent: AnyAgentDefinition,
  request: Omit<EncodedAdmission, "host">,
) {
  const admission = yield* admitRow(env, agent, request)
  yield* env.hit(request.parent === undefined ? "submit:after-admit" : "child:after-admit")
  const row = admission.snapshot
  if (admission._tag === "Admitted" || row.state === "admitted") {
    // A new Submission id has no records yet; a replayed half-admitted row may have one.
    yield* env.exclusive(
      materialize(env, row, admission._tag === "Admitted" ? { accepted: false } : undefined),
    )
    yield* env.wake.notify(row.threadId)
  }
  return receiptOf(row, admission._tag === "Replayed")
})

/** Whether `host` is still a lane head that reads joins: nonterminal, not settling, not aborted. @internal */
export const hostTakesJoins = (env: RuntimeEnv, host: SubmissionId) =>
  Effect.map(env.ledger.lookup(host), (found) => {
    const row = Option.getOrUndefined(found)
    return (
      row !== undefined &&
      !row.abortRequested &&
      ["ready", "running", "suspended", "unknown"].includes(row.state)
    )
  })

/** Writes the ledger row of an admission (or finds the row of a used key). @internal */
export const admitRow = (env: RuntimeEnv, agent: AnyAgentDefinition, request: EncodedAdmission) =>
  Effect.gen(function* () {
    const inputPayload = canonicalJson(request.input)
    const now = yield* Clock.currentTimeMillis
    return yield* env.ledger.admit({
      threadId: request.threadId,
      idempotencyKey: request.idempotencyKey,
      agentId: agent.id,
      agentDigest: agent.digest,
      inputPayload,
      inputDigest: contentDigest(inputPayload),
      now,
      ...(request.parent === undefined ? {} : { parent: request.parent }),
      ...(request.host === undefined ? {} : { host: request.host }),
    })
  })

/** The receipt of a row. @internal */
export const receiptOf = (row: SubmissionSnapshot, replayed: boolean): Receipt =>
  new Receipt({
    receiptId: row.receiptId,
    submissionId: row.submissionId,
    threadId: row.threadId,
    queueSequence: row.queueSequence,
    replayed,
    ...(row.host === undefined ? {} : { host: row.host }),
  })

/**
 * The registered agent and the canonically encoded input of a request, or the refusal that
 * names what is wrong: an unknown agent, a malformed input, or an input over the byte limit.
 * Reads nothing from storage.
 * @internal
 */
export const prepare = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  request: Pick<SubmitRequest, "threadId" | "agentId" | "input">,
) {
  const found = env.registry.lookup(request.agentId)
  if (Option.isNone(found)) {
    return yield* refuse(
      request.threadId,
      "unknown-agent",
      `no agent ${request.agentId} is registered in this deployment`,
    )
  }
  const agent = found.value
  const malformed = (cause: Schema.SchemaError) =>
    refuse(
      request.threadId,
      "malformed-input",
      `the input of agent ${agent.id} is malformed: ${cause.message}`,
    )
  const input: unknown = yield* Schema.decodeUnknownEffect(agent.input)(request.input).pipe(
    Effect.mapError(malformed),
  )
  const encoded = yield* Schema.encodeUnknownEffect(agent.input)(input).pipe(Effect.mapError(malformed))
  const limits = yield* SubmissionLedgerLimits
  const bytes = utf8ByteLength(canonicalJson(encoded))
  if (bytes > limits.maxInputBytes) {
    return yield* refuse(
      request.threadId,
      "input-bytes",
      `the input is ${bytes} bytes; the limit is ${limits.maxInputBytes}`,
    )
  }
  return { agent, encoded }
})
