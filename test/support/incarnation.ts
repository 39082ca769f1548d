/**
 * The one incarnation builder of the workerd suites: the real layers of a `ThreadObject`
 * incarnation (the platform: storage seam, decoded config, migrations, ledger, history, gate,
 * alarm service, failpoints; and `ThreadObject.layer` with the application's hooks: runtime,
 * wake scheduler, maintenance) over an Object's live state, built fresh into the calling scope. A second incarnation over the same state is
 * what a new instance of the Object would build after an eviction.
 */
import { env } from "cloudflare:test"
import { Context, Effect, Layer } from "effect"
import type { Scope } from "effect"
import {
  DurableAlarmService,
  ThreadHostMaintenance,
  type ThreadHostMaintenanceService,
  ThreadMaintenance,
  type ThreadMaintenanceFailpointHandler,
  ThreadMutationGate,
  ThreadPublication,
  type ThreadPublicationService,
} from "../../src/Alarm.ts"
import type { CloudflareDurableRuntimeConfigOverrides } from "../../src/CloudflareConfig.ts"
import type { ThreadMessageDeliveryService } from "../../src/internal/maintenance/hooks.ts"
import type { AnyAgentDefinition } from "../../src/core/AgentRegistration.ts"
import { DurableAgentRuntime } from "../../src/core/DurableAgentRuntime.ts"
import type { RuntimeFailpointHandler } from "../../src/core/RuntimeFailpoint.ts"
import { ThreadArchive, type ThreadArchiveService } from "../../src/core/Retention.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import { ThreadProjectionMaintenance } from "../../src/core/ThreadProjectionMaintenance.ts"
import { platformLayer, threadLayer } from "../../src/internal/object/layers.ts"
import type * as ThreadObject from "../../src/ThreadObject.ts"
import { RoutedPort } from "../../src/RoutedPort.ts"
import { failpoints } from "../../src/Testing.ts"

/** What one incarnation runs with; everything defaults to what an application leaves out. */
export interface IncarnationOptions {
  /** The agents of this deployment (none by default). */
  readonly agents?: ReadonlyArray<AnyAgentDefinition>
  readonly config?: CloudflareDurableRuntimeConfigOverrides
  /** Maintenance failpoints (a switchboard's `handler`). */
  readonly maintenance?: ThreadMaintenanceFailpointHandler
  /** Runtime failpoints (a switchboard's `handler`). */
  readonly runtime?: RuntimeFailpointHandler
  readonly publication?: ThreadPublicationService
  readonly projection?: ThreadProjectionMaintenance["Service"]
  /** Replaces the native message delivery. */
  readonly messages?: ThreadMessageDeliveryService
  readonly host?: ThreadHostMaintenanceService
  /**
   * Host maintenance as an application provides it to `ThreadObject.layer`: a layer over the
   * platform (e.g. `ThreadHostMaintenance.all([...])`). Takes the place of `host`.
   */
  readonly hostLayer?: Layer.Layer<never, unknown, ThreadObject.ThreadObjectPlatform>
  /** The archive retention hands settled Submissions to. */
  readonly archive?: ThreadArchiveService
}

type IncarnationServices = ThreadObject.ThreadObjectPlatform | ThreadObject.ThreadObjectThread

/** The services of one incarnation. */
export interface Incarnation {
  readonly maintenance: ThreadMaintenance["Service"]
  readonly gate: ThreadMutationGate["Service"]
  readonly alarm: DurableAlarmService["Service"]
  readonly runtime: DurableAgentRuntime["Service"]
  readonly ledger: SubmissionLedger["Service"]
  readonly history: ThreadHistory["Service"]
  /** Everything the incarnation provides, to run entry points or build more layers over it. */
  readonly context: Context.Context<IncarnationServices>
}

const contextValues = (options: IncarnationOptions) =>
  Layer.merge(
    options.hostLayer ??
      (options.host === undefined ? Layer.empty : Layer.succeed(ThreadHostMaintenance, options.host)),
    options.archive === undefined ? Layer.empty : Layer.succeed(ThreadArchive, options.archive),
  )

/** Builds a fresh incarnation over the Object's storage, into the current scope. */
export const incarnation = (
  ctx: DurableObjectState,
  options: IncarnationOptions = {},
): Effect.Effect<Incarnation, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { maintenance, runtime } = options
    const platform = platformLayer(
      ctx,
      env,
      {
        ...(options.config === undefined ? {} : { config: options.config }),
        failpoints: failpoints({
          ...(maintenance === undefined ? {} : { maintenance: () => maintenance }),
          ...(runtime === undefined ? {} : { runtime: () => runtime }),
        }),
      },
      RoutedPort.layer,
    )
    const thread = threadLayer(RoutedPort)(
      options.agents ?? [],
      {
        ...(options.publication === undefined
          ? {}
          : { publication: Layer.succeed(ThreadPublication, options.publication) }),
        ...(options.projection === undefined
          ? {}
          : { projection: Layer.succeed(ThreadProjectionMaintenance, options.projection) }),
      },
      options.messages,
    ).pipe(Layer.provide(contextValues(options)))
    const layer = Layer.provideMerge(thread, platform)
    const context: Context.Context<IncarnationServices> = yield* Layer.build(Layer.fresh(layer)).pipe(
      Effect.orDie,
    )
    return {
      maintenance: Context.get(context, ThreadMaintenance),
      gate: Context.get(context, ThreadMutationGate),
      alarm: Context.get(context, DurableAlarmService),
      runtime: Context.get(context, DurableAgentRuntime),
      ledger: Context.get(context, SubmissionLedger),
      history: Context.get(context, ThreadHistory),
      context,
    }
  })

/** A fresh `ThreadMaintenance` over an incarnation's services (its gate and runtime shared). */
export const freshMaintenance = (incarnation: Incarnation) =>
  Effect.map(
    Layer.build(
      Layer.fresh(ThreadMaintenance.layer).pipe(Layer.provide(Layer.succeedContext(incarnation.context))),
    ),
    (context) => Context.get(context, ThreadMaintenance),
  )
