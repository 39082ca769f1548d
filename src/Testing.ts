/**
 * Test-only surface: failpoints at every durable commit boundary (maintenance steps, runtime
 * ledger writes and history appends, storage writes) for `ThreadObject.make`, and the storage
 * instrumentation behind the storage ones. Import it from tests and test Workers only: a
 * production Worker that does not import it carries none of it.
 *
 * Handlers are built per incarnation from the live `DurableObjectState`, so a hit can fail,
 * pause on a `Deferred`, or kill the Object with `ctx.abort()`. `runAlarmsUntilQuiet` delivers
 * an Object's alarms until it is quiet without racing the pool's own deliveries.
 */
import { Effect, Layer } from "effect"
import {
  RuntimeFailpoint,
  type RuntimeFailpointHandler,
  type RuntimeFailpointLocation,
} from "./core/RuntimeFailpoint.ts"
import { DurableRuntimeFailpointError } from "./core/internal/runtime/shared/failpointError.ts"
import {
  ThreadMaintenanceFailpoint,
  type ThreadMaintenanceFailpointHandler,
  type ThreadMaintenanceFailpointLocation,
} from "./internal/maintenance/failpoint.ts"
import {
  instrumentState,
  type StorageFailpointHandler,
  type StorageFailpointLocation,
} from "./internal/object/instrumentedStorage.ts"
import type { ThreadObjectFailpoints } from "./internal/object/layers.ts"

export { DurableRuntimeFailpointError }
export {
  AlarmsNotQuiet,
  type QuietObject,
  type QuietOptions,
  runAlarmsUntilQuiet,
} from "./internal/testing/quiet.ts"
export {
  type RuntimeFailpointHandler,
  type RuntimeFailpointLocation,
  RUNTIME_FAILPOINT_LOCATIONS,
  type RuntimeLedgerWrite,
} from "./core/RuntimeFailpoint.ts"
export {
  type ThreadMaintenanceFailpointHandler,
  type ThreadMaintenanceFailpointLocation,
  THREAD_MAINTENANCE_FAILPOINT_LOCATIONS,
} from "./internal/maintenance/failpoint.ts"
export {
  instrumentState,
  type StorageFailpointHandler,
  type StorageFailpointLocation,
  STORAGE_FAILPOINT_LOCATIONS,
} from "./internal/object/instrumentedStorage.ts"

/** Failpoint handlers, each built per incarnation from the live state. */
export interface FailpointHandlers {
  readonly maintenance?: (ctx: DurableObjectState) => ThreadMaintenanceFailpointHandler
  readonly runtime?: (ctx: DurableObjectState) => RuntimeFailpointHandler
  /** Sees every storage write; throwing fails it, `ctx.abort()` kills the Object. */
  readonly storage?: (ctx: DurableObjectState) => StorageFailpointHandler
}

/**
 * A runtime handler's defect is the test's injected fault, not the program's: it fails typed,
 * so that the Attempt's work is left for a later Attempt (as for a typed failure) instead of
 * settling the Submission `failed` as a program that died.
 */
const notTheProgram =
  (handler: RuntimeFailpointHandler): RuntimeFailpointHandler =>
  (location) =>
    Effect.catchDefect(
      handler(location),
      (defect) => new DurableRuntimeFailpointError({ location, message: `died: ${String(defect)}` }),
    )

/** The `failpoints` option of `ThreadObject.make`. */
export const failpoints = (handlers: FailpointHandlers): ThreadObjectFailpoints => ({
  state: (ctx) => (handlers.storage === undefined ? ctx : instrumentState(ctx, handlers.storage(ctx))),
  layer: (ctx) =>
    Layer.mergeAll(
      handlers.maintenance === undefined
        ? ThreadMaintenanceFailpoint.layer
        : ThreadMaintenanceFailpoint.layerTest(handlers.maintenance(ctx)),
      handlers.runtime === undefined
        ? RuntimeFailpoint.layer
        : RuntimeFailpoint.layerTest(notTheProgram(handlers.runtime(ctx))),
    ),
})

/** Handlers a test installs on one Object while it runs; each also gets the Object's state. */
export interface InstalledFailpoints {
  readonly maintenance?: (
    location: ThreadMaintenanceFailpointLocation,
    ctx: DurableObjectState,
  ) => Effect.Effect<void>
  readonly runtime?: (
    location: RuntimeFailpointLocation,
    ctx: DurableObjectState,
  ) => Effect.Effect<void, DurableRuntimeFailpointError>
  readonly storage?: (location: StorageFailpointLocation, detail: string, ctx: DurableObjectState) => void
}

/**
 * Failpoints that tests install per Object while it runs, itself the `failpoints` option of
 * `ThreadObject.make`. The test and the Object share the isolate (vitest-pool-workers,
 * Miniflare), so handlers installed under an Object's id are consulted by every incarnation of
 * that Object until they are removed.
 */
export interface FailpointSwitchboard extends ThreadObjectFailpoints {
  /** Installs the handlers of the Object `id`, replacing any installed before. */
  readonly install: (id: DurableObjectId, handlers: InstalledFailpoints) => void
  /** Removes the handlers of the Object `id`. */
  readonly remove: (id: DurableObjectId) => void
}

/** A switchboard with no handler installed. */
export const makeSwitchboard = (): FailpointSwitchboard => {
  const installed = new Map<string, InstalledFailpoints>()
  const of = (ctx: DurableObjectState) => installed.get(ctx.id.toString())
  return {
    ...failpoints({
      maintenance: (ctx) => (location) => of(ctx)?.maintenance?.(location, ctx) ?? Effect.void,
      runtime: (ctx) => (location) => of(ctx)?.runtime?.(location, ctx) ?? Effect.void,
      storage: (ctx) => (location, detail) => of(ctx)?.storage?.(location, detail, ctx),
    }),
    install: (id, handlers) => {
      installed.set(id.toString(), handlers)
    },
    remove: (id) => {
      installed.delete(id.toString())
    },
  }
}
