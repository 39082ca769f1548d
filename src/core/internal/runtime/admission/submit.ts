/**
 * Admission's entry points: resolve the agent, decode and canonically encode the input, and
 * ask the ledger what admission would answer, all once and before anything is written (a host
 * refuses bad input before it opens a mutation); then admit it, queued or as a join (the ledger
 * checks its limits and the idempotency key again, and records `SubmissionAccepted` in the same
 * transaction: the row is ready at once), and hint the host. A row an older release left
 * `admitted` (between those writes) is finished by recovery, or by a replayed submit.
 */
import { spanned } from "../../spanned.ts"
import { Effect, Option, Schema } from "effect"
import type { AgentDefinition, AnyAgentDefinition } from "../../../AgentRegistration.ts"
import type { AgentId, IdempotencyKey, ThreadId } from "../../../Identifiers.ts"
import { admitJoin, checkJoin } from "../children/joins.ts"
import { JoinRefused, type PreparedSubmission, type SubmitRequest } from "../shared/model.ts"
import { OCCURRENCE_KEY_PREFIX } from "../../schedule/model.ts"
import type { RuntimeEnv } from "../shared/runtimeEnv.ts"
import { admitQueued } from "./admitRow.ts"
import { admissionCheckOf, encodeFor, malformed, refuse } from "./encodeInput.ts"

/** Admits a prepared Submission as its mode asks; a delayed one is queued (a join cannot wait). */
const admitPrepared = (env: RuntimeEnv, prepared: PreparedSubmission) =>
  prepared.mode === undefined ||
  prepared.mode === "queue" ||
  prepared.replay ||
  prepared.notBefore !== undefined
    ? admitQueued(env, prepared)
    : admitJoin(env, prepared, prepared.mode)

/**
 * Refuses what a caller may not ask: a key of the schedules' own form (`schedule:…`), which
 * only an occurrence takes, and a join that waits for a time.
 */
const checkRequest = (request: SubmitRequest) => {
  if (request.idempotencyKey.startsWith(OCCURRENCE_KEY_PREFIX)) {
    return Effect.fail(
      refuse(
        request.threadId,
        "reserved-key",
        `idempotency keys starting with "${OCCURRENCE_KEY_PREFIX}" are the occurrences' of schedules`,
      ),
    )
  }
  if (request.mode === "join" && request.notBefore !== undefined) {
    return Effect.fail(
      new JoinRefused({
        threadId: request.threadId,
        reason: "delayed",
        message: "a join runs with its host at once: it cannot take notBefore (queue it instead)",
      }),
    )
  }
  return Effect.void
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

/**
 * `prepare`: resolves the agent, decodes and encodes the input, checks admission, and for a
 * join refuses (`join`) a lane head that cannot take it; the admission checks the head again.
 * @internal
 */
export const makePrepare = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.prepare")(function* (request: SubmitRequest) {
    yield* checkRequest(request)
    const { agent, encoded } = yield* encodeFor(env, request)
    const checkedAdmission = yield* checked(env, agent, request, encoded)
    const prepared =
      request.notBefore === undefined
        ? checkedAdmission
        : { ...checkedAdmission, notBefore: request.notBefore }
    const mode = request.mode ?? "queue"
    if (mode === "queue" || request.notBefore !== undefined) return prepared
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
