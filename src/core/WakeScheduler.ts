/**
 * Wake hints from the runtime to its host. A hint is droppable: liveness never depends on
 * one, because every mutation that creates work also commits an alarm before it runs.
 */
import { Context, Effect, Layer } from "effect"
import type { ThreadId } from "./Identifiers.ts"

/** Asks the host to process a Thread soon. */
export class WakeScheduler extends Context.Service<
  WakeScheduler,
  {
    /** A best-effort hint; never fails. */
    readonly notify: (threadId: ThreadId) => Effect.Effect<void>
  }
>()("@effect-agent/platform-cloudflare/WakeScheduler") {
  /** Drops every hint. */
  static readonly layer = Layer.succeed(this)({ notify: () => Effect.void })
}
