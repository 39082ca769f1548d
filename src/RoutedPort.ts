/**
 * `RoutedPort`: calls another `ThreadObject` with a routed port request. The Cloudflare layer
 * reaches the Object through the namespace binding the address names (by id, or by the name
 * it is reached by) and its `portCall` entry point; typed failures say whether a retry can
 * help (`PortUnavailable`) or not (`PortUnreachable`).
 *
 * Only the delivery driver calls it, from the maintenance pass's auxiliary scope: never from a
 * constructor and never while holding the mutation gate or a storage transaction.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { DurableObjectContext } from "./CloudflareBindings.ts"
import { ObjectAddress } from "./core/internal/outbox/model.ts"
import { safeCauseMessage } from "./internal/boundary.ts"
import type { RpcResult } from "./internal/object/rpc.ts"
import { PortEnvelope, PortProtocolError, PortReply } from "./internal/port/portProtocol.ts"

export {
  DescribeChild,
  PortEnvelope,
  PortProtocolError,
  PortReply,
  PortRequest,
  PORT_REQUEST_ACCESS,
} from "./internal/port/portProtocol.ts"
export type { PortAccess, PortReplies, PortRequestTag } from "./internal/port/portProtocol.ts"
export { ObjectAddress } from "./core/internal/outbox/model.ts"

/** The call did not complete (network, timeout, an unexpected failure): it may be retried. */
export class PortUnavailable extends Schema.TaggedError<PortUnavailable>()("PortUnavailable", {
  message: Schema.String,
}) {}

/** The address cannot name an Object of this Worker: retrying the same address cannot help. */
export class PortUnreachable extends Schema.TaggedError<PortUnreachable>()("PortUnreachable", {
  message: Schema.String,
}) {}

/** Why a port call failed. */
export type PortFailure = PortProtocolError | PortUnavailable | PortUnreachable

/** The Objects a `ThreadObject` can reach. */
export class RoutedPort extends Context.Service<
  RoutedPort,
  {
    readonly call: (address: ObjectAddress, envelope: PortEnvelope) => Effect.Effect<PortReply, PortFailure>
  }
>()("@effect-agent/platform-cloudflare/RoutedPort") {
  /** Durable Object stubs through the Worker's namespace bindings. */
  static readonly layer: Layer.Layer<RoutedPort, never, DurableObjectContext> = Layer.effect(
    this,
    Effect.gen(function* () {
      const { env } = yield* DurableObjectContext
      return { call: (address, envelope) => callStub(env, address, envelope) }
    }),
  )
}

/** The part of a Durable Object namespace the port uses. */
interface Namespace {
  readonly get: (id: DurableObjectId) => unknown
  readonly idFromString: (id: string) => DurableObjectId
  readonly getByName: (name: string) => unknown
}

interface PortStub {
  readonly portCall: (envelope: unknown) => Promise<RpcResult>
}

const isNamespace = (value: unknown): value is Namespace =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as Partial<Namespace>).idFromString === "function" &&
  typeof (value as Partial<Namespace>).getByName === "function" &&
  typeof (value as Partial<Namespace>).get === "function"

const encodeEnvelope = Schema.encodeEffect(PortEnvelope)
const decodeReply = Schema.decodeUnknownEffect(PortReply)
const decodeRefusal = Schema.decodeUnknownEffect(PortProtocolError)

const stubOf = (env: Cloudflare.Env, address: ObjectAddress) =>
  Effect.suspend(() => {
    const namespace: unknown = (env as unknown as Record<string, unknown>)[address.namespace]
    if (!isNamespace(namespace)) {
      return Effect.fail(
        new PortUnreachable({
          message: `no Durable Object namespace is bound as ${address.namespace} in this Worker`,
        }),
      )
    }
    return Effect.try({
      try: () =>
        (address.objectId === undefined
          ? namespace.getByName(address.objectName ?? "")
          : namespace.get(namespace.idFromString(address.objectId))) as PortStub,
      catch: (cause) =>
        new PortUnreachable({
          message: `${address.namespace} cannot address ${address.objectId ?? address.objectName}: ${safeCauseMessage(cause, "invalid address")}`,
        }),
    })
  })

const callStub = (env: Cloudflare.Env, address: ObjectAddress, envelope: PortEnvelope) =>
  Effect.gen(function* () {
    const stub = yield* stubOf(env, address)
    const encoded = yield* encodeEnvelope(envelope).pipe(
      Effect.mapError(
        (cause) =>
          new PortProtocolError({
            reason: "malformed-request",
            message: `the request does not encode: ${cause.message}`,
          }),
      ),
    )
    const result = yield* Effect.tryPromise({
      try: () => stub.portCall(encoded),
      catch: (cause) =>
        new PortUnavailable({ message: safeCauseMessage(cause, "the Object could not be reached") }),
    })
    if (result.ok) {
      return yield* decodeReply(result.value).pipe(
        Effect.mapError((cause) => new PortUnavailable({ message: `malformed reply: ${cause.message}` })),
      )
    }
    return yield* decodeRefusal(result.error).pipe(
      Effect.mapError((cause) => new PortUnavailable({ message: `malformed refusal: ${cause.message}` })),
      Effect.flatMap(Effect.fail),
    )
  }).pipe(Effect.withSpan("RoutedPort.call", { attributes: { namespace: address.namespace } }))
