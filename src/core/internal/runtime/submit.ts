/**
 * Admission: check the agent and decode the input before anything is written, admit the row
 * (the ledger checks its limits and the idempotency key first), record `SubmissionAccepted`,
 * mark the row ready and hint the host. Recovery repairs a crash between these writes; a
 * replayed submit of a half-admitted row finishes it too.
 */
import { Clock, Effect, Option, Schema } from "effect"
import type { AgentDefinition, AnyAgentDefinition } from "../../AgentRegistration.ts"
import { Receipt, type SubmitRequest } from "./model.ts"
import type { IdempotencyKey, ThreadId } from "../../Identifiers.ts"
import { canonicalJson, contentDigest } from "../digest.ts"
import {
  AdmissionRefused,
  LedgerError,
  type SubmissionSnapshot,
  SubmissionLedgerLimits,
} from "../ledger/model.ts"
import { unownedFence, utf8ByteLength } from "../ledger/rules.ts"
import { loadJournal, vanished, type RuntimeEnv } from "./env.ts"

const refuse = (threadId: ThreadId, reason: AdmissionRefused["reason"], message: string) =>
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
    const accepted = known?.accepted ?? (yield* loadJournal(env, row.submissionId)).accepted
    const now = yield* Clock.currentTimeMillis
    if (!accepted) {
      const fence = unownedFence(row, now)
      const input = yield* parsePayload(operation, row)
      yield* env.history
        .append(
          row.submissionId,
          { _tag: "SubmissionAccepted", agentId: row.agentId, agentDigest: row.agentDigest, input },
          fence,
          now,
        )
        .pipe(Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))))
    }
    // A row that moved on (an accepted abort settled it meanwhile) needs no readiness.
    yield* env.ledger.markReady(row.submissionId, now).pipe(
      Effect.catchTag("InvalidTransition", () => Effect.void),
      Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))),
    )
  })

/** Admits an input already encoded by the agent's input Schema. @internal */
export const admitEncoded = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  agent: AnyAgentDefinition,
  request: {
    readonly threadId: ThreadId
    readonly idempotencyKey: IdempotencyKey
    readonly input: Schema.Json
  },
) {
  const inputPayload = canonicalJson(request.input)
  const now = yield* Clock.currentTimeMillis
  const admission = yield* env.ledger.admit({
    threadId: request.threadId,
    idempotencyKey: request.idempotencyKey,
    agentId: agent.id,
    agentDigest: agent.digest,
    inputPayload,
    inputDigest: contentDigest(inputPayload),
    now,
  })
  yield* env.hit("submit:after-admit")
  const row = admission.snapshot
  if (admission._tag === "Admitted" || row.state === "admitted") {
    // A new Submission id has no records yet; a replayed half-admitted row may have one.
    yield* env.exclusive(
      materialize(env, row, admission._tag === "Admitted" ? { accepted: false } : undefined),
    )
    yield* env.wake.notify(row.threadId)
  }
  return new Receipt({
    receiptId: row.receiptId,
    submissionId: row.submissionId,
    threadId: row.threadId,
    queueSequence: row.queueSequence,
    replayed: admission._tag === "Replayed",
  })
})

/**
 * The registered agent and the canonically encoded input of a request, or the refusal that
 * names what is wrong: an unknown agent, a malformed input, or an input over the byte limit.
 * Reads nothing from storage.
 */
const prepare = Effect.fnUntraced(function* (env: RuntimeEnv, request: SubmitRequest) {
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

/** `validate`: the checks of `submit` that need no storage. @internal */
export const makeValidate = (env: RuntimeEnv) =>
  Effect.fn("DurableAgentRuntime.validate")(function* (request: SubmitRequest) {
    yield* prepare(env, request)
  })

/** `submit`: the agent must be registered and the input must decode. @internal */
export const makeSubmit = (env: RuntimeEnv) =>
  Effect.fn("DurableAgentRuntime.submit")(function* (request: SubmitRequest) {
    const { agent, encoded } = yield* prepare(env, request)
    return yield* admitEncoded(env, agent, { ...request, input: encoded })
  })

/** `submitRegistered`: a typed input for a registered agent with the same contract. @internal */
export const makeSubmitRegistered = (env: RuntimeEnv) =>
  Effect.fn("DurableAgentRuntime.submitRegistered")(function* <I, O>(
    agent: AgentDefinition<I, O>,
    request: { readonly threadId: ThreadId; readonly idempotencyKey: IdempotencyKey; readonly input: I },
  ) {
    const registered = env.registry.lookup(agent.id)
    if (Option.isNone(registered) || registered.value.digest !== agent.digest) {
      return yield* refuse(
        request.threadId,
        "unknown-agent",
        `agent ${agent.id} with digest ${agent.digest} is not registered in this deployment`,
      )
    }
    const encoded = yield* Schema.encodeEffect(agent.input)(request.input).pipe(
      Effect.mapError((cause) =>
        refuse(
          request.threadId,
          "malformed-input",
          `the input of agent ${agent.id} is malformed: ${cause.message}`,
        ),
      ),
    )
    return yield* admitEncoded(env, registered.value, { ...request, input: encoded })
  })
