/**
 * The one seam where the host's `DurableObjectState` and the Worker `env` enter Effect.
 * Everything else reads them from `DurableObjectContext` (and `ThreadObjectNamespace`).
 */
import { Context, Effect, Layer } from "effect"
import { CloudflareConfigError } from "./CloudflareConfig.ts"

/** The running Durable Object incarnation: its state (storage, alarm, abort) and bindings. */
export class DurableObjectContext extends Context.Service<
  DurableObjectContext,
  { readonly ctx: DurableObjectState; readonly env: Cloudflare.Env }
>()("@effect-agent/platform-cloudflare/CloudflareBindings/DurableObjectContext") {
  /** Provides the incarnation's state and env. */
  static readonly layer = (ctx: DurableObjectState, env: Cloudflare.Env): Layer.Layer<DurableObjectContext> =>
    Layer.succeed(this, { ctx, env })
}

/**
 * The namespace of the running `ThreadObject` class, named by `ThreadObject.make`'s
 * `namespaceBinding`: hooks address sibling Threads through it (`ThreadClient.make`).
 */
export class ThreadObjectNamespace extends Context.Service<
  ThreadObjectNamespace,
  { readonly binding: string; readonly namespace: DurableObjectNamespace }
>()("@effect-agent/platform-cloudflare/ThreadObjectNamespace") {
  /**
   * Reads `env[binding]` and checks that it is the namespace of the Object `ctx` (an id of
   * another namespace does not parse in it); otherwise fails naming the binding.
   */
  static readonly layer = (
    ctx: DurableObjectState,
    env: Cloudflare.Env,
    binding: string,
  ): Layer.Layer<ThreadObjectNamespace, CloudflareConfigError> =>
    Layer.effect(
      this,
      Effect.suspend(() => {
        const refuse = (problem: string) =>
          Effect.fail(
            new CloudflareConfigError({
              field: "namespaceBinding",
              message: `Invalid "namespaceBinding": env.${binding} ${problem}`,
            }),
          )
        const value: unknown = (env as unknown as Record<string, unknown>)[binding]
        if (typeof value !== "object" || value === null || !("idFromString" in value)) {
          return refuse("is not a Durable Object namespace binding")
        }
        const namespace = value as DurableObjectNamespace
        try {
          if (!namespace.idFromString(ctx.id.toString()).equals(ctx.id)) {
            return refuse("is not the namespace of this Object")
          }
        } catch {
          return refuse("is not the namespace of this Object")
        }
        return Effect.succeed({ binding, namespace })
      }),
    )
}
