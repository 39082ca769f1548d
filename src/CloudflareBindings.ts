/**
 * The one seam where the host's `DurableObjectState` and the Worker `env` enter Effect.
 * Everything else reads them from `DurableObjectContext`.
 */
import { Context, Layer } from "effect"

/** The running Durable Object incarnation: its state (storage, alarm, abort) and bindings. */
export class DurableObjectContext extends Context.Service<
  DurableObjectContext,
  { readonly ctx: DurableObjectState; readonly env: Cloudflare.Env }
>()("@effect-agent/platform-cloudflare/CloudflareBindings/DurableObjectContext") {
  /** Provides the incarnation's state and env. */
  static readonly layer = (ctx: DurableObjectState, env: Cloudflare.Env): Layer.Layer<DurableObjectContext> =>
    Layer.succeed(this, { ctx, env })
}
