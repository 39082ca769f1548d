/**
 * The services of one `ThreadObject` incarnation, built once in its constructor gate over the
 * live `DurableObjectState`: storage and config, the ledger and history (migrations run here),
 * the runtime, the mutation gate (one per physical Object, shared by everything), the alarm
 * service and the maintenance pass with the application's hooks.
 */
import { SqliteClient } from "@effect/sql-sqlite-do"
import { Effect, Layer, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { AnyAgentDefinition } from "../../core/AgentRegistration.ts"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import { DurableRuntimeConfig, DurableRuntimeSettings } from "../../core/DurableRuntimeConfig.ts"
import { RuntimeFailpoint, type RuntimeFailpointHandler } from "../../core/RuntimeFailpoint.ts"
import { LedgerLimits, SubmissionLedger, SubmissionLedgerLimits } from "../../core/SubmissionLedger.ts"
import { ThreadHistory } from "../../core/ThreadHistory.ts"
import { ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import {
  CloudflareDurableRuntimeConfig,
  type CloudflareDurableRuntimeConfigOverrides,
} from "../../CloudflareConfig.ts"
import { DurableAlarmService } from "../maintenance/alarmService.ts"
import {
  ThreadMaintenanceFailpoint,
  type ThreadMaintenanceFailpointHandler,
} from "../maintenance/failpoint.ts"
import { ThreadMutationGate } from "../maintenance/gate.ts"
import {
  ThreadMessageDelivery,
  type ThreadMessageDeliveryService,
  ThreadPublication,
} from "../maintenance/hooks.ts"
import { ThreadMaintenance } from "../maintenance/maintenance.ts"
import { MessageOutbox, SelfAddress } from "../../core/MessageOutbox.ts"
import { RoutedPort } from "../../RoutedPort.ts"
import { messageDeliveryLayer } from "../delivery/layer.ts"
import { instrumentState, type StorageFailpointHandler } from "./instrumentedStorage.ts"
import { cloudflareWakeScheduler } from "./wakeScheduler.ts"

/** What application hooks may use when they are built: the Object's own platform services. */
export type ThreadObjectPlatform =
  | DurableObjectContext
  | SqlClient
  | CloudflareDurableRuntimeConfig
  | ThreadMutationGate
  | DurableAlarmService
  | SubmissionLedger
  | ThreadHistory
  | MessageOutbox
  | RoutedPort

/** Test failpoints, each built per incarnation from the live state so a hit can abort it. */
export interface ThreadObjectFailpoints {
  readonly maintenance?: (ctx: DurableObjectState) => ThreadMaintenanceFailpointHandler
  readonly runtime?: (ctx: DurableObjectState) => RuntimeFailpointHandler
  readonly storage?: (ctx: DurableObjectState) => StorageFailpointHandler
}

/** How an application assembles its Threads. */
export interface ThreadObjectOptions {
  /** The agents this deployment can run; admitted work is bound to `(id, digest)`. */
  readonly agents: ReadonlyArray<AnyAgentDefinition>
  /** Overrides of `CLOUDFLARE_RUNTIME_DEFAULTS`, decoded once per incarnation. */
  readonly config?: CloudflareDurableRuntimeConfigOverrides
  /** A `ThreadPublication` gate; none by default. */
  readonly publication?: Layer.Layer<ThreadPublication, unknown, ThreadObjectPlatform>
  /** A `ThreadProjectionMaintenance`; none by default. */
  readonly projection?: Layer.Layer<ThreadProjectionMaintenance, unknown, ThreadObjectPlatform>
  /**
   * Application hooks provided as context values, typically `ThreadHostMaintenance` (outboxes,
   * relays); the maintenance layer captures them when built. Message delivery is native.
   */
  readonly hooks?: Layer.Layer<never, unknown, ThreadObjectPlatform>
  /**
   * The Worker binding of this class's namespace (e.g. `"THREADS"`): how other Objects reach
   * this one, and the default namespace of its children. Needed to start children.
   */
  readonly namespaceBinding?: string
  readonly failpoints?: ThreadObjectFailpoints
}

/** Everything an incarnation's entry points use. */
export type ThreadObjectServices =
  | ThreadObjectPlatform
  | DurableAgentRuntime
  | ThreadMaintenance
  | ThreadPublication
  | ThreadProjectionMaintenance

const storageSeam = (ctx: DurableObjectState, env: Cloudflare.Env, options: ThreadObjectOptions) => {
  const observed =
    options.failpoints?.storage === undefined ? ctx : instrumentState(ctx, options.failpoints.storage(ctx))
  return Layer.mergeAll(
    DurableObjectContext.layer(observed, env),
    SqliteClient.layer({ storage: observed.storage }),
  )
}

// The configuration is composed of these: its decoded value holds theirs, already checked.
const runtimeSettingsOf = Schema.decodeSync(DurableRuntimeSettings)
const ledgerLimitsOf = Schema.decodeSync(LedgerLimits)

/**
 * @internal The Cloudflare configuration, decoded once, and the runtime settings and ledger
 * limits it is composed of (the simulation builds its incarnations from this too).
 */
export const configLayers = (overrides: ThreadObjectOptions["config"]) => {
  const cloudflare = CloudflareDurableRuntimeConfig.layer(overrides)
  const derived = Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* CloudflareDurableRuntimeConfig
      return Layer.mergeAll(
        Layer.succeed(DurableRuntimeConfig, runtimeSettingsOf(config)),
        Layer.succeed(SubmissionLedgerLimits, ledgerLimitsOf(config.limits)),
      )
    }),
  )
  return Layer.provideMerge(derived, cloudflare)
}

const failpointLayers = (ctx: DurableObjectState, failpoints: ThreadObjectFailpoints = {}) =>
  Layer.mergeAll(
    failpoints.maintenance === undefined
      ? ThreadMaintenanceFailpoint.layer
      : ThreadMaintenanceFailpoint.layerTest(failpoints.maintenance(ctx)),
    failpoints.runtime === undefined
      ? RuntimeFailpoint.layer
      : RuntimeFailpoint.layerTest(failpoints.runtime(ctx)),
  )

/**
 * @internal The layer of one incarnation. `delivery` replaces the native message delivery, for
 * tests that script what the pass's delivery does.
 */
export const incarnationLayer = (
  ctx: DurableObjectState,
  env: Cloudflare.Env,
  options: ThreadObjectOptions,
  delivery?: ThreadMessageDeliveryService,
) => {
  const base = Layer.mergeAll(
    storageSeam(ctx, env, options),
    configLayers(options.config),
    failpointLayers(ctx, options.failpoints),
  )
  const platform = Layer.mergeAll(
    ThreadMutationGate.layer,
    DurableAlarmService.layer,
    MessageOutbox.layer.pipe(
      Layer.provideMerge(ThreadHistory.layer),
      Layer.provideMerge(SubmissionLedger.layer),
    ),
    RoutedPort.layer,
    Layer.succeed(SelfAddress, {
      objectId: ctx.id.toString(),
      ...(options.namespaceBinding === undefined ? {} : { namespace: options.namespaceBinding }),
    }),
  ).pipe(Layer.provideMerge(base))
  const runtime = DurableAgentRuntime.layerWithBindings(options.agents).pipe(
    Layer.provide(cloudflareWakeScheduler),
  )
  const hooks = Layer.mergeAll(
    options.publication ?? ThreadPublication.layer,
    options.projection ?? ThreadProjectionMaintenance.layer,
    options.hooks ?? Layer.empty,
  )
  // The native delivery comes last: it is the runtime's, never an application's.
  return ThreadMaintenance.layer.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        hooks,
        delivery === undefined
          ? messageDeliveryLayer.pipe(Layer.provideMerge(runtime))
          : Layer.merge(runtime, Layer.succeed(ThreadMessageDelivery, delivery)),
      ),
    ),
    Layer.provideMerge(platform),
  )
}
