/**
 * Harness of the runtime suites. A test body gets a world: one storage (a SQLite-backed Durable
 * Object, or an in-memory store) on which it builds incarnations, i.e. fresh runtime layers
 * over the same storage. Abandoning an incarnation whose fiber is frozen at a failpoint
 * simulates a kill: no finalizer runs and its memory is lost. Bodies run with the calling
 * test's services, so `TestClock` drives every lease, yield and poll. With `progress`, the world
 * has a live progress hub that its storage and every incarnation share (as a `ThreadObject`'s
 * incarnation does); without it, nothing publishes.
 */
import {
  AdmissionCapacity,
  type AdmissionCapacityService,
} from "../../src/core/internal/runtime/admission/admissionCapacity.ts"
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { env, runInDurableObject } from "cloudflare:test"
import { Context, Effect, Layer, Ref } from "effect"
import type { Scope } from "effect"
import type { AnyAgentDefinition } from "../../src/core/AgentRegistration.ts"
import { DurableAgentRuntime } from "../../src/core/DurableAgentRuntime.ts"
import { DurableRuntimeConfig, type DurableRuntimeSettings } from "../../src/core/DurableRuntimeConfig.ts"
import type { ThreadId } from "../../src/core/Identifiers.ts"
import { RuntimeFailpoint, type RuntimeFailpointHandler } from "../../src/core/RuntimeFailpoint.ts"
import {
  AdmissionRefused,
  SubmissionLedger,
  SubmissionLedgerLimits,
  type LedgerLimits,
} from "../../src/core/SubmissionLedger.ts"
import { layerMemoryWithLedger, layerWithLedger, ThreadHistory } from "../../src/core/ThreadHistory.ts"
import { WakeScheduler } from "../../src/core/WakeScheduler.ts"
import { MessageOutbox, SelfAddress } from "../../src/core/MessageOutbox.ts"
import { makeProgressHub } from "../../src/core/internal/progress/hub.ts"
import { ProgressHub } from "../../src/core/ProgressHub.ts"

/** The services of one incarnation. */
export type Incarnation = Context.Context<
  DurableAgentRuntime | SubmissionLedger | ThreadHistory | MessageOutbox
>

/** What one incarnation runs with. */
export interface IncarnationOptions {
  readonly agents: ReadonlyArray<AnyAgentDefinition>
  readonly failpoint?: RuntimeFailpointHandler
  readonly config?: Partial<DurableRuntimeSettings>
  /** Records wake hints. */
  readonly wakes?: Ref.Ref<ReadonlyArray<ThreadId>>
  /** Where the Object is reached; Submissions start children only when it is known. */
  readonly self?: { readonly namespace: string; readonly objectId: string }
  /** Whether new admissions fit (unbounded by default). */
  readonly capacity?: AdmissionCapacityService
}

/** One storage and the incarnations built over it. */
export interface RuntimeWorld {
  readonly incarnation: (options: IncarnationOptions) => Effect.Effect<Incarnation, never, Scope.Scope>
}

/** Runs bodies against one kind of storage. */
export interface RuntimeHarness {
  readonly label: string
  readonly run: <A, E>(
    body: (world: RuntimeWorld) => Effect.Effect<A, E, Scope.Scope>,
    options?: { readonly limits?: LedgerLimits; readonly progress?: boolean },
  ) => Effect.Effect<A, E>
}

const limitsLayer = (limits: LedgerLimits | undefined) =>
  limits === undefined ? Layer.empty : Layer.succeed(SubmissionLedgerLimits, limits)

/** One live hub for the world, or the default (inert) one. */
const progressLayer = (progress: boolean | undefined) =>
  progress === true ? Layer.succeed(ProgressHub, makeProgressHub()) : Layer.empty

const runtimeLayer = (options: IncarnationOptions) =>
  DurableAgentRuntime.layerWithBindings(options.agents).pipe(
    Layer.provide(
      Layer.mergeAll(
        options.failpoint === undefined
          ? RuntimeFailpoint.layer
          : RuntimeFailpoint.layerTest(options.failpoint),
        options.wakes === undefined
          ? WakeScheduler.layer
          : Layer.succeed(WakeScheduler, {
              notify: (threadId) =>
                Ref.update(options.wakes as Ref.Ref<ReadonlyArray<ThreadId>>, (all) => [...all, threadId]),
            }),
        DurableRuntimeConfig.layer(options.config),
        options.self === undefined ? Layer.empty : Layer.succeed(SelfAddress, options.self),
        options.capacity === undefined ? Layer.empty : Layer.succeed(AdmissionCapacity, options.capacity),
      ),
    ),
    Layer.orDie,
  )

const buildOver = <R>(
  storage: Layer.Layer<R | SubmissionLedger | ThreadHistory | MessageOutbox>,
  options: IncarnationOptions,
  progress: Layer.Layer<never>,
) =>
  Layer.build(
    Layer.fresh(runtimeLayer(options).pipe(Layer.provideMerge(storage), Layer.provide(progress))),
  ) as Effect.Effect<Incarnation, never, Scope.Scope>

/** A fresh SQLite-backed Durable Object per body; every incarnation opens its storage anew. */
export const sqlRuntimeHarness: RuntimeHarness = {
  label: "SQLite in a Durable Object",
  run: (body, options) =>
    Effect.gen(function* () {
      const context = yield* Effect.context<never>()
      const progress = progressLayer(options?.progress)
      const exit = yield* Effect.promise(() =>
        runInDurableObject(env.LEDGER_TEST.getByName(`runtime-${crypto.randomUUID()}`), (_instance, state) =>
          Effect.runPromiseExit(
            Effect.provideContext(
              Effect.scoped(
                body({
                  incarnation: (incarnation) =>
                    buildOver(
                      MessageOutbox.layer.pipe(
                        Layer.provideMerge(layerWithLedger),
                        Layer.provide(sqlClientLayer(state.storage)),
                        Layer.provide(limitsLayer(options?.limits)),
                        Layer.orDie,
                      ),
                      incarnation,
                      progress,
                    ),
                }),
              ),
              context,
            ),
          ),
        ),
      )
      return yield* exit
    }),
}

/** A fresh in-memory store per body, shared by its incarnations. */
export const memoryRuntimeHarness: RuntimeHarness = {
  label: "in memory",
  run: (body, options) =>
    Effect.scoped(
      Effect.gen(function* () {
        const progress = progressLayer(options?.progress)
        const store = yield* Layer.build(
          MessageOutbox.layerMemory.pipe(
            Layer.provideMerge(layerMemoryWithLedger),
            Layer.provide(limitsLayer(options?.limits)),
            Layer.provide(progress),
            Layer.orDie,
          ),
        )
        return yield* body({
          incarnation: (incarnation) => buildOver(Layer.succeedContext(store), incarnation, progress),
        })
      }),
    ),
}

/** Both storages, for suites that run the same scenarios on each. */
export const runtimeHarnesses: ReadonlyArray<RuntimeHarness> = [sqlRuntimeHarness, memoryRuntimeHarness]

/** Runs `effect` with the services of an incarnation. */
export const within =
  (incarnation: Incarnation) =>
  <A, E>(
    effect: Effect.Effect<A, E, DurableAgentRuntime | SubmissionLedger | ThreadHistory>,
  ): Effect.Effect<A, E> =>
    Effect.provideContext(effect, incarnation)

/** The runtime of an incarnation. */
export const runtimeOf = (incarnation: Incarnation) => Context.get(incarnation, DurableAgentRuntime)

/** The ledger of an incarnation. */
export const ledgerOf = (incarnation: Incarnation) => Context.get(incarnation, SubmissionLedger)

/** The history of an incarnation. */
export const historyOf = (incarnation: Incarnation) => Context.get(incarnation, ThreadHistory)

/** The outbox of an incarnation. */
export const outboxOf = (incarnation: Incarnation) => Context.get(incarnation, MessageOutbox)

/** A capacity that refuses every new admission (`database-bytes`) while `full` holds true. */
export const switchableCapacity = Effect.map(Ref.make(false), (full) => ({
  full,
  capacity: {
    check: (threadId: ThreadId) =>
      Effect.flatMap(Ref.get(full), (isFull) =>
        isFull
          ? Effect.fail(
              new AdmissionRefused({ threadId, reason: "database-bytes", message: "the store is full" }),
            )
          : Effect.void,
      ),
  } satisfies AdmissionCapacityService,
}))
