/**
 * Fixtures of the actionable-path suites: the full stack of one incarnation (the production
 * assembly of `ThreadObject`: storage, config, failpoints, SQLite ledger and history, the real
 * runtime, the wake scheduler, the gate and `ThreadMaintenance`), alarm delivery as workerd
 * does it, and switchboards that pause, freeze or fail a failpoint location.
 *
 * Eviction is simulated in-process: a pass forked with `abandon` and frozen at a failpoint is
 * never resumed nor interrupted (no finalizer runs), and a fresh incarnation is built over the
 * same Object storage.
 */
import { env } from "cloudflare:test"
import { Clock, Context, Deferred, Effect, Exit, Fiber, Layer, Option, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"
import {
  type MaintenancePassFailure,
  type MaintenancePassReport,
  ThreadHostMaintenance,
  type ThreadHostMaintenanceService,
  ThreadMaintenance,
  type ThreadMaintenanceFailpointLocation,
} from "../../../src/Alarm.ts"
import type { CloudflareDurableRuntimeConfigOverrides } from "../../../src/CloudflareConfig.ts"
import { type AnyAgentDefinition, define } from "../../../src/core/AgentRegistration.ts"
import { DurableAgentRuntime } from "../../../src/core/DurableAgentRuntime.ts"
import { AgentId, IdempotencyKey, type SubmissionId, ThreadId } from "../../../src/core/Identifiers.ts"
import type { RuntimeFailpointLocation } from "../../../src/core/RuntimeFailpoint.ts"
import { SubmissionLedger } from "../../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../../src/core/ThreadHistory.ts"
import { platformLayer } from "../../../src/internal/object/layers.ts"
import * as ThreadObject from "../../../src/ThreadObject.ts"
import { DurableRuntimeFailpointError, failpoints } from "../../../src/Testing.ts"
import { ran, type Runs } from "../../core/runtimeAgents.ts"
import { alarmOf, rawState } from "../harness.ts"

/** What one incarnation runs with. */
export interface RuntimeIncarnationOptions {
  readonly agents: ReadonlyArray<AnyAgentDefinition>
  readonly config?: CloudflareDurableRuntimeConfigOverrides
  readonly maintenance?: Switchboard<ThreadMaintenanceFailpointLocation, never>
  readonly runtime?: Switchboard<RuntimeFailpointLocation, DurableRuntimeFailpointError>
  readonly host?: ThreadHostMaintenanceService
}

type IncarnationServices = ThreadObject.ThreadObjectPlatform | ThreadObject.ThreadObjectThread

/** The services of one incarnation. */
export interface RuntimeIncarnation {
  readonly maintenance: ThreadMaintenance["Service"]
  readonly runtime: DurableAgentRuntime["Service"]
  readonly ledger: SubmissionLedger["Service"]
  readonly history: ThreadHistory["Service"]
  /** Everything the incarnation provides, to build more layers over it. */
  readonly context: Context.Context<IncarnationServices>
}

/** Builds a fresh incarnation over the Object's storage, into the current scope. */
export const runtimeIncarnation = (
  ctx: DurableObjectState,
  options: RuntimeIncarnationOptions,
): Effect.Effect<RuntimeIncarnation, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { maintenance, runtime, host } = options
    const platform = platformLayer(ctx, env, {
      ...(options.config === undefined ? {} : { config: options.config }),
      failpoints: failpoints({
        ...(maintenance === undefined ? {} : { maintenance: () => maintenance.handler }),
        ...(runtime === undefined ? {} : { runtime: () => runtime.handler }),
      }),
    })
    const thread = ThreadObject.layer(options.agents).pipe(
      Layer.provide(host === undefined ? Layer.empty : Layer.succeed(ThreadHostMaintenance, host)),
    )
    const layer = Layer.provideMerge(thread, platform)
    const context = yield* Layer.build(Layer.fresh(layer)).pipe(Effect.orDie)
    return {
      maintenance: Context.get(context, ThreadMaintenance),
      runtime: Context.get(context, DurableAgentRuntime),
      ledger: Context.get(context, SubmissionLedger),
      history: Context.get(context, ThreadHistory),
      context,
    }
  })

/** A fresh `ThreadMaintenance` over an incarnation's services (its gate and runtime shared). */
export const freshMaintenance = (incarnation: RuntimeIncarnation) =>
  Effect.map(
    Layer.build(
      Layer.fresh(ThreadMaintenance.layer).pipe(Layer.provide(Layer.succeedContext(incarnation.context))),
    ),
    (context) => Context.get(context, ThreadMaintenance),
  )

/** Records every hit of a failpoint location; can pause, freeze or fail the next hit of one. */
export interface Switchboard<L extends string, E> {
  readonly hits: ReadonlyArray<L>
  readonly handler: (location: L) => Effect.Effect<void, E>
  /** Runs `action` at the next hit of `location` (actions queue per location). */
  readonly once: (location: L, action: Effect.Effect<void, E>) => Effect.Effect<void>
  /** Holds the next hit of `location` until `release`. */
  readonly pause: (location: L) => Effect.Effect<Hold>
  /** Signals the next hit of `location` without holding it. */
  readonly observe: (location: L) => Effect.Effect<Effect.Effect<void>>
  /** Holds the next hit of `location` forever: with `abandon`, the incarnation is killed there. */
  readonly freeze: (location: L) => Effect.Effect<Effect.Effect<void>>
  /** How many times `location` was hit. */
  readonly count: (location: L) => number
}

/** A held failpoint hit. */
export interface Hold {
  readonly reached: Effect.Effect<void>
  readonly release: Effect.Effect<void>
}

/** A switchboard for maintenance (`E = never`) or runtime failpoints. */
export const makeSwitchboard = <L extends string, E = never>(): Effect.Effect<Switchboard<L, E>> =>
  Effect.sync(() => {
    const hits: Array<L> = []
    const actions = new Map<L, Array<Effect.Effect<void, E>>>()
    const once = (location: L, action: Effect.Effect<void, E>) =>
      Effect.sync(() => {
        actions.set(location, [...(actions.get(location) ?? []), action])
      })
    const hold = (location: L, forever: boolean) =>
      Effect.gen(function* () {
        const reached = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const wait = forever ? Effect.never : Deferred.await(release)
        yield* once(location, Effect.andThen(Deferred.succeed(reached, undefined), wait))
        return {
          reached: Deferred.await(reached),
          release: Effect.asVoid(Deferred.succeed(release, undefined)),
        }
      })
    return {
      hits,
      handler: (location) =>
        Effect.suspend(() => {
          hits.push(location)
          return actions.get(location)?.shift() ?? Effect.void
        }),
      once,
      pause: (location) => hold(location, false),
      observe: (location) =>
        Effect.gen(function* () {
          const reached = yield* Deferred.make<void>()
          yield* once(location, Deferred.succeed(reached, undefined))
          return Deferred.await(reached)
        }),
      freeze: (location) => Effect.map(hold(location, true), (held) => held.reached),
      count: (location) => hits.filter((hit) => hit === location).length,
    }
  })

/** Runtime failpoints. */
export const runtimeSwitchboard = makeSwitchboard<RuntimeFailpointLocation, DurableRuntimeFailpointError>

/** Maintenance failpoints. */
export const maintenanceSwitchboard = makeSwitchboard<ThreadMaintenanceFailpointLocation>

/** A typed failure for a runtime failpoint. */
export const failpointError = (location: RuntimeFailpointLocation) =>
  new DurableRuntimeFailpointError({ location, message: `failpoint ${location} fired` })

/**
 * Forks `effect` where nothing will ever interrupt it: a fiber frozen at a failpoint stays
 * frozen and runs no finalizer, as if its incarnation had been killed.
 */
export const abandon = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<Fiber.Fiber<A, E>> =>
  Effect.forkIn(effect, Scope.makeUnsafe())

/** Moves virtual time forward to the stored alarm, if it is later. */
const moveToAlarm = (ctx: DurableObjectState) =>
  Effect.gen(function* () {
    const at = yield* alarmOf(ctx)
    const now = yield* Clock.currentTimeMillis
    if (at !== null && at > now) yield* TestClock.setTime(at)
  })

/**
 * One alarm delivery as workerd makes it: virtual time moves to the stored alarm (never back),
 * the slot is consumed, then the pass runs. Any alarm present afterwards was written by the pass.
 */
export const deliver = (
  ctx: DurableObjectState,
  maintenance: ThreadMaintenance["Service"],
): Effect.Effect<Exit.Exit<MaintenancePassReport, MaintenancePassFailure>> =>
  Effect.gen(function* () {
    yield* moveToAlarm(ctx)
    yield* Effect.promise(() => ctx.storage.deleteAlarm())
    return yield* Effect.exit(maintenance.pass)
  })

/** Delivers a pass that must succeed, and returns its report. */
export const deliverOk = (ctx: DurableObjectState, maintenance: ThreadMaintenance["Service"]) =>
  Effect.flatMap(deliver(ctx, maintenance), (exit) =>
    Exit.isSuccess(exit)
      ? Effect.succeed(exit.value)
      : Effect.die(new Error(`the pass failed: ${exit.cause}`)),
  )

/**
 * Delivers alarms until none is scheduled (rejected deliveries count as fired, as workerd
 * retries them); dies if that takes more than `rounds`. Returns every delivery's exit.
 */
export const converge = (ctx: DurableObjectState, maintenance: ThreadMaintenance["Service"], rounds = 40) =>
  Effect.gen(function* () {
    const exits: Array<Exit.Exit<MaintenancePassReport, MaintenancePassFailure>> = []
    while ((yield* alarmOf(ctx)) !== null) {
      if (exits.length >= rounds)
        return yield* Effect.die(new Error(`no convergence in ${rounds} deliveries`))
      exits.push(yield* deliver(ctx, maintenance))
    }
    return exits
  })

/** The report of a pass, as a tuple that reads well in assertions. */
export const reportOf = (report: MaintenancePassReport) =>
  [report.phase, report.recovered, report.settled, report.nonterminal, report.alarm] as const

/** Submits through the gate, as `ThreadObject` does. */
export const submit = (
  incarnation: RuntimeIncarnation,
  thread: string,
  agent: string,
  key: string,
  input: Schema.Json,
) =>
  incarnation.maintenance.withMutation(
    incarnation.runtime.submit({
      threadId: ThreadId.make(thread),
      agentId: AgentId.make(agent),
      idempotencyKey: IdempotencyKey.make(key),
      input,
    }),
  )

/** The ledger row of a Submission, which must exist. */
export const rowOf = (incarnation: RuntimeIncarnation, submissionId: SubmissionId) =>
  Effect.map(incarnation.ledger.lookup(submissionId), Option.getOrThrow)

/** The tags of a Submission's canonical records, oldest first. */
export const tagsOf = (incarnation: RuntimeIncarnation, submissionId: SubmissionId) =>
  Effect.map(incarnation.history.forSubmission(submissionId), (records) =>
    records.map((record) => record.entry._tag),
  )

/** Every canonical record of a Thread, oldest first. */
export const threadRecords = (incarnation: RuntimeIncarnation, thread: string) =>
  Effect.map(incarnation.history.page(ThreadId.make(thread), { limit: 1_000 }), (page) => page.records)

/** The generation pair of the maintenance record. */
export const generationsOf = (ctx: DurableObjectState) =>
  Effect.map(rawState(ctx), (raw) => ({
    dirty: BigInt(String(raw?.["dirty"])),
    processed: BigInt(String(raw?.["processed"])),
  }))

/** The stored binding waits, encoded. */
export const bindingWaitsOf = (ctx: DurableObjectState) =>
  Effect.map(
    rawState(ctx),
    (raw) =>
      (raw?.["bindingRetries"] ?? []) as ReadonlyArray<{
        readonly submissionId: string
        readonly attempts: number
        readonly notBefore: number
      }>,
  )

/**
 * Everything durable about the Object's native work: ledger rows, canonical records and the
 * maintenance record. Equal fingerprints mean nothing durable changed.
 */
export const fingerprint = (
  ctx: DurableObjectState,
  incarnation: RuntimeIncarnation,
  of: { readonly submissions: ReadonlyArray<SubmissionId>; readonly threads: ReadonlyArray<string> },
) =>
  Effect.gen(function* () {
    const rows = yield* Effect.forEach(of.submissions, (id) => rowOf(incarnation, id))
    const records = yield* Effect.forEach(of.threads, (thread) => threadRecords(incarnation, thread))
    return JSON.stringify({ rows, records, record: yield* rawState(ctx) })
  })

/**
 * Its first step signals `started`, then takes `millis` of virtual time; the second takes none.
 * An Attempt whose `yieldAfter` passes meanwhile yields between them, and the resumed Attempt
 * replays the first.
 */
export const longFirstStep = (runs: Runs, millis: number, started: Deferred.Deferred<void>) =>
  define({
    id: "long-first-step",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const long = yield* ctx.step(
          "long",
          ran(runs, "long").pipe(
            Effect.andThen(Deferred.succeed(started, undefined)),
            Effect.andThen(Effect.sleep(millis)),
            Effect.as(n),
          ),
        )
        return yield* ctx.step("short", Effect.as(ran(runs, "short"), long + 1))
      }),
  })
