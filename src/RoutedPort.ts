/**
 * `RoutedPort`: calls another `ThreadObject` with a routed port request. The Cloudflare layer
 * reaches the Object through the namespace binding the address names (by id, or by the name
 * it is reached by) and its `portCall` entry point; typed failures say whether a retry can
 * help (`PortUnavailable`) or not (`PortUnreachable`).
 *
 * Only the delivery driver calls it, from the maintenance pass's auxiliary scope: never from a
 * constructor and never while holding the mutation gate or a storage transaction.
 */
import { Context, Effect, Layer } from "effect"
import { DurableObjectContext } from "./CloudflareBindings.ts"
import type { ObjectAddress } from "./core/internal/outbox/model.ts"
import type { PortFailure } from "./internal/port/portErrors.ts"
import type { PortEnvelope, PortReply } from "./internal/port/portProtocol.ts"
import { callStub } from "./internal/port/portStub.ts"

export {
  DescribeChild,
  PortEnvelope,
  PortProtocolError,
  PortReply,
  PortRequest,
  PORT_REQUEST_ACCESS,
} from "./internal/port/portProtocol.ts"
export type { PortAccess, PortReplies, PortRequestTag } from "./internal/port/portProtocol.ts"
export { PortUnavailable, PortUnreachable } from "./internal/port/portErrors.ts"
export type { PortFailure } from "./internal/port/portErrors.ts"
export { ObjectAddress } from "./core/internal/outbox/model.ts"

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
