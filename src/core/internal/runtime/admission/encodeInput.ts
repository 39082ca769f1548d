/**
 * An input made ready for admission: its agent resolved in the registry, the input decoded with
 * the agent's Schema and encoded canonically once, and the check admission makes of it. A
 * refusal names the agent and what is wrong with the input.
 */
import { Effect, Option, Schema } from "effect"
import type { AnyAgentDefinition } from "../../../AgentRegistration.ts"
import type { AgentId, IdempotencyKey, ThreadId } from "../../../Identifiers.ts"
import { canonicalJson, contentDigest } from "../../digest.ts"
import { type AdmissionCheck, AdmissionRefused } from "../../ledger/model.ts"
import type { RuntimeEnv } from "../shared/runtimeEnv.ts"

/** An admission refused before anything is written. @internal */
export const refuse = (threadId: ThreadId, reason: AdmissionRefused["reason"], message: string) =>
  new AdmissionRefused({ threadId, reason, message })

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

/** The refusal of an input the agent's Schema does not accept. @internal */
export const malformed = (threadId: ThreadId, agent: AnyAgentDefinition) => (cause: Schema.SchemaError) =>
  refuse(threadId, "malformed-input", `the input of agent ${agent.id} is malformed: ${cause.message}`)
