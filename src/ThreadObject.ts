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
import { Cause, Clock, Effect, Exit, Layer, ManagedRuntime, Schema } from "effect"
import { Receipt } from "./core/DurableAgentRuntime.ts"
import { Settlement } from "./core/SubmissionLedger.ts"
import { safeCauseMessage } from "./internal/boundary.ts"
import { ThreadMaintenance } from "./internal/maintenance/maintenance.ts"
import { makeEntryPoints } from "./internal/object/entryPoints.ts"
import {
  incarnationLayer,
  type ThreadObjectOptions,
  type ThreadObjectServices,
} from "./internal/object/layers.ts"
import { metricsLayer, recordPass } from "./internal/object/metrics.ts"
import { toPortResult } from "./internal/object/portCall.ts"
import type { RpcResult } from "./internal/object/protocol.ts"
import { type ThreadObjectError, toRpcResult } from "./internal/object/rpc.ts"
import {
  HistoryPageView,
  MaintenanceInspection,
  SubmissionStatus,
  ThreadStatus,
} from "./internal/object/views.ts"

export type {
  ThreadObjectFailpoints,
  ThreadObjectOptions,
  ThreadObjectPlatform,
} from "./internal/object/layers.ts"
export {
  STORAGE_FAILPOINT_LOCATIONS,
  type StorageFailpointHandler,
  type StorageFailpointLocation,
} from "./internal/object/instrumentedStorage.ts"

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
  /** A routed request from another `ThreadObject` (see `RoutedPort`). */
  portCall(request: unknown): Promise<RpcResult>
}

/** The constructor of a `ThreadObject` class. */
export type ThreadObjectClass = new (
  ctx: DurableObjectState,
  env: Cloudflare.Env,
) => DurableObject<Cloudflare.Env> & ThreadObjectRpc

/** The layer of one incarnation over a live state, for hosts that assemble their own Object. */
export const layer = (
  ctx: DurableObjectState,
  env: Cloudflare.Env,
  options: ThreadObjectOptions,
): Layer.Layer<ThreadObjectServices, unknown> =>
  incarnationLayer(ctx, env, options).pipe(Layer.provideMerge(metricsLayer))

/**
 * Builds the Durable Object class for these agents and hooks. Export it from the Worker under
 * the class name its wrangler binding uses: `export class Threads extends ThreadObject.make({ agents }) {}`.
 */
export const make = (options: ThreadObjectOptions): ThreadObjectClass => {
  return class ThreadObject extends DurableObject<Cloudflare.Env> implements ThreadObjectRpc {
    readonly #runtime: ManagedRuntime.ManagedRuntime<ThreadObjectServices, unknown>
    readonly #entry: ReturnType<typeof makeEntryPoints>

    constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
      super(ctx, env)
      this.#runtime = ManagedRuntime.make(layer(ctx, env, options))
      this.#entry = makeEntryPoints()
      // A failure here resets the Object; the next request builds a fresh incarnation.
      void ctx.blockConcurrencyWhile(() =>
        this.#runtime
          .runPromise(
            Effect.gen(function* () {
              const maintenance = yield* ThreadMaintenance
              yield* maintenance.ensureAlarm
            }),
          )
          .then(() => this.#noteAlarm()),
      )
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
      effect: Effect.Effect<A, ThreadObjectError, ThreadObjectServices>,
    ): Promise<RpcResult> {
      const exit = await this.#runtime.runPromiseExit(effect)
      await this.#noteAlarm()
      if (Exit.isFailure(exit) && !exit.cause.reasons.some(Cause.isFailReason)) {
        await this.#runtime.runPromise(
          Effect.logError(`ThreadObject.${entryPoint} failed unexpectedly`, exit.cause),
        )
      }
      return toRpcResult(entryPoint, value, exit as Exit.Exit<A, ThreadObjectError>)
    }

    submit(request: unknown) {
      return this.#call("submit", Receipt, this.#entry.submit(request))
    }
    abort(request: unknown) {
      return this.#call("abort", Schema.Void, this.#entry.abort(request))
    }
    resolveApproval(request: unknown) {
      return this.#call("resolveApproval", Schema.Void, this.#entry.resolveApproval(request))
    }
    resolveUnknown(request: unknown) {
      return this.#call("resolveUnknown", Schema.Void, this.#entry.resolveUnknown(request))
    }
    retry(request: unknown) {
      return this.#call("retry", Schema.Void, this.#entry.retry(request))
    }
    submissionStatus(request: unknown) {
      return this.#call("submissionStatus", SubmissionStatus, this.#entry.submissionStatus(request))
    }
    threadStatus(request: unknown) {
      return this.#call("threadStatus", ThreadStatus, this.#entry.threadStatus(request))
    }
    history(request: unknown) {
      return this.#call("history", HistoryPageView, this.#entry.history(request))
    }
    awaitSettlement(request: unknown) {
      return this.#call("awaitSettlement", Settlement, this.#entry.awaitSettlement(request))
    }
    inspectMaintenance() {
      return this.#call("inspectMaintenance", MaintenanceInspection, this.#entry.inspectMaintenance())
    }
    async portCall(request: unknown): Promise<RpcResult> {
      const exit = await this.#runtime.runPromiseExit(this.#entry.portCall(request))
      await this.#noteAlarm()
      return toPortResult(exit)
    }
  }
}
