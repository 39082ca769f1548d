/**
 * Admission: resolve the agent, decode and canonically encode the input, and ask the ledger
 * what admission would answer, all once and before anything is written (a host refuses bad
 * input before it opens a mutation); then admit (the ledger checks its limits and the
 * idempotency key again, and records `SubmissionAccepted` in the same transaction: the row is
 * ready at once), and hint the host. A row an older release left `admitted` (between those
 * writes) is finished by recovery, or by a replayed submit.
 */
import { spanned } from "../../spanned.ts"
import { Clock, Effect, Option, Schema } from "effect"
import type { AgentDefinition, AnyAgentDefinition } from "../../../AgentRegistration.ts"
import { type PreparedSubmission, Receipt, type SubmitRequest } from "../shared/model.ts"
import type { AgentId, IdempotencyKey, SubmissionId, ThreadId } from "../../../Identifiers.ts"
import { canonicalJson, contentDigest } from "../../digest.ts"
import {
  type AdmissionCheck,
  AdmissionRefused,
  LedgerError,
  type SubmissionSnapshot,
} from "../../ledger/model.ts"
import type { ParentLink } from "../../outbox/parentLink.ts"
import { admitJoin, checkJoin } from "../children/joins.ts"
import { unownedFence } from "../../ledger/rules.ts"
import { loadJournal, vanished, type RuntimeEnv } from "../shared/runtimeEnv.ts"

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
 * Finishes a row an older release left `admitted`: records `SubmissionAccepted` unless the
 * history holds it, then marks the row ready. Callers hold the runtime's lock, so a replayed
 * submit and recovery never both record the acceptance. Recovery, which read the journal,
 * passes `accepted`.
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
      const fence = unownedFence(row, now, env.incarnation)
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

/**
 * Writes the admission of a checked Submission (the ledger checks its limits again in its
 * transaction), linked to a parent or joining a host if asked. @internal
 */
export const admitRow = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  checkedAdmission: AdmissionCheck,
  link: { readonly parent?: ParentLink; readonly host?: SubmissionId } = {},
) {
  const now = yield* Clock.currentTimeMillis
  return yield* env.ledger.admit({
    threadId: checkedAdmission.threadId,
    idempotencyKey: checkedAdmission.idempotencyKey,
    agentId: checkedAdmission.agentId,
    agentDigest: checkedAdmission.agentDigest,
    inputPayload: checkedAdmission.inputPayload,
    inputDigest: checkedAdmission.inputDigest,
    now,
    ...link,
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

/** Admits a prepared Submission as queued input. @internal */
export const admitQueued = Effect.fnUntraced(function* (env: RuntimeEnv, prepared: AdmissionCheck) {
  const admission = yield* admitRow(env, prepared)
  yield* env.hit("submit:after-admit")
  const row = admission.snapshot
  if (row.state === "admitted") yield* env.exclusive(materialize(env, row))
  if (admission._tag === "Admitted" || row.state === "admitted") yield* env.wake.notify(row.threadId)
  return receiptOf(row, admission._tag === "Replayed")
})

/** Admits a prepared Submission as its mode asks. */
const admitPrepared = (env: RuntimeEnv, prepared: PreparedSubmission) =>
  prepared.mode === undefined || prepared.mode === "queue" || prepared.replay
    ? admitQueued(env, prepared)
    : admitJoin(env, prepared, prepared.mode)

/** What admission checks for an input the agent's Schema encoded: its canonical payload. @internal */
export const admissionCheckOf = (
  agent: AnyAgentDefinition,
  request: { readonly threadId: ThreadId; readonly idempotencyKey: IdempotencyKey },
  encoded: Schema.Json,
): AdmissionCheck => {
  const inputPayload = canonicalJson(encoded)
  return {
    threadId: request.threadId,
    idempotencyKey: request.idempotencyKey,
    agentId: agent.id,
    agentDigest: agent.digest,
    inputPayload,
    inputDigest: contentDigest(inputPayload),
  }
}

/**
 * Encodes the input canonically (once) and asks the ledger, without writing, what admission
 * would answer: a refusal names what is over its limit.
 */
const checked = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  agent: AnyAgentDefinition,
  request: { readonly threadId: ThreadId; readonly idempotencyKey: IdempotencyKey },
  encoded: Schema.Json,
) {
  const admission = admissionCheckOf(agent, request, encoded)
  const replay = yield* env.ledger.checkAdmission(admission)
  // A replay adds nothing to the store, so it is answered even when the host has no room.
  if (Option.isNone(replay)) yield* env.capacity.check(request.threadId)
  return { ...admission, replay: Option.isSome(replay) } satisfies PreparedSubmission
})

/** Resolves the agent of a request and decodes and canonically encodes its input. @internal */
export const encodeFor = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  request: { readonly threadId: ThreadId; readonly agentId: AgentId; readonly input: unknown },
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
  const input: unknown = yield* Schema.decodeUnknownEffect(agent.input)(request.input).pipe(
    Effect.mapError(malformed(request.threadId, agent)),
  )
  const encoded = yield* Schema.encodeUnknownEffect(agent.input)(input).pipe(
    Effect.mapError(malformed(request.threadId, agent)),
  )
  return { agent, encoded }
})

const malformed = (threadId: ThreadId, agent: AnyAgentDefinition) => (cause: Schema.SchemaError) =>
  refuse(threadId, "malformed-input", `the input of agent ${agent.id} is malformed: ${cause.message}`)

/**
 * `prepare`: resolves the agent, decodes and encodes the input, checks admission, and for a
 * join refuses (`join`) a lane head that cannot take it; the admission checks the head again.
 * @internal
 */
export const makePrepare = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.prepare")(function* (request: SubmitRequest) {
    const { agent, encoded } = yield* encodeFor(env, request)
    const prepared = yield* checked(env, agent, request, encoded)
    const mode = request.mode ?? "queue"
    if (mode === "queue") return prepared
    if (mode === "join" && !prepared.replay) yield* checkJoin(env, agent, request.threadId)
    return { ...prepared, mode }
  })

/** The agent registered here under `agentId`, which must have `digest`. */
const registeredWith = (env: RuntimeEnv, threadId: ThreadId, agentId: AgentId, digest: string) => {
  const registered = env.registry.lookup(agentId)
  return Option.isSome(registered) && registered.value.digest === digest
    ? Effect.succeed(registered.value)
    : Effect.fail(
        refuse(
          threadId,
          "unknown-agent",
          `agent ${agentId} with digest ${digest} is not registered in this deployment`,
        ),
      )
}

/** `admit`: a prepared Submission of an agent registered here, with the same digest. @internal */
export const makeAdmit = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.admit")(function* (prepared: PreparedSubmission) {
    yield* registeredWith(env, prepared.threadId, prepared.agentId, prepared.agentDigest)
    return yield* admitPrepared(env, prepared)
  })

/** `submit`: `prepare`, then admit what it prepared. @internal */
export const makeSubmit = (env: RuntimeEnv) => {
  const prepare = makePrepare(env)
  return spanned("DurableAgentRuntime.submit")(function* (request: SubmitRequest) {
    return yield* admitPrepared(env, yield* prepare(request))
  })
}

/** `submitRegistered`: a typed input for a registered agent with the same contract. @internal */
export const makeSubmitRegistered = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.submitRegistered")(function* <I, O>(
    agent: AgentDefinition<I, O>,
    request: { readonly threadId: ThreadId; readonly idempotencyKey: IdempotencyKey; readonly input: I },
  ) {
    const registered = yield* registeredWith(env, request.threadId, agent.id, agent.digest)
    const encoded = yield* Schema.encodeEffect(agent.input)(request.input).pipe(
      Effect.mapError(malformed(request.threadId, registered)),
    )
    return yield* admitPrepared(env, yield* checked(env, registered, request, encoded))
  })
