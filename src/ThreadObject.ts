/**
 * `ThreadObject`: the Durable Object class that hosts durable agent Threads.
 *
 * The constructor does only O(1) local work under `blockConcurrencyWhile`: it builds the
 * incarnation's layers once (config decode, migrations) and runs `ThreadMaintenance.ensureAlarm`.
 * It never runs recovery and never calls another Object. An Object whose storage holds nothing
 * (no table, no key) is not built until a call needs it: its reads answer as an empty Object's
 * do (`internal/object/coldReads.ts`), every call is decoded and authorized first, and the
 * first call that needs the incarnation builds it under the same gate, its maintenance record
 * clean. `alarm()` runs one maintenance pass; a failed pass rejects, so workerd redelivers. Its
 * call methods are derived from the one table of calls (`internal/object/calls.ts`): each
 * decodes its request and caller, passes the application's authorization with the call's kind,
 * and runs the call's handler. Mutations go through the shared mutation gate; reads never touch
 * maintenance state. One physical Object may host several Threads (lanes) that share its alarm
 * and maintenance record. Its fibers run on a scheduler that keeps a pass's or call's writes in
 * one turn, and so one commit (`internal/turns.ts`).
 */
import { DurableObject } from "cloudflare:workers"
import { Cause, Clock, Effect, Exit, Layer, ManagedRuntime } from "effect"
import type { ThreadObjectNamespace } from "./CloudflareBindings.ts"
import type { AnyAgentDefinition } from "./core/AgentRegistration.ts"
import type { LedgerError } from "./core/SubmissionLedger.ts"
import { safeCauseMessage } from "./internal/boundary.ts"
import { ThreadMaintenance } from "./internal/maintenance/maintenance.ts"
import { recordDamageOf } from "./internal/maintenance/errors.ts"
import { FreshStore } from "./internal/maintenance/freshStore.ts"
import { lastSeenAlarm } from "./internal/maintenance/transaction.ts"
import { CALL_NAMES, type CallName } from "./internal/object/calls.ts"
import type { DispatchedCalls, ThreadObjectServices } from "./internal/object/dispatch.ts"
import { objectAdmittedCalls, objectCalls } from "./internal/object/handlers.ts"
import {
  type ColdAdmissions,
  type ColdCalls,
  coldAdmissions,
  coldCalls,
  coldLayer,
  type ColdServices,
  isColdRead,
  storageIsEmpty,
} from "./internal/object/coldReads.ts"
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
import { warnUnknownLogSetting } from "./internal/observability/maintenanceLog.ts"
import { decodePortEnvelope, isPortRefusal, toPortResult } from "./internal/object/portCall.ts"
import { portCall } from "./internal/object/portHandlers.ts"
import { declaredError, type RpcResult, toRpcResult } from "./internal/object/rpc.ts"
import { objectSchedulerLayer } from "./internal/turns.ts"
import { RoutedPort } from "./RoutedPort.ts"

/** A cold read or admission, loosely typed for the one runner of them all. */
type AnyColdCall = (request: unknown, caller?: unknown) => Effect.Effect<unknown, unknown, ColdServices>

/** An admitted call, loosely typed. */
type AnyAdmittedCall = (request: unknown) => Effect.Effect<unknown, unknown, ThreadObjectServices>

type AdmittedCalls = ReturnType<typeof objectAdmittedCalls>

/** What an Object not yet built answers with: its reads and every call's admission. */
interface Cold {
  readonly runtime: ManagedRuntime.ManagedRuntime<ColdServices, unknown>
  readonly reads: ColdCalls
  readonly admissions: ColdAdmissions
}

/** A dispatched call, whichever it is. */
type AnyDispatchedCall = (
  request: unknown,
  caller: unknown,
) => Effect.Effect<unknown, unknown, ThreadObjectServices>

export type {
  Authorization,
  AuthorizationCheck,
  AuthorizationRequest,
  PrivilegedEntryPoint,
} from "./internal/object/authorization.ts"
export type { CallKind, CallName } from "./internal/object/calls.ts"
export type {
  ThreadLayerOptions,
  ThreadObjectFailpoints,
  ThreadObjectOptions,
  ThreadObjectPlatform,
  ThreadObjectThread,
} from "./internal/object/layers.ts"

/**
 * The RPC surface of a `ThreadObject`, one method per call of its table: each takes the encoded
 * request and the encoded caller (`ThreadClient` sends both) and answers with an envelope.
 */
export type ThreadObjectCallMethods = {
  readonly [K in CallName]: (request: unknown, caller?: unknown) => Promise<RpcResult>
}

/** The RPC surface of a `ThreadObject`; the typed client (`ThreadClient`) speaks it. */
export interface ThreadObjectRpc extends ThreadObjectCallMethods {
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
) => Layer.Layer<ThreadObjectThread, EP | EJ | LedgerError, ThreadObjectPlatform | RP | RJ> =
  threadLayer(RoutedPort)

/**
 * Builds the Durable Object class of an application layer (`layer(agents)` composed with the
 * application's hooks). Each incarnation builds the platform (storage, config, ledger and
 * history, the one mutation gate, the alarm service) from its state, env and `options`, then
 * the application layer over it; `options.authorization` checks every call (without it, every
 * caller holding the binding is trusted). Export the class under the name its wrangler binding uses:
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
      Layer.provideMerge(objectSchedulerLayer),
    ) as Layer.Layer<ThreadObjectServices, unknown>

  class ThreadObject extends DurableObject<Cloudflare.Env> {
    readonly #runtime: ManagedRuntime.ManagedRuntime<ThreadObjectServices, unknown>
    #calls: DispatchedCalls | undefined
    #admitted: AdmittedCalls | undefined
    /** Until the incarnation is built, on a store that held nothing when it began. */
    readonly #cold: Cold | undefined
    #starting: Promise<void> | undefined

    constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
      super(ctx, env)
      this.#runtime = ManagedRuntime.make(incarnation(ctx, env))
      // An Object whose storage holds nothing is not built until a call needs it: its reads
      // answer as an empty Object does, and every call is decoded and authorized first, so
      // neither a read nor a refused request runs the migrations or arms the alarm. The check
      // is synchronous, before any event is let in, and every write of this class goes through
      // the built incarnation; see docs/operating.md.
      if (storageIsEmpty(ctx.storage)) {
        const runtime = ManagedRuntime.make(coldLayer(ctx, env, options))
        this.#cold = {
          runtime,
          reads: coldCalls(options.authorization),
          admissions: coldAdmissions(options.authorization),
        }
        // Fails as the built Object would (a misnamed binding, a bad configuration).
        void ctx.blockConcurrencyWhile(() => runtime.runPromise(warnUnknownLogSetting(env)))
        return
      }
      this.#cold = undefined
      void ctx.blockConcurrencyWhile(() => this.#start({ warn: true, freshStore: false }))
    }

    /**
     * Builds the incarnation (migrations, config) and ensures the alarm. A failure here resets
     * the Object; the next request builds a fresh incarnation. A damaged maintenance record is
     * not such a failure: the Object stays reachable (reads and the repair answer; mutations
     * and passes refuse) instead of breaking its input gate. On a store that held nothing
     * (`freshStore`) an absent record is written clean: the bootstrap's dirty generation is for
     * stores older than the record, and its pass would find nothing.
     */
    #start(start: { readonly warn: boolean; readonly freshStore: boolean }): Promise<void> {
      const env = this.env
      return this.#runtime
        .runPromise(
          Effect.gen(function* () {
            if (start.warn) yield* warnUnknownLogSetting(env)
            const maintenance = yield* ThreadMaintenance
            yield* maintenance.ensureAlarm.pipe(
              Effect.provideService(FreshStore, start.freshStore),
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
          }),
        )
        .then(() => {
          this.#calls = objectCalls(options.authorization)
          this.#admitted = objectAdmittedCalls()
          return this.#noteAlarm()
        })
    }

    /** The built incarnation: on a cold Object, built once, under the input gate. */
    #warm(): Promise<void> {
      if (this.#calls !== undefined) return Promise.resolve()
      // Checked again under the gate, before the migrations: a subclass may have written beside
      // the Object since the constructor (or since the call's own check), and only a store with
      // nothing in it starts with a clean record.
      this.#starting ??= this.ctx.blockConcurrencyWhile(() =>
        this.#start({ warn: false, freshStore: storageIsEmpty(this.ctx.storage) }),
      )
      return this.#starting
    }

    /** The calls, set by the constructor gate before any request is let in. */
    get #ready(): DispatchedCalls {
      if (this.#calls === undefined) throw new Error("the ThreadObject incarnation did not start")
      return this.#calls
    }

    /** The alarm this incarnation last saw scheduled, to measure delivery lag. */
    #expectedAlarm: number | null = null

    async #noteAlarm(): Promise<void> {
      // Every write of the slot is a maintenance transaction, which leaves what it set; only
      // before the first one does this ask workerd (from memory outside a handler).
      const seen = lastSeenAlarm(this.ctx.storage)
      this.#expectedAlarm = seen !== undefined ? seen : await this.ctx.storage.getAlarm()
    }

    override async alarm(): Promise<void> {
      await this.#warm()
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

    /** Runs one call to its envelope; a defect or an interruption is logged and rejects. */
    async #call(name: CallName, request: unknown, caller: unknown): Promise<RpcResult> {
      const cold = this.#calls === undefined ? this.#cold : undefined
      if (cold !== undefined) {
        // Asked again on every call (one row read): a subclass may have written the storage
        // itself since the constructor looked, and then the empty answers would be wrong.
        if (storageIsEmpty(this.ctx.storage)) return this.#coldCall(cold, name, request, caller)
        await this.#warm()
      }
      const call = this.#ready[name] as AnyDispatchedCall
      return this.#answer(name, await this.#runtime.runPromiseExit(call(request, caller)))
    }

    /**
     * A call before the incarnation is built: a read answers from the empty store; any other
     * call is admitted (decoded, authorized) first, and only then builds the incarnation.
     */
    async #coldCall(cold: Cold, name: CallName, request: unknown, caller: unknown): Promise<RpcResult> {
      if (isColdRead(name)) {
        const exit = await cold.runtime.runPromiseExit((cold.reads[name] as AnyColdCall)(request, caller))
        if (Exit.isFailure(exit) && declaredError(name, exit.cause) === undefined)
          await cold.runtime.runPromise(
            Effect.logError(`ThreadObject.${name} failed unexpectedly`, exit.cause),
          )
        return toRpcResult(name, exit)
      }
      const admitted = await cold.runtime.runPromiseExit(
        (cold.admissions[name] as AnyColdCall)(request, caller),
      )
      if (Exit.isFailure(admitted)) {
        if (declaredError(name, admitted.cause) === undefined)
          await cold.runtime.runPromise(
            Effect.logError(`ThreadObject.${name} failed unexpectedly`, admitted.cause),
          )
        return toRpcResult(name, admitted)
      }
      await this.#warm()
      const run = (this.#admitted as AdmittedCalls)[name] as AnyAdmittedCall
      return this.#answer(name, await this.#runtime.runPromiseExit(run(admitted.value)))
    }

    /** A built incarnation's answer: the alarm noted, an unexpected failure logged. */
    async #answer(name: CallName, exit: Exit.Exit<unknown, unknown>): Promise<RpcResult> {
      await this.#noteAlarm()
      if (Exit.isFailure(exit) && declaredError(name, exit.cause) === undefined) {
        await this.#runtime.runPromise(
          Effect.logError(`ThreadObject.${name} failed unexpectedly`, exit.cause),
        )
      }
      return toRpcResult(name, exit)
    }

    static {
      // One method per call of the table, on the prototype: Workers RPC exposes prototype
      // methods, and a subclass may still override or add its own.
      for (const name of CALL_NAMES) {
        Object.defineProperty(this.prototype, name, {
          value: function (this: ThreadObject, request: unknown, caller?: unknown) {
            return this.#call(name, request, caller)
          },
          writable: true,
          configurable: true,
        })
      }
    }

    async portCall(request: unknown): Promise<RpcResult> {
      const cold = this.#calls === undefined ? this.#cold : undefined
      if (cold !== undefined) {
        // As a call: refused before the Object is built, and a description of a child that
        // was never admitted answers from the empty store.
        if (storageIsEmpty(this.ctx.storage)) {
          const decoded = await cold.runtime.runPromiseExit(decodePortEnvelope(request))
          if (Exit.isFailure(decoded)) return toPortResult(decoded as Exit.Exit<never, unknown>)
          if (decoded.value.request._tag === "DescribeChild")
            return toPortResult(Exit.succeed({ _tag: "ChildDescribed" } as const))
        }
        await this.#warm()
      }
      const exit = await this.#runtime.runPromiseExit(portCall(request))
      await this.#noteAlarm()
      // The sender sees only that the call was rejected: the cause is logged here, as #call does.
      if (Exit.isFailure(exit) && !isPortRefusal(exit.cause) && !Cause.hasInterruptsOnly(exit.cause)) {
        await this.#runtime.runPromise(
          Effect.logError("ThreadObject.portCall failed unexpectedly", exit.cause),
        )
      }
      return toPortResult(exit)
    }
  }
  return ThreadObject as unknown as ThreadObjectClass
}
