/** Why a routed port call failed (re-exported by `RoutedPort`). */
import { Schema } from "effect"
import type { PortProtocolError } from "./portProtocol.ts"

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
