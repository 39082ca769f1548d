/**
 * Agent definitions, their contract digests, and binding resolution at claim time.
 *
 * A Submission stores the `(agentId, digest)` it was admitted with. Resolution fails closed:
 * the runtime never runs different code for accepted work.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { AgentContext } from "./AgentContext.ts"
import type { AgentEvent } from "./AgentEvent.ts"
import { AgentId } from "./Identifiers.ts"
import { canonicalJson, contentDigest } from "./internal/digest.ts"

/** No agent with this id is registered in the running code. */
export class BindingUnavailable extends Schema.TaggedError<BindingUnavailable>()("BindingUnavailable", {
  agentId: AgentId,
  message: Schema.String,
}) {}

/** The agent is registered, but its contract digest differs from the admitted one. */
export class BindingDigestMismatch extends Schema.TaggedError<BindingDigestMismatch>()(
  "BindingDigestMismatch",
  { agentId: AgentId, message: Schema.String },
) {}

/** Why a Submission's binding could not be resolved. */
export type DurableBindingFailure = BindingUnavailable | BindingDigestMismatch

/**
 * The failure an agent program reports; the Submission settles `failed` with its message. A
 * step with a retry policy retries it unless it is marked `retryable: false`.
 */
export class AgentFailure extends Schema.TaggedError<AgentFailure>()("AgentFailure", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect()),
  /** `false`: a retried step fails at once (the marker wins over a policy's predicate). */
  retryable: Schema.optionalKey(Schema.Literal(false)),
}) {
  /** A failure no retry policy retries: the step fails with it at once. */
  static nonRetryable(message: string, cause?: unknown): AgentFailure {
    return new AgentFailure({ message, retryable: false, ...(cause === undefined ? {} : { cause }) })
  }
}

/** A Schema whose encoded side is JSON: inputs, outputs and step results are stored so. */
export type JsonCodec<A> = Schema.Codec<A, Schema.Json>

/**
 * A registered agent: its contract, digest and program. `Ev` is the union of the events it
 * declares.
 */
export interface AgentDefinition<I, O, Ev extends AgentEvent.Any = AgentEvent.Any> {
  readonly id: AgentId
  readonly name: string
  readonly version: string
  /** Stable hash of id, name, version, the input/output schemas, `acceptsJoinedInput` and the declared events. */
  readonly digest: string
  readonly input: JsonCodec<I>
  readonly output: JsonCodec<O>
  /**
   * Whether a follow-up input may join a running Submission of this agent (it is read with
   * `context.receiveJoined` at a step boundary) instead of queueing behind it.
   */
  readonly acceptsJoinedInput: boolean
  /** The events its program waits for by declaration, decoded when they are sent. */
  readonly events: ReadonlyArray<Ev>
  readonly program: (input: I, context: AgentContext<I, Ev>) => Effect.Effect<O, AgentFailure>
}

/** Any agent definition, as registries hold them. */
export type AnyAgentDefinition = AgentDefinition<any, any, any>

const describeSchema = (schema: Schema.Top): unknown => {
  try {
    return Schema.toJsonSchemaDocument(schema)
  } catch {
    return String(schema.ast)
  }
}

/** Computes the digest of an agent contract. */
export const contractDigest = (contract: {
  readonly id: string
  readonly name: string
  readonly version: string
  readonly input: Schema.Top
  readonly output: Schema.Top
  readonly acceptsJoinedInput?: boolean
  readonly events?: ReadonlyArray<AgentEvent.Any>
}): string =>
  contentDigest(
    canonicalJson({
      id: contract.id,
      name: contract.name,
      version: contract.version,
      input: describeSchema(contract.input),
      output: describeSchema(contract.output),
      // Present only when set, so the digests of agents that take no joined input are unchanged.
      ...(contract.acceptsJoinedInput === true ? { acceptsJoinedInput: true } : {}),
      // Likewise only when events are declared, in name order so the declaration order is free.
      ...(contract.events === undefined || contract.events.length === 0
        ? {}
        : {
            events: [...contract.events]
              .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
              .map((event) => ({ name: event.name, payload: describeSchema(event.payload) })),
          }),
    }),
  )

/**
 * Defines an agent; the id is validated and the digest computed from the contract. Two events
 * of one name are a defect.
 */
export const define = <I, O, const Events extends ReadonlyArray<AgentEvent.Any> = []>(definition: {
  readonly id: string
  readonly name?: string
  readonly version: string
  readonly input: JsonCodec<I>
  readonly output: JsonCodec<O>
  /** A follow-up input may join a running Submission (see `AgentContext.receiveJoined`). */
  readonly acceptsJoinedInput?: boolean
  /**
   * The events the program waits for (`AgentContext.waitForEvent(event)`): a payload sent for
   * one of them is decoded with its Schema when it is sent, and refused if it does not decode.
   */
  readonly events?: Events
  readonly program: (input: I, context: AgentContext<I, Events[number]>) => Effect.Effect<O, AgentFailure>
}): AgentDefinition<I, O, Events[number]> => {
  const id = Schema.decodeUnknownSync(AgentId)(definition.id)
  const name = definition.name ?? definition.id
  const events: ReadonlyArray<Events[number]> = definition.events ?? []
  const names = new Set(events.map((event) => event.name))
  if (names.size !== events.length) throw new Error(`Agent ${id} declares an event name twice`)
  return {
    id,
    name,
    version: definition.version,
    digest: contractDigest({ ...definition, id, name }),
    input: definition.input,
    output: definition.output,
    acceptsJoinedInput: definition.acceptsJoinedInput === true,
    events,
    program: definition.program,
  }
}

/** The declared event `name` of an agent, if it declares one. */
export const declaredEvent = (agent: AnyAgentDefinition, name: string): AgentEvent.Any | undefined =>
  agent.events.find((event: AgentEvent.Any) => event.name === name)

/** The same agent under another digest (a changed deployment, in tests). */
export const withDigest = <I, O, Ev extends AgentEvent.Any>(
  agent: AgentDefinition<I, O, Ev>,
  digest: string,
): AgentDefinition<I, O, Ev> => ({
  ...agent,
  digest,
})

export { contentDigest } from "./internal/digest.ts"

/** The agents registered in the running code. */
export class AgentRegistry extends Context.Service<
  AgentRegistry,
  {
    readonly lookup: (agentId: AgentId) => Option.Option<AnyAgentDefinition>
    /** The agent for admitted work: same id and same digest, or a typed binding failure. */
    readonly resolve: (
      agentId: AgentId,
      digest: string,
    ) => Effect.Effect<AnyAgentDefinition, DurableBindingFailure>
  }
>()("@effect-agent/platform-cloudflare/AgentRegistration/AgentRegistry") {
  /**
   * A registry of these agents. A repeated id throws here, where the Worker's module builds its
   * layer, so a deploy with it fails at startup instead of every Object failing on its first call.
   */
  static readonly layer = (registrations: ReadonlyArray<AnyAgentDefinition>) => {
    const byId = agentsById(registrations)
    return Layer.sync(this)(() => make(byId))
  }
}

const agentsById = (
  registrations: ReadonlyArray<AnyAgentDefinition>,
): ReadonlyMap<string, AnyAgentDefinition> => {
  const byId = new Map<string, AnyAgentDefinition>()
  for (const agent of registrations) {
    if (byId.has(agent.id)) throw new Error(`Agent ${agent.id} is registered twice`)
    byId.set(agent.id, agent)
  }
  return byId
}

const make = (byId: ReadonlyMap<string, AnyAgentDefinition>): AgentRegistry["Service"] => {
  return {
    lookup: (agentId) => Option.fromNullishOr(byId.get(agentId)),
    resolve: (agentId, digest) => {
      const agent = byId.get(agentId)
      if (agent === undefined) {
        return Effect.fail(
          new BindingUnavailable({
            agentId,
            message: `No agent ${agentId} is registered in this deployment`,
          }),
        )
      }
      if (agent.digest !== digest) {
        return Effect.fail(
          new BindingDigestMismatch({
            agentId,
            message: `Agent ${agentId} is registered with digest ${agent.digest}, but the work was admitted with ${digest}`,
          }),
        )
      }
      return Effect.succeed(agent)
    },
  }
}
