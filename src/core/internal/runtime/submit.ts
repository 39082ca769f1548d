/**
 * Admission requests: plain submissions (`queue`), joins into the lane's running head, and
 * typed submissions of a registered agent. See `admission.ts` for the durable steps.
 */
import { Effect, Option, Schema } from "effect"
import type { AgentDefinition } from "../../AgentRegistration.ts"
import type { IdempotencyKey, ThreadId } from "../../Identifiers.ts"
import type { SubmitRequest } from "./model.ts"
import { admitEncoded, prepare, refuse } from "./admission.ts"
import type { RuntimeEnv } from "./env.ts"
import { admitJoin } from "./joins.ts"

/** `validate`: the checks of `submit` that need no storage. @internal */
export const makeValidate = (env: RuntimeEnv) =>
  Effect.fn("DurableAgentRuntime.validate")(function* (request: SubmitRequest) {
    yield* prepare(env, request)
  })

/** `submit`: the agent must be registered and the input must decode. @internal */
export const makeSubmit = (env: RuntimeEnv) =>
  Effect.fn("DurableAgentRuntime.submit")(function* (request: SubmitRequest) {
    const { agent, encoded } = yield* prepare(env, request)
    const admission = { threadId: request.threadId, idempotencyKey: request.idempotencyKey, input: encoded }
    const mode = request.mode ?? "queue"
    if (mode === "queue") return yield* admitEncoded(env, agent, admission)
    return yield* admitJoin(env, agent, admission, mode)
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
