/**
 * The layers of one `ThreadObject` incarnation, built once in its constructor gate over the
 * live `DurableObjectState`. The platform (storage, config, the ledger and history with their
 * migrations, the progress hub their writes publish to, the one mutation gate every producer
 * shares, the alarm service, failpoints) is built by the class; the application's Thread layer
 * (`ThreadObject.layer` composed with its own hooks) is built over it, so hooks and the pass
 * see the same gate and storage.
 */
import { type Context, Effect, Layer, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { AnyAgentDefinition } from "../../core/AgentRegistration.ts"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import { DurableRuntimeConfig, DurableRuntimeSettings } from "../../core/DurableRuntimeConfig.ts"
import { ProgressHub } from "../../core/ProgressHub.ts"
import { RuntimeFailpoint } from "../../core/RuntimeFailpoint.ts"
import {
  LedgerLimits,
  SubmissionLedger,
  SubmissionLedgerLimits,
  SubmissionLedgerRetention,
} from "../../core/SubmissionLedger.ts"
import type { LedgerError } from "../../core/SubmissionLedger.ts"
import { ThreadHistory } from "../../core/ThreadHistory.ts"
import { ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import { DurableObjectContext, ThreadObjectNamespace } from "../../CloudflareBindings.ts"
import {
  CloudflareDurableRuntimeConfig,
  type CloudflareDurableRuntimeConfigOverrides,
} from "../../CloudflareConfig.ts"
import { DurableAlarmService } from "../maintenance/alarmService.ts"
import { ThreadMaintenanceFailpoint } from "../maintenance/failpoint.ts"
import { ThreadMutationGate } from "../maintenance/gate.ts"
import {
  ThreadMessageDelivery,
  type ThreadMessageDeliveryService,
  ThreadPublication,
} from "../maintenance/hooks.ts"
import { ThreadMaintenance } from "../maintenance/maintenance.ts"
import { MessageOutbox, SelfAddress } from "../../core/MessageOutbox.ts"
import type { RoutedPort } from "../../RoutedPort.ts"
import { messageDeliveryLayer } from "../delivery/layer.ts"
import { retentionLayer } from "../retention/layer.ts"
import type { Authorization } from "./authorization.ts"
import { cloudflareWakeScheduler } from "./wakeScheduler.ts"
import { databaseCapacityLayer } from "./databaseCapacity.ts"
import { sqlClientLayer } from "./sqlClient.ts"
import { EarlyEventAgents } from "../../core/internal/ledger/early.ts"
import { WORKFLOW_AGENT_PREFIX } from "../workflow/codec.ts"

/** The per-incarnation services a `ThreadObject` class provides to its application layer. */
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
  | ThreadMaintenanceFailpoint
  | RuntimeFailpoint

/** What the application's Thread layer provides: the runtime and the maintenance pass. */
export type ThreadObjectThread =
  DurableAgentRuntime | ThreadMaintenance | ThreadPublication | ThreadProjectionMaintenance

/**
 * Test failpoints of an incarnation, made by `Testing.failpoints`: the state its storage is
 * built over, and its failpoint services, both from the live state so a hit can abort it.
 */
export interface ThreadObjectFailpoints {
  readonly state: (ctx: DurableObjectState) => DurableObjectState
  readonly layer: (ctx: DurableObjectState) => Layer.Layer<ThreadMaintenanceFailpoint | RuntimeFailpoint>
}

/** How the class builds the platform of each incarnation. */
export interface ThreadObjectOptions {
  /** Overrides of `CLOUDFLARE_RUNTIME_DEFAULTS`, decoded once per incarnation. */
  readonly config?: CloudflareDurableRuntimeConfigOverrides
  /**
   * The env binding of this class's own namespace (e.g. `"THREADS"`). The incarnation checks
   * that it addresses this Object and provides it to the application as
   * `ThreadObjectNamespace`; other Objects reach this one through it, and it is the default
   * namespace of its children. Needed to start children.
   */
  readonly namespaceBinding?: string
  /**
   * The check every call passes, reads included, with its kind (`read`, `mutate`, `operate`),
   * the caller and the Thread it addresses; see `AuthorizationCheck`. Without it every caller
   * that reaches the Object (a Worker holding its namespace binding) is trusted with every call.
   */
  readonly authorization?: Authorization
  /** Test failpoints from `Testing.failpoints`; production Objects have none. */
  readonly failpoints?: ThreadObjectFailpoints
}

/**
 * Hooks of `ThreadObject.layer`. Host maintenance (`ThreadHostMaintenance`, several through
 * `ThreadHostMaintenance.all`) is provided to the layer like any service. Message delivery
 * between Threads is the Object's own driver and not an option: an application's own
 * deliveries are host maintenance.
 */
export interface ThreadLayerOptions<EP, RP, EJ, RJ> {
  /** A `ThreadPublication` gate; none by default. */
  readonly publication?: Layer.Layer<ThreadPublication, EP, RP>
  /** A `ThreadProjectionMaintenance`; none by default. */
  readonly projection?: Layer.Layer<ThreadProjectionMaintenance, EJ, RJ>
}

// The configuration is composed of these: its decoded value holds theirs, already checked.
const runtimeSettingsOf = Schema.decodeSync(DurableRuntimeSettings)
const ledgerLimitsOf = Schema.decodeSync(LedgerLimits)

/**
 * @internal The Cloudflare configuration, decoded once, and the runtime settings, ledger limits
 * and ledger retention it is composed of (the simulation builds its incarnations from this too).
 * A ledger that keeps everything dates no settled row: retention's index costs nothing then.
 */
export const configLayers = (overrides: ThreadObjectOptions["config"]) => {
  const cloudflare = CloudflareDurableRuntimeConfig.layer(overrides)
  const derived = Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* CloudflareDurableRuntimeConfig
      return Layer.mergeAll(
        Layer.succeed(DurableRuntimeConfig, runtimeSettingsOf(config)),
        Layer.succeed(SubmissionLedgerLimits, ledgerLimitsOf(config.limits)),
        Layer.succeed(SubmissionLedgerRetention, {
          enabled: config.retention.settledForMillis !== "forever",
        }),
      )
    }),
  )
  return Layer.provideMerge(derived, cloudflare)
}

/**
 * @internal The platform of one incarnation: one gate, one storage seam, one config.
 * `routedPort` is `RoutedPort.layer`, given by the public module that owns it.
 */
export const platformLayer = (
  ctx: DurableObjectState,
  env: Cloudflare.Env,
  options: ThreadObjectOptions,
  routedPort: Layer.Layer<RoutedPort, never, DurableObjectContext>,
) => {
  const state = options.failpoints === undefined ? ctx : options.failpoints.state(ctx)
  const failpoints =
    options.failpoints === undefined
      ? Layer.mergeAll(ThreadMaintenanceFailpoint.layer, RuntimeFailpoint.layer)
      : options.failpoints.layer(ctx)
  const base = Layer.mergeAll(
    DurableObjectContext.layer(state, env),
    sqlClientLayer(state.storage),
    configLayers(options.config),
    failpoints,
    ProgressHub.layer,
    // Only a workflow's admission takes deferred completions kept for it (any other runs no
    // statement for them), and `sendEventByKey` keeps none for another agent.
    Layer.succeed(EarlyEventAgents, { takes: (agentId) => agentId.startsWith(WORKFLOW_AGENT_PREFIX) }),
  )
  return Layer.mergeAll(
    ThreadMutationGate.layer,
    DurableAlarmService.layer,
    MessageOutbox.layer.pipe(
      Layer.provideMerge(ThreadHistory.layer),
      Layer.provideMerge(SubmissionLedger.layer),
    ),
    routedPort,
    databaseCapacityLayer,
    Layer.succeed(SelfAddress, {
      objectId: ctx.id.toString(),
      ...(options.namespaceBinding === undefined ? {} : { namespace: options.namespaceBinding }),
    }),
  ).pipe(Layer.provideMerge(base))
}

/** @internal The namespace of this class, when `namespaceBinding` names it. */
export const namespaceLayer = (ctx: DurableObjectState, env: Cloudflare.Env, binding: string | undefined) =>
  binding === undefined ? Layer.empty : ThreadObjectNamespace.layer(ctx, env, binding)

/**
 * @internal The application's Thread layer; see `ThreadObject.layer`. Message delivery is the
 * Object's own driver (`ThreadMessageDelivery` is internal, so an application has none to
 * provide); `delivery` replaces it for tests that script what the pass's delivery does. `port`
 * is the `RoutedPort` key, given by the public module that owns it.
 */
export const threadLayer =
  (port: Context.Key<RoutedPort, RoutedPort["Service"]>) =>
  <EP = never, RP = never, EJ = never, RJ = never>(
    registrations: ReadonlyArray<AnyAgentDefinition>,
    options: ThreadLayerOptions<EP, RP, EJ, RJ> = {},
    delivery?: ThreadMessageDeliveryService,
  ): Layer.Layer<ThreadObjectThread, EP | EJ | LedgerError, ThreadObjectPlatform | RP | RJ> => {
    const runtime = DurableAgentRuntime.layerWithBindings(registrations).pipe(
      Layer.provide(cloudflareWakeScheduler),
    )
    const hooks = Layer.mergeAll(
      options.publication ?? ThreadPublication.layer,
      options.projection ?? ThreadProjectionMaintenance.layer,
    )
    const native =
      delivery === undefined
        ? messageDeliveryLayer(port).pipe(Layer.provideMerge(runtime))
        : Layer.merge(runtime, Layer.succeed(ThreadMessageDelivery, delivery))
    return ThreadMaintenance.layer.pipe(Layer.provideMerge(Layer.mergeAll(hooks, native, retentionLayer)))
  }
