/**
 * The simulated Durable Object and its host: durable storage and stores that outlive every
 * incarnation, the current incarnation, the alarm scheduler and the client calls in flight.
 *
 * The scheduler behaves like workerd: one handler at a time, delivered only when due; a
 * handler that did not write the alarm has it deleted on success, and on failure it is
 * redelivered with the platform's retry ladder (2 s doubling, at most 6 retries, then dropped);
 * a handler still running after 15 minutes is aborted with its incarnation; an earlier alarm
 * committed while a handler runs cancels that handler (the original design's reading of
 * production; local workerd queues such an alarm behind the running one instead). Eviction
 * kills the incarnation at once: its storage refuses every operation, so its fibers'
 * finalizers can change nothing durable.
 */
import { Cause, Clock, Context, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { ThreadMaintenance } from "../../../src/Alarm.ts"
import type { CloudflareDurableRuntimeConfigOverrides } from "../../../src/CloudflareConfig.ts"
import { SubmissionLedger } from "../../../src/core/SubmissionLedger.ts"
import { layerMemoryWithLedger, ThreadHistory } from "../../../src/core/ThreadHistory.ts"
import { memoryStoreOf } from "../../../src/core/internal/ledger/memoryStore.ts"
import { MessageOutbox } from "../../../src/core/MessageOutbox.ts"
import {
  type PortEnvelope,
  type PortFailure,
  PortProtocolError,
  type PortReply,
  PortUnavailable,
  PortUnreachable,
  type RoutedPort,
} from "../../../src/RoutedPort.ts"
import { deploymentAgents, type Deployment, type ExternalWorld, SimExternalWorld } from "./agents.ts"
import type { FaultPlan } from "./faults.ts"
import { makeFailpoints, type Pause } from "./failpoints.ts"
import {
  buildConfig,
  buildIncarnation,
  type Incarnation,
  type IncarnationServices,
  SimHolder,
} from "./incarnation.ts"
import { makeMonitor, type Monitor, type RunOutcome } from "./invariants.ts"
import { beforeRemoval, removedSafely } from "./retention.ts"
import { type AlarmRun, type Holder, type Origin, SimOrigin, SimStorage } from "./storagePort.ts"

/**
 * The alarm retry ladder of the Cloudflare docs ("exponential backoff starting at a 2 second
 * delay ... up to 6 retries"; workerd's `ALARM_RETRY_START_SECONDS = 2`,
 * `ALARM_RETRY_MAX_TRIES = 6`), without local workerd's jitter of up to a quarter.
 */
export const PLATFORM_RETRY_BASE = 2_000
export const PLATFORM_MAX_RETRIES = 6
/** workerd's wall-time limit of one alarm handler. */
export const ALARM_WALL_LIMIT = 15 * 60_000

const { setImmediate, clearImmediate } = globalThis as unknown as {
  readonly setImmediate: (f: () => void) => unknown
  readonly clearImmediate: (handle: unknown) => void
}

/** One turn of the event loop: every microtask queued before it has run. */
const eventLoopTurn = Effect.callback<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** What a world is made of. */
export interface WorldOptions {
  readonly config: CloudflareDurableRuntimeConfigOverrides & {
    readonly alarmBackoffBase: number
    readonly alarmBackoffCap: number
    readonly wakeScanInterval: number
  }
  readonly faults: FaultPlan
  readonly trace: (line: string) => void
  /** Traces every failpoint hit too. */
  readonly verbose?: boolean
  /** The Object's name; other Objects reach it by this name (or the same string as its id). */
  readonly name?: string
  /** How this Object reaches the others; by default it reaches none. */
  readonly port?: RoutedPort["Service"]
  /** Activity counter shared by the Objects of a cluster, to detect quiescence. */
  readonly activity?: { count: number }
}

/** The namespace binding every simulated Object lives in. */
export const SIM_NAMESPACE = "SIM_THREADS"

const nowhere: RoutedPort["Service"] = {
  call: (address) =>
    Effect.fail(new PortUnreachable({ message: `no Object ${address.objectName ?? address.objectId} here` })),
}

/** Builds the world of one run; everything it forks lives in the caller's scope. */
export const makeWorld = (options: WorldOptions) =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const now = () => clock.currentTimeMillisUnsafe()
    const durable = yield* Layer.build(
      MessageOutbox.layerMemory.pipe(Layer.provideMerge(layerMemoryWithLedger)),
    ).pipe(Effect.orDie)
    const outbox = Context.get(durable, MessageOutbox)
    // Made below, once the storage it watches exists; no removal can happen before.
    let removals: Monitor | undefined
    const stores = {
      ledger: Context.get(durable, SubmissionLedger),
      history: Context.get(durable, ThreadHistory),
      // Every removal is checked against the state it removed from (see `removedSafely`).
      outbox: {
        ...outbox,
        removeSettled: (items: Parameters<typeof outbox.removeSettled>[0]) =>
          Effect.suspend(() => {
            const before = store === undefined ? undefined : beforeRemoval(store)
            return Effect.tap(outbox.removeSettled(items), (removed) =>
              Effect.sync(() => {
                if (before !== undefined && removals !== undefined) removedSafely(removals, before, removed)
              }),
            )
          }),
      },
    }
    const config = yield* buildConfig(options.config)
    const store = memoryStoreOf(stores.ledger)
    if (store === undefined)
      return yield* Effect.die(new Error("the durable ledger is not the in-memory one"))

    const name = options.name ?? "object"
    const activity = options.activity ?? { count: 0 }
    const touch = () => {
      activity.count++
    }
    let current: Incarnation | undefined
    let incarnations = 0
    const dead: Array<Incarnation> = []
    const handlers = new Map<number, Fiber.Fiber<unknown, unknown>>()
    const inFlight = new Map<number, { readonly name: string; readonly incarnation: number }>()
    const paused: Array<Pause> = []
    let rpcs = 0
    let runs = 0
    let gaveUp = false
    let delivering = false
    let deployment: Deployment = "full"
    const stats = {
      incarnations: 0,
      evictions: 0,
      deliveries: 0,
      failures: 0,
      cancellations: 0,
      wallLimits: 0,
      gaveUp: 0,
      faults: 0,
      zombies: 0,
      zombieWritesFenced: 0,
    }
    const timing = {
      floorMillis: Math.max(1, Math.ceil(options.config.alarmBackoffBase / 2)),
      capMillis: options.config.alarmBackoffCap,
      wakeScanIntervalMillis: options.config.wakeScanInterval,
      maxHeadsPerEvent: options.config.maxHeadsPerEvent ?? 1,
      coalesceMillis: options.config.timerCoalesceMillis ?? 10,
    }

    const storage: SimStorage = new SimStorage({
      now,
      onActivity: touch,
      onEvent: (event) => {
        if (options.verbose && (event.writes.size > 0 || event.alarm !== undefined)) {
          options.trace(
            `    commit ${JSON.stringify(event.origin ?? null)} ${event.committed ? "" : "rolled back "}${[...event.writes.entries()].map(([key, value]) => `${key}=${JSON.stringify(value)}`).join(" ")}${event.alarm === undefined ? "" : ` alarm ${event.alarm.before} -> ${event.alarm.after}`}`,
          )
        }
        monitor.storageEvent(event)
      },
      onCancel: (run, origin) => {
        stats.cancellations++
        monitor.cancelled(run, origin)
        options.trace(
          `  alarm run ${run.id} cancelled by an earlier alarm from ${JSON.stringify(origin ?? null)}`,
        )
        endRun(run, "cancelled")
        handlers.get(run.id)?.interruptUnsafe()
      },
    })

    const monitor = makeMonitor({
      now,
      storage,
      store,
      rpcInFlight: () => inFlight.size,
      platformGaveUp: () => gaveUp,
      timing,
      retains: options.config.retention !== undefined,
    })
    removals = monitor

    const external: ExternalWorld = {
      perform: (key, uncertain) =>
        Effect.suspend(() => {
          touch()
          // A dead process runs nothing, unless it is a zombie still finishing its Attempt.
          const holder = Fiber.getCurrent()?.getRef(SimHolder)
          if (holder !== undefined && !holder.alive() && !holder.storesAlive()) return Effect.interrupt
          if (options.verbose)
            options.trace(`    perform ${key}${uncertain ? " (uncertain)" : ""} in ${holder?.id}`)
          monitor.performed(key, uncertain)
          return Effect.void
        }),
    }

    /** Ends a handler run as workerd would; a no-op once it has ended. */
    const endRun = (run: AlarmRun, outcome: RunOutcome) => {
      if (storage.run !== run) return
      storage.run = undefined
      handlers.delete(run.id)
      if (outcome === "success") {
        if (!run.setSinceStart) storage.writeAlarm(null, undefined)
      } else if (outcome !== "cancelled") {
        stats.failures++
        // A handler that wrote the alarm keeps what it wrote; otherwise the platform retries.
        if (!run.setSinceStart) {
          const retries = run.retries + 1
          if (retries > PLATFORM_MAX_RETRIES) {
            storage.writeAlarm(null, undefined)
            gaveUp = true
            stats.gaveUp++
          } else {
            storage.alarm = now() + PLATFORM_RETRY_BASE * 2 ** (retries - 1)
            storage.alarmRetries = retries
            storage.platformRetryAt = storage.alarm
          }
        }
      }
      options.trace(`  alarm run ${run.id} ended: ${outcome}; alarm ${storage.alarm}`)
      monitor.runEnded(run, outcome)
    }

    const kill = (holder: Holder, alive: { value: boolean; storesUntil: number }, reason: string) => {
      if (!alive.value) return
      alive.value = false
      stats.evictions++
      const zombie = options.faults.zombie()
      if (zombie > 0) {
        alive.storesUntil = now() + zombie
        stats.zombies++
      }
      options.trace(
        `  incarnation ${holder.id} reset: ${reason}${zombie > 0 ? ` (zombie for ${zombie} ms)` : ""}`,
      )
      const run = storage.run
      if (run !== undefined && run.incarnation === holder.id)
        endRun(run, reason.startsWith("wall") ? "wall-limit" : "evicted")
      // A paused fiber may sit in an uninterruptible region: its gate fails it instead.
      for (let index = paused.length - 1; index >= 0; index--) {
        const pause = paused[index]
        if (pause?.incarnation !== holder.id) continue
        paused.splice(index, 1)
        Deferred.doneUnsafe(pause.gate, Effect.interrupt)
      }
      if (current?.id === holder.id) {
        // Whatever waits for its constructor gate gives up now, zombie or not.
        Deferred.doneUnsafe(current.ready, Effect.interrupt)
        dead.push(current)
        current = undefined
      }
    }

    const failpoints = makeFailpoints({ ...options, now, touch, monitor, stats, paused })

    /** Runs `effect` in `incarnation` as `origin`, once its constructor gate has passed. */
    const fork = <A, E>(
      incarnation: Incarnation,
      origin: Origin | undefined,
      effect: Effect.Effect<A, E, IncarnationServices>,
    ) =>
      Effect.forkIn(
        effect.pipe(
          Effect.provideContext(incarnation.context),
          Effect.provideService(SimOrigin, origin),
          Effect.provideService(SimHolder, incarnation.holder),
          Effect.provideService(SimExternalWorld, external),
        ),
        incarnation.scope,
      )

    /** The live incarnation, constructing one (and running its constructor gate) if needed. */
    const incarnate = Effect.gen(function* () {
      if (current !== undefined) return current
      const id = ++incarnations
      stats.incarnations++
      const alive = { value: true, storesUntil: 0 }
      const holder: Holder = {
        id,
        alive: () => alive.value,
        storesAlive: () => alive.value || now() < alive.storesUntil,
        abort: (reason) => kill(holder, alive, reason),
      }
      const incarnation = yield* buildIncarnation({
        state: storage.facade(holder),
        holder,
        stores,
        agents: deploymentAgents(deployment),
        config,
        maintenanceFailpoint: failpoints.maintenance(holder),
        runtimeFailpoint: failpoints.runtime(holder),
        onClaim: monitor.claimed,
        onZombieWrite: monitor.zombieWrote,
        onZombieFenced: () => {
          stats.zombieWritesFenced++
        },
        onActivity: touch,
        deployment,
        port: options.port ?? nowhere,
        self: { namespace: SIM_NAMESPACE, objectId: name },
      })
      current = incarnation
      options.trace(`  incarnation ${id} (${deployment})`)
      // The constructor gate: events wait for it; its failure resets the Object.
      yield* fork(
        incarnation,
        { kind: "constructor" },
        Effect.gen(function* () {
          const maintenance = yield* ThreadMaintenance
          const exit = yield* Effect.exit(maintenance.ensureAlarm)
          if (Exit.isFailure(exit)) return holder.abort("constructor gate failed")
          if (!holder.alive()) return
          gaveUp = false
          yield* Deferred.succeed(incarnation.ready, undefined)
        }),
      )
      return incarnation
    })

    /** Starts a client call; `onExit` sees its outcome. */
    const call = <A, E>(
      name: string,
      body: (incarnation: Incarnation) => Effect.Effect<A, E, IncarnationServices>,
      onExit: (exit: Exit.Exit<A, E>) => void,
    ) =>
      Effect.gen(function* () {
        const incarnation = yield* incarnate
        const id = ++rpcs
        inFlight.set(id, { name, incarnation: incarnation.id })
        yield* fork(
          incarnation,
          { kind: "rpc", name },
          Deferred.await(incarnation.ready).pipe(
            Effect.andThen(Effect.exit(body(incarnation))),
            // A call whose incarnation is closed under it ends interrupted: its caller hears so.
            Effect.onExit((outer) =>
              Effect.sync(() =>
                onExit(Exit.isSuccess(outer) ? outer.value : (outer as unknown as Exit.Exit<A, E>)),
              ),
            ),
            Effect.ensuring(Effect.sync(() => inFlight.delete(id) && touch())),
          ),
        )
      })

    /**
     * Delivers the alarm if it is due (or `early`: a forced or duplicate delivery, which the
     * at-least-once platform may make) and no handler runs; `false` otherwise. The handler is
     * armed once the incarnation's constructor gate has passed (workerd constructs the Object
     * before it calls `alarm()`); an incarnation that dies first leaves the alarm due.
     */
    const deliver = (mode: { readonly early?: boolean } = {}) =>
      Effect.gen(function* () {
        const due = storage.alarm
        const early = mode.early === true
        if (storage.run !== undefined || delivering || due === null || (due > now() && !early)) return false
        const incarnation = yield* incarnate
        const id = ++runs
        delivering = true
        const handler = yield* fork(
          incarnation,
          { kind: "alarm", run: id },
          Effect.gen(function* () {
            yield* Deferred.await(incarnation.ready)
            delivering = false
            const at = storage.alarm
            if (
              !incarnation.holder.alive() ||
              storage.run !== undefined ||
              at === null ||
              (at > now() && !early)
            )
              return
            const run: AlarmRun = {
              id,
              incarnation: incarnation.id,
              // A forced delivery runs now: the platform delivers it as an alarm due now.
              scheduledTime: early ? Math.min(at, now()) : at,
              startedAt: now(),
              retries: storage.alarmRetries,
              setSinceStart: false,
            }
            storage.run = run
            stats.deliveries++
            options.trace(`  alarm run ${id} delivers ${at}${early ? " early" : ""} (retry ${run.retries})`)
            yield* Effect.forkIn(wallLimit(incarnation, run), incarnation.scope)
            const maintenance = yield* ThreadMaintenance
            const exit = yield* Effect.exit(maintenance.pass)
            // Like ThreadObject.alarm: one more storage read before the handler returns.
            yield* Effect.ignore(Effect.tryPromise(() => incarnation.state.storage.getAlarm()))
            options.trace(
              Exit.isSuccess(exit)
                ? `  pass ${id}: ${JSON.stringify(exit.value)}`
                : `  pass ${id} failed${options.verbose ? `: ${Cause.pretty(exit.cause).split("\n").slice(0, 6).join(" / ")}` : ""}`,
            )
            endRun(run, Exit.isSuccess(exit) ? "success" : "failure")
          }).pipe(
            Effect.ensuring(
              Effect.sync(() => {
                delivering = false
              }),
            ),
          ),
        )
        handlers.set(id, handler)
        return true
      })

    /** workerd aborts a handler still running after its wall-time limit. */
    const wallLimit = (incarnation: Incarnation, run: AlarmRun) =>
      Effect.gen(function* () {
        yield* Effect.sleep(ALARM_WALL_LIMIT)
        if (storage.run !== run) return
        stats.wallLimits++
        incarnation.holder.abort("wall-time limit of the alarm handler")
      })

    /** Evicts the live incarnation, if any. */
    const evict = (reason: string) =>
      Effect.sync(() => {
        current?.holder.abort(reason)
      })

    /** Closes dead incarnations; a zombie keeps running until its window has passed. */
    const closeDead = Effect.gen(function* () {
      for (const incarnation of dead.filter((each) => !each.holder.storesAlive())) {
        dead.splice(dead.indexOf(incarnation), 1)
        incarnation.closed = true
        yield* Effect.forkDetach(Scope.close(incarnation.scope, Exit.void))
        touch()
      }
    })
    const settle = settleAll(activity, [closeDead])

    /**
     * A routed request from another Object, run in this one's live incarnation like any RPC.
     * The answer never comes if the incarnation dies first: the sender's timeout takes over.
     */
    const portCall = (envelope: PortEnvelope): Effect.Effect<PortReply, PortFailure> =>
      Effect.gen(function* () {
        const answer = yield* Deferred.make<Exit.Exit<PortReply, unknown>>()
        yield* call(
          "portCall",
          (incarnation) => incarnation.entry.portCall(envelope),
          (exit) => Deferred.doneUnsafe(answer, Effect.succeed(exit)),
        )
        const exit = yield* Deferred.await(answer)
        if (Exit.isSuccess(exit)) return exit.value
        const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        if (failure?._tag === "Fail" && failure.error instanceof PortProtocolError)
          return yield* failure.error
        return yield* new PortUnavailable({ message: `${name}: portCall failed unexpectedly` })
      })

    return {
      name,
      now,
      portCall,
      closeDead,
      storage,
      store,
      stores,
      monitor,
      stats,
      timing,
      incarnate,
      call,
      deliver,
      evict,
      settle,
      paused,
      inFlight,
      release: (index: number) =>
        Effect.suspend(() => {
          const [pause] = paused.splice(index, 1)
          if (pause === undefined) return Effect.void
          options.trace(`  released ${pause.label}`)
          return Effect.asVoid(Deferred.succeed(pause.gate, undefined))
        }),
      get deployment() {
        return deployment
      },
      redeploy: (next: Deployment) =>
        Effect.sync(() => {
          deployment = next
          current?.holder.abort(`redeploy ${next}`)
        }),
      get handlerRunning() {
        return storage.run !== undefined
      },
    }
  })

/**
 * Lets every fiber run until nothing happens any more, closing dead incarnations. Fibers run
 * on microtasks (the sync scheduler) and storage promises resolve on microtasks, so one turn
 * of the event loop drains all of it: the run is quiescent when a turn changes nothing.
 */
export const settleAll = (activity: { count: number }, closeDead: ReadonlyArray<Effect.Effect<void>>) =>
  Effect.gen(function* () {
    let last = -1
    for (let round = 0; round < 1_000 && activity.count !== last; round++) {
      last = activity.count
      yield* eventLoopTurn
      for (const close of closeDead) yield* close
    }
  })

/** The world of one run. */
export type World = Effect.Success<ReturnType<typeof makeWorld>>
