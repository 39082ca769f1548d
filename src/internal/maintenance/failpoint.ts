/** Test hooks at the maintenance steps; the production layer is inert. */
import { Context, Effect, Layer } from "effect"

/** Every maintenance failpoint location. */
export const THREAD_MAINTENANCE_FAILPOINT_LOCATIONS = [
  "maintenance:dirty:before",
  "maintenance:dirty:after",
  "maintenance:mutation:armed",
  "maintenance:mutation:finished",
  "maintenance:ensure:before",
  "maintenance:ensure:after",
  "maintenance:begin:before",
  "maintenance:begin:after",
  "maintenance:select:before",
  "maintenance:select:after",
  "maintenance:binding-retry:before",
  "maintenance:binding-retry:after",
  "maintenance:retry:before",
  "maintenance:retry:after",
  "maintenance:finish:before",
  "maintenance:finish:after",
  "maintenance:repair:before",
  "maintenance:repair:after",
] as const

/** A point in the maintenance algorithm where tests may pause, fail or evict. */
export type ThreadMaintenanceFailpointLocation = (typeof THREAD_MAINTENANCE_FAILPOINT_LOCATIONS)[number]

/** What a test does when a location is hit. */
export type ThreadMaintenanceFailpointHandler = (
  location: ThreadMaintenanceFailpointLocation,
) => Effect.Effect<void>

/** Maintenance failpoints. */
export class ThreadMaintenanceFailpoint extends Context.Service<
  ThreadMaintenanceFailpoint,
  { readonly hit: ThreadMaintenanceFailpointHandler }
>()("@effect-agent/platform-cloudflare/ThreadMaintenanceFailpoint") {
  /** The production failpoints: every hit is a no-op. */
  static readonly layer: Layer.Layer<ThreadMaintenanceFailpoint> = Layer.succeed(this, {
    hit: () => Effect.void,
  })

  /** Runs `handler` at every hit. */
  static readonly layerTest = (
    handler: ThreadMaintenanceFailpointHandler,
  ): Layer.Layer<ThreadMaintenanceFailpoint> => Layer.succeed(this, { hit: handler })
}
