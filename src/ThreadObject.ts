/**
 * `ThreadObject`: the Durable Object class that hosts durable agent Threads.
 *
 * The constructor does only O(1) local work under `blockConcurrencyWhile`: it builds the
 * incarnation's layers once (config decode, migrations) and runs `ThreadMaintenance.ensureAlarm`.
 * It never runs recovery and never calls another Object. `alarm()` runs one maintenance pass;
 * a failed pass rejects, so workerd redelivers. Mutating entry points go through the shared
 * mutation gate; read-only ones never touch maintenance state. One physical Object may host
 * several Threads (lanes) that share its alarm and maintenance record.
 */
import { DurableObject } from "cloudflare:workers"
import { Clock, Effect, Exit, Layer, ManagedRuntime, Schema } from "effect"
import type { ThreadObjectNamespace } from "./CloudflareBindings.ts"
import type { AnyAgentDefinition } from "./core/AgentRegistration.ts"
import { Receipt } from "./core/DurableAgentRuntime.ts"
import { ThreadId } from "./core/Identifiers.ts"
import { Settlement } from "./core/SubmissionLedger.ts"
import { safeCauseMessage } from "./internal/boundary.ts"
import { ThreadMaintenance } from "./internal/maintenance/maintenance.ts"
import { recordDamageOf } from "./internal/maintenance/errors.ts"
import { MaintenanceRepair } from "./internal/maintenance/repair.ts"
import { decodeInput, type EntryPoints, makeEntryPoints } from "./internal/object/entryPoints.ts"
import { makeOperatorEntryPoints, type OperatorEntryPoints } from "./internal/object/operatorEntryPoints.ts"
import {
  ObjectObligations,
  SubmissionExplanation,
  SubmissionProgress,
  VerifyReport,
} from "./internal/operator/views.ts"
import {
  namespaceLayer,
  platformLayer,
  type ThreadLayerOptions,
  threadLayer,
  type ThreadObjectOptions,
  type ThreadObjectPlatform,
  type ThreadObjectThread,
} from "./internal/object/layers.ts"
import { metricsLayer, recordPass } from "./internal/object/metrics.ts"
import { toPortResult } from "./internal/object/portCall.ts"
import type { RpcResult } from "./internal/object/protocol.ts"
import { clientError, type EntryPointError, toRpcResult } from "./internal/object/rpc.ts"
import { RoutedPort } from "./RoutedPort.ts"
import {
  HistoryPageView,
  MaintenanceInspection,
  SubmissionStatus,
  ThreadStatus,
} from "./internal/object/views.ts"

export type {
  Authorization,
  AuthorizationCheck,
  AuthorizationRequest,
  PrivilegedEntryPoint,
} from "./internal/object/authorization.ts"
export type {
  ThreadLayerOptions,
  ThreadObjectFailpoints,
  ThreadObjectOptions,
  ThreadObjectPlatform,
  ThreadObjectThread,
} from "./internal/object/layers.ts"

/** Everything an incarnation provides to its entry points. */
type ThreadObjectServices = ThreadObjectPlatform | ThreadObjectThread

/** The RPC surface of a `ThreadObject`; the typed client (`ThreadClient`) speaks it. */
export interface ThreadObjectRpc {
  submit(request: unknown): Promise<RpcResult>
  abort(request: unknown): Promise<RpcResult>
  resolveApproval(request: unknown): Promise<RpcResult>
  resolveUnknown(request: unknown): Promise<RpcResult>
  retry(request: unknown): Promise<RpcResult>
  submissionStatus(request: unknown): Promise<RpcResult>
  threadStatus(request: unknown): Promise<RpcResult>
  history(request: unknown): Promise<RpcResult>
  awaitSettlement(request: unknown): Promise<RpcResult>
  inspectMaintenance(): Promise<RpcResult>
  explain(request: unknown): Promise<RpcResult>
  obligations(request: unknown): Promise<RpcResult>
  verify(request: unknown): Promise<RpcResult>
  awaitProgress(request: unknown): Promise<RpcResult>
  submissions(request: unknown): Promise<RpcResult>
  threads(): Promise<RpcResult>
  wake(request: unknown): Promise<RpcResult>
  repairMaintenance(request: unknown): Promise<RpcResult>
  /** A routed request from another `ThreadObject` (see `RoutedPort`). */
  portCall(request: unknown): Promise<RpcResult>
}

/** The constructor of a `ThreadObject` class; a subclass may add methods and wrap `alarm`. */
export type ThreadObjectClass = new (
  ctx: DurableObjectState,
  env: Cloudflare.Env,
) => DurableObject<Cloudflare.Env> & ThreadObjectRpc & { alarm(): Promise<void> }

/**
 * The application's Thread layer: the durable runtime over `registrations` and the maintenance
 * pass, with an optional publication gate and projection. Provide the application's own
 * `ThreadHostMaintenance` (outboxes, relays) and other services to it by ordinary Layer
 * composition, then pass the result to `make`, which builds the platform it requires.
 */
export const layer: <EP = never, RP = never, EJ = never, RJ = never>(
  registrations: ReadonlyArray<AnyAgentDefinition>,
  options?: ThreadLayerOptions<EP, RP, EJ, RJ>,
) => Layer.Layer<ThreadObjectThread, EP | EJ, ThreadObjectPlatform | RP | RJ> = threadLayer(RoutedPort)

/**
 * Builds the Durable Object class of an application layer (`layer(agents)` composed with the
 * application's hooks). Each incarnation builds the platform (storage, config, ledger and
 * history, the one mutation gate, the alarm service) from its state, env and `options`, then
 * the application layer over it; `options.authorization` checks the privileged entry points. Export the class under the name its wrangler binding uses:
 * `export class Threads extends ThreadObject.make(ThreadsLayer) {}`.
 */
export function make<E>(
  application: Layer.Layer<ThreadObjectThread, E, ThreadObjectPlatform>,
  options?: ThreadObjectOptions,
): ThreadObjectClass
export function make<E>(
  application: Layer.Layer<ThreadObjectThread, E, ThreadObjectPlatform | ThreadObjectNamespace>,
  options: ThreadObjectOptions & { readonly namespaceBinding: string },
): ThreadObjectClass
export function make<E>(
  application: Layer.Layer<ThreadObjectThread, E, ThreadObjectPlatform | ThreadObjectNamespace>,
  options: ThreadObjectOptions = {},
): ThreadObjectClass {
  const incarnation = (ctx: DurableObjectState, env: Cloudflare.Env) =>
    application.pipe(
      Layer.provideMerge(namespaceLayer(ctx, env, options.namespaceBinding)),
      Layer.provideMerge(platformLayer(ctx, env, options, RoutedPort.layer)),
      Layer.provideMerge(metricsLayer),
    ) as Layer.Layer<ThreadObjectServices, unknown>

  return class ThreadObject extends DurableObject<Cloudflare.Env> implements ThreadObjectRpc {
    readonly #runtime: ManagedRuntime.ManagedRuntime<ThreadObjectServices, unknown>
    #started: { readonly entry: EntryPoints; readonly operator: OperatorEntryPoints } | undefined

    constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
      super(ctx, env)
      this.#runtime = ManagedRuntime.make(incarnation(ctx, env))
      // A failure here resets the Object; the next request builds a fresh incarnation. A damaged
      // maintenance record is not such a failure: the Object stays reachable (reads and the
      // repair answer; mutations and passes refuse) instead of breaking its input gate.
      void ctx.blockConcurrencyWhile(() =>
        this.#runtime
          .runPromise(
            Effect.gen(function* () {
              const maintenance = yield* ThreadMaintenance
              yield* maintenance.ensureAlarm.pipe(
                Effect.catchTag("DurableAlarmError", (error) => {
                  const damage = recordDamageOf(error)
                  return damage === undefined
                    ? Effect.fail(error)
                    : Effect.logError("Maintenance record damaged; nothing runs until repairMaintenance", {
                        field: damage.field,
                        message: damage.message,
                      })
                }),
              )
              return {
                entry: makeEntryPoints(options.authorization),
                operator: makeOperatorEntryPoints(decodeInput, options.authorization),
              }
            }),
          )
          .then((started) => {
            this.#started = started
            return this.#noteAlarm()
          }),
      )
    }

    /** The entry points, set by the constructor gate before any request is let in. */
    get #entryPoints(): EntryPoints {
      return this.#ready.entry
    }

    get #operator(): OperatorEntryPoints {
      return this.#ready.operator
    }

    get #ready() {
      if (this.#started === undefined) throw new Error("the ThreadObject incarnation did not start")
      return this.#started
    }

    /** The alarm this incarnation last saw scheduled, to measure delivery lag. */
    #expectedAlarm: number | null = null

    async #noteAlarm(): Promise<void> {
      // Outside a handler (and inside one once re-set) workerd answers from memory.
      this.#expectedAlarm = await this.ctx.storage.getAlarm()
    }

    override async alarm(): Promise<void> {
      const expected = this.#expectedAlarm
      const exit = await this.#runtime.runPromiseExit(
        Effect.gen(function* () {
          const startedAt = yield* Clock.currentTimeMillis
          const maintenance = yield* ThreadMaintenance
          const exit = yield* Effect.exit(maintenance.pass)
          yield* recordPass(exit, expected === null ? undefined : startedAt - expected)
          return yield* exit
        }),
      )
      await this.#noteAlarm()
      if (Exit.isFailure(exit)) {
        // Rejecting makes workerd redeliver; the pass already committed its bounded retry.
        throw new Error(`Thread maintenance pass failed: ${safeCauseMessage(exit.cause, "unknown failure")}`)
      }
    }

    async #call<A, I>(
      entryPoint: string,
      value: Schema.Codec<A, I>,
      effect: Effect.Effect<A, EntryPointError, ThreadObjectServices>,
    ): Promise<RpcResult> {
      const exit = await this.#runtime.runPromiseExit(effect)
      await this.#noteAlarm()
      if (Exit.isFailure(exit) && clientError(exit.cause) === undefined) {
        await this.#runtime.runPromise(
          Effect.logError(`ThreadObject.${entryPoint} failed unexpectedly`, exit.cause),
        )
      }
      return toRpcResult(entryPoint, value, exit)
    }

    submit(request: unknown) {
      return this.#call("submit", Receipt, this.#entryPoints.submit(request))
    }
    abort(request: unknown) {
      return this.#call("abort", Schema.Void, this.#entryPoints.abort(request))
    }
    resolveApproval(request: unknown) {
      return this.#call("resolveApproval", Schema.Void, this.#entryPoints.resolveApproval(request))
    }
    resolveUnknown(request: unknown) {
      return this.#call("resolveUnknown", Schema.Void, this.#entryPoints.resolveUnknown(request))
    }
    retry(request: unknown) {
      return this.#call("retry", Schema.Void, this.#entryPoints.retry(request))
    }
    submissionStatus(request: unknown) {
      return this.#call("submissionStatus", SubmissionStatus, this.#entryPoints.submissionStatus(request))
    }
    threadStatus(request: unknown) {
      return this.#call("threadStatus", ThreadStatus, this.#entryPoints.threadStatus(request))
    }
    history(request: unknown) {
      return this.#call("history", HistoryPageView, this.#entryPoints.history(request))
    }
    awaitSettlement(request: unknown) {
      return this.#call("awaitSettlement", Settlement, this.#entryPoints.awaitSettlement(request))
    }
    inspectMaintenance() {
      return this.#call("inspectMaintenance", MaintenanceInspection, this.#entryPoints.inspectMaintenance())
    }
    explain(request: unknown) {
      return this.#call("explain", SubmissionExplanation, this.#operator.explain(request))
    }
    obligations(request: unknown) {
      return this.#call("obligations", ObjectObligations, this.#operator.obligations(request))
    }
    verify(request: unknown) {
      return this.#call("verify", VerifyReport, this.#operator.verify(request))
    }
    awaitProgress(request: unknown) {
      return this.#call("awaitProgress", SubmissionProgress, this.#operator.awaitProgress(request))
    }
    submissions(request: unknown) {
      return this.#call("submissions", Schema.Array(SubmissionStatus), this.#operator.submissions(request))
    }
    threads() {
      return this.#call("threads", Schema.Array(ThreadId), this.#operator.threads())
    }
    wake(request: unknown) {
      return this.#call("wake", Schema.Void, this.#operator.wake(request))
    }
    repairMaintenance(request: unknown) {
      return this.#call("repairMaintenance", MaintenanceRepair, this.#operator.repairMaintenance(request))
    }
    async portCall(request: unknown): Promise<RpcResult> {
      const exit = await this.#runtime.runPromiseExit(this.#entryPoints.portCall(request))
      await this.#noteAlarm()
      return toPortResult(exit)
    }
  }
}
