/**
 * The Cloudflare implementation of `RoutedPort.call`: the target Object's stub through the
 * namespace binding its address names (by id, or by the name it is reached by), and its
 * `portCall` entry point. The envelope is encoded before it leaves and the reply decoded when
 * it comes back; what crosses is only the `RpcResult` envelope.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Effect, Schema } from "effect"
import type { ObjectAddress } from "../../core/internal/outbox/model.ts"
import { safeCauseMessage } from "../boundary.ts"
import type { RpcResult } from "../object/rpc.ts"
import { PortUnavailable, PortUnreachable } from "./portErrors.ts"
import { PortEnvelope, PortProtocolError, PortReply } from "./portProtocol.ts"

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

/** @internal One routed call through the Worker's namespace bindings in `env`. */
export const callStub = (env: Cloudflare.Env, address: ObjectAddress, envelope: PortEnvelope) =>
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
    // Whatever crosses is the receiver's: anything but an envelope is a malformed answer, retried.
    if (typeof result !== "object" || result === null) {
      return yield* new PortUnavailable({
        message: "malformed answer: the Object answered with no result envelope",
      })
    }
    if (result.ok) {
      return yield* decodeReply(result.value).pipe(
        Effect.mapError((cause) => new PortUnavailable({ message: `malformed reply: ${cause.message}` })),
      )
    }
    return yield* decodeRefusal(result.error).pipe(
      Effect.mapError((cause) => new PortUnavailable({ message: `malformed refusal: ${cause.message}` })),
      Effect.flatMap(Effect.fail),
    )
  }).pipe(withSpanFast("RoutedPort.call", { attributes: { namespace: address.namespace } }))
