/**
 * In-process harness of the maintenance suites. A test body runs inside one SQLite-backed
 * Durable Object (with the test's services, so `TestClock` drives every pass) and builds
 * incarnations: fresh layers over the same storage. Abandoning an incarnation whose fiber is
 * frozen at a failpoint simulates a kill (no finalizers run, memory state is lost).
 */
import { SqliteClient } from "@effect/sql-sqlite-do"
import { env, runInDurableObject } from "cloudflare:test"
import { Context, Effect, Layer, Option } from "effect"
import type { Scope } from "effect"
import { TestClock } from "effect/testing"
import { DurableObjectContext } from "../../src/CloudflareBindings.ts"
import {
  CloudflareDurableRuntimeConfig,
  type CloudflareDurableRuntimeConfigOverrides,
} from "../../src/CloudflareConfig.ts"
import {
  DurableAlarmService,
  ThreadHostMaintenance,
  type ThreadHostMaintenanceService,
  ThreadMaintenance,
  ThreadMaintenanceFailpoint,
  type ThreadMaintenanceFailpointHandler,
  ThreadMessageDelivery,
  type ThreadMessageDeliveryService,
  ThreadMutationGate,
  ThreadPublication,
  type ThreadPublicationService,
} from "../../src/Alarm.ts"
import { DurableAgentRuntime } from "../../src/core/DurableAgentRuntime.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { ThreadProjectionMaintenance } from "../../src/core/ThreadProjectionMaintenance.ts"
import { MAINTENANCE_STATE_KEY } from "../../src/internal/maintenance/state.ts"

/** One day: virtual time runs this far ahead so workerd's real alarms never race a test. */
export const DAY = 86_400_000

/** A unique Object name per test. */
export const objectName = (label: string) => `cf-alarm-${label}-${crypto.randomUUID()}`

/** Runs `body` inside the Object `name` with the calling test's services (TestClock included). */
export const inObject = <A, E>(
  name: string,
  body: (ctx: DurableObjectState) => Effect.Effect<A, E, Scope.Scope>,
): Effect.Effect<A, E> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<never>()
    const exit = yield* Effect.promise(() =>
      runInDurableObject(env.MAINTENANCE_TEST.getByName(name), (_instance, state) =>
        Effect.runPromiseExit(Effect.provideContext(Effect.scoped(body(state)), context)),
      ),
    )
    return yield* exit
  })

/** Sets virtual time one day ahead of the wall clock and returns it. */
export const dayAhead = Effect.gen(function* () {
  const now = Date.now() + DAY
  yield* TestClock.setTime(now)
  return now
})

/** The storage seam of an incarnation. */
export const storageLayer = (ctx: DurableObjectState) =>
  Layer.mergeAll(DurableObjectContext.layer(ctx, env), SqliteClient.layer({ storage: ctx.storage }))

/** Options of one incarnation. */
export interface IncarnationOptions {
  readonly config?: CloudflareDurableRuntimeConfigOverrides
  readonly failpoint?: ThreadMaintenanceFailpointHandler
  readonly publication?: ThreadPublicationService
  readonly messages?: ThreadMessageDeliveryService
  readonly host?: ThreadHostMaintenanceService
  readonly projection?: ThreadProjectionMaintenance["Service"]
}

/** Config, storage, failpoints, alarm service and the gate: everything but the runtime. */
export const baseLayer = (ctx: DurableObjectState, options: IncarnationOptions = {}) => {
  const base = Layer.mergeAll(
    storageLayer(ctx),
    CloudflareDurableRuntimeConfig.layer(options.config),
    options.failpoint === undefined
      ? ThreadMaintenanceFailpoint.layer
      : ThreadMaintenanceFailpoint.layerTest(options.failpoint),
  )
  return Layer.mergeAll(ThreadMutationGate.layer, DurableAlarmService.layer).pipe(Layer.provideMerge(base))
}

/** The host hooks an incarnation's maintenance layer captures. */
export const hooksLayer = (options: IncarnationOptions) =>
  Layer.mergeAll(
    options.publication === undefined
      ? ThreadPublication.layer
      : Layer.succeed(ThreadPublication, options.publication),
    options.projection === undefined
      ? ThreadProjectionMaintenance.layer
      : Layer.succeed(ThreadProjectionMaintenance, options.projection),
    options.messages === undefined ? Layer.empty : Layer.succeed(ThreadMessageDelivery, options.messages),
    options.host === undefined ? Layer.empty : Layer.succeed(ThreadHostMaintenance, options.host),
  )

const mustNotRun = (operation: string) =>
  Effect.die(new Error(`the runtime must not be called: ${operation}`))

/** A runtime that dies on any use: for paths that must do no native work. */
export const idleRuntimeLayer = Layer.succeed(DurableAgentRuntime, {
  validate: () => mustNotRun("validate"),
  submit: () => mustNotRun("submit"),
  submitRegistered: () => mustNotRun("submitRegistered"),
  abort: () => mustNotRun("abort"),
  resolveApproval: () => mustNotRun("resolveApproval"),
  resolveUnknown: () => mustNotRun("resolveUnknown"),
  retry: () => mustNotRun("retry"),
  awaitSettlement: () => mustNotRun("awaitSettlement"),
  runRecovery: mustNotRun("runRecovery"),
  receive: () => mustNotRun("receive"),
  recordDelivery: () => mustNotRun("recordDelivery"),
  processThreadHead: () => mustNotRun("processThreadHead"),
})

/** An incarnation without native work: the real ledger, a runtime that must not be called. */
export const idleIncarnation = (ctx: DurableObjectState, options: IncarnationOptions = {}) =>
  ThreadMaintenance.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(idleRuntimeLayer, SubmissionLedger.layer, hooksLayer(options))),
    Layer.provideMerge(baseLayer(ctx, options)),
  )

/** Builds a layer into the current scope and returns its services. */
export const build = <ROut, E>(layer: Layer.Layer<ROut, E>) => Layer.build(Layer.fresh(layer))

/** Runs `effect` with the services of an incarnation. */
export const within =
  <ROut>(services: Context.Context<ROut>) =>
  <A, E, R extends ROut>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E> =>
    Effect.provideContext(effect, services as Context.Context<R>)

/** The stored alarm, epoch ms. */
export const alarmOf = (ctx: DurableObjectState) => Effect.promise(() => ctx.storage.getAlarm())

/** The raw encoded maintenance record. */
export const rawState = (ctx: DurableObjectState) =>
  Effect.promise(() => ctx.storage.get<Record<string, unknown>>(MAINTENANCE_STATE_KEY))

/** The generation pair of the record, as bigints. */
export const generations = (ctx: DurableObjectState) =>
  Effect.map(rawState(ctx), (raw) =>
    Option.fromNullishOr(raw).pipe(
      Option.map((record) => ({
        dirty: BigInt(String(record["dirty"])),
        processed: BigInt(String(record["processed"])),
      })),
    ),
  )

/** Writes a raw maintenance record. */
export const putRawState = (ctx: DurableObjectState, value: unknown) =>
  Effect.promise(() => ctx.storage.put(MAINTENANCE_STATE_KEY, value))

/** Context helper for tests that read one service. */
export const service = <I, S>(services: Context.Context<I>, key: Context.Key<I, S>): S =>
  Context.get(services, key)
