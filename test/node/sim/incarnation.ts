/**
 * One incarnation of the simulated Object: the real platform layers (mutation gate, alarm
 * service, `ThreadMaintenance`, the durable runtime with the Cloudflare wake scheduler) built
 * over the storage port's facade, a fresh `SqlClient` stand-in, and the durable in-memory
 * ledger, history and outbox seen through a gate that refuses every operation once the
 * incarnation is dead, the native delivery driver over the simulated network, and retention. The assembly
 * mirrors `ThreadObject`'s, with in-memory stores in place of SQLite.
 */
import { Context, Deferred, Effect, Layer, Option, Scope, Stream } from "effect"
import {
  ThreadMaintenance,
  ThreadMaintenanceFailpoint,
  type ThreadMaintenanceFailpointHandler,
} from "../../../src/Alarm.ts"
import { DurableAlarmService, ThreadMutationGate, ThreadPublication } from "../../../src/Alarm.ts"
import { DurableObjectContext } from "../../../src/CloudflareBindings.ts"
import type { CloudflareDurableRuntimeConfigOverrides } from "../../../src/CloudflareConfig.ts"
import type { AnyAgentDefinition } from "../../../src/core/AgentRegistration.ts"
import { DurableAgentRuntime } from "../../../src/core/DurableAgentRuntime.ts"
import { RuntimeFailpoint, type RuntimeFailpointHandler } from "../../../src/core/RuntimeFailpoint.ts"
import {
  type Claim,
  type AppendFence,
  type Fence,
  LedgerError,
  SubmissionLedger,
  type SubmissionSnapshot,
} from "../../../src/core/SubmissionLedger.ts"
import { memoryStoreOf } from "../../../src/core/internal/ledger/memoryStore.ts"
import { ThreadHistory } from "../../../src/core/ThreadHistory.ts"
import { MessageOutbox, MessageOutboxError, SelfAddress } from "../../../src/core/MessageOutbox.ts"
import { messageDeliveryLayer } from "../../../src/internal/delivery/layer.ts"
import { RoutedPort } from "../../../src/RoutedPort.ts"
import { ThreadStoreError } from "../../../src/core/DurableAgentRuntime.ts"
import { ThreadProjectionMaintenance } from "../../../src/core/ThreadProjectionMaintenance.ts"
import { objectCalls } from "../../../src/internal/object/handlers.ts"
import { portCall } from "../../../src/internal/object/portHandlers.ts"
import { configLayers } from "../../../src/internal/object/layers.ts"
import { cloudflareWakeScheduler } from "../../../src/internal/object/wakeScheduler.ts"
import { retentionLayer } from "../../../src/internal/retention/layer.ts"
import { simSqlClient } from "./sqlClient.ts"
import type { Holder } from "./storagePort.ts"

/** The incarnation a fiber belongs to; agents read it so a dead process acts no more. */
export const SimHolder = Context.Reference<Holder | undefined>(
  "@effect-agent/platform-cloudflare/test/sim/Holder",
  {
    defaultValue: () => undefined,
  },
)

/** The durable stores: built once per run, shared by every incarnation. */
export interface DurableStores {
  readonly ledger: SubmissionLedger["Service"]
  readonly history: ThreadHistory["Service"]
  readonly outbox: MessageOutbox["Service"]
}

/** Everything an incarnation's entry points, constructor and alarm handler use. */
export type IncarnationServices = Layer.Success<ReturnType<typeof incarnationLayer>>

/** A live (or dead) incarnation. */
export interface Incarnation {
  readonly id: number
  readonly holder: Holder
  readonly state: DurableObjectState
  readonly scope: Scope.Closeable
  readonly context: Context.Context<IncarnationServices>
  readonly entry: EntryPoints
  /** Completes when the constructor gate (`ensureAlarm`) finished; events wait for it. */
  readonly ready: Deferred.Deferred<void>
  readonly deployment: string
  closed: boolean
}

type AnyFunction = (...args: ReadonlyArray<never>) => unknown

/**
 * The service seen through the incarnation's liveness: a call after the reset fails with
 * `refuse`, as every storage operation of an aborted Durable Object does. Calls are
 * synchronous blocks in the in-memory stores, so a reset never splits one.
 */
const gated = <S extends object>(
  service: S,
  alive: () => boolean,
  refuse: (name: string) => unknown,
  onActivity: () => void,
  onFailure: (error: unknown) => void = () => {},
): S => {
  const out: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(service)) {
    const check = Effect.suspend(() => {
      onActivity()
      return alive() ? Effect.void : Effect.fail(refuse(name))
    })
    if (typeof value === "function") {
      out[name] = (...args: ReadonlyArray<never>) =>
        Effect.andThen(
          check,
          Effect.suspend(() => (value as AnyFunction)(...args) as Effect.Effect<unknown>).pipe(
            Effect.tapError((error) => Effect.sync(() => onFailure(error))),
          ),
        )
    } else if (Stream.isStream(value)) {
      out[name] = Stream.unwrap(Effect.as(check, value))
    } else if (Effect.isEffect(value)) {
      out[name] = Effect.andThen(check, value)
    } else {
      out[name] = value
    }
  }
  return out as S
}

const resetMessage = "the Durable Object was reset"

/** The runtime configuration of a run, decoded once and shared by its incarnations. */
export const buildConfig = (overrides: CloudflareDurableRuntimeConfigOverrides) =>
  Layer.build(configLayers(overrides)).pipe(Effect.orDie)

export type RunConfig = Effect.Success<ReturnType<typeof buildConfig>>

/** What an incarnation is built from. */
export interface IncarnationSpec {
  readonly state: DurableObjectState
  readonly holder: Holder
  readonly stores: DurableStores
  readonly agents: ReadonlyArray<AnyAgentDefinition>
  readonly config: RunConfig
  readonly maintenanceFailpoint: ThreadMaintenanceFailpointHandler
  readonly runtimeFailpoint: RuntimeFailpointHandler
  /** A ledger or history write of this incarnation refused by the fence after its reset. */
  readonly onZombieFenced: () => void
  /** Sees every fenced write a reset incarnation got through, and the epoch it met. */
  readonly onZombieWrite: (holder: Holder, fence: Fence, epochBefore: number | undefined) => void
  /** Sees every Claim granted: the head as it was just before, and the Claim. */
  readonly onClaim: (
    holder: Holder,
    before: SubmissionSnapshot | undefined,
    claim: Claim,
    now: number,
  ) => void
  readonly onActivity: () => void
  /** The network as this Object reaches other Objects. */
  readonly port: RoutedPort["Service"]
  /** Where other Objects reach this one. */
  readonly self: { readonly namespace: string; readonly objectId: string }
}

/**
 * The ledger with every granted Claim reported (by its lane, or in place by the due path), with
 * the row as it was just before (read in the same synchronous block as the in-memory claim, so
 * nothing interleaves).
 */
const observingClaims = (
  ledger: SubmissionLedger["Service"],
  onClaimed: (before: SubmissionSnapshot | undefined, claim: Claim, now: number) => void,
): SubmissionLedger["Service"] => ({
  ...ledger,
  claim: (threadId, grant) =>
    Effect.suspend(() => {
      const store = memoryStoreOf(ledger)
      const headId = store?.lanes.get(threadId)?.nonterminal[0]
      const before = headId === undefined ? undefined : store?.rows.get(headId)
      return Effect.tap(ledger.claim(threadId, grant), (claim) =>
        Effect.sync(() => {
          if (Option.isSome(claim)) onClaimed(before, claim.value, grant.now)
        }),
      )
    }),
  claimDue: (submissionId, grant) =>
    Effect.suspend(() => {
      const before = memoryStoreOf(ledger)?.rows.get(submissionId)
      return Effect.tap(ledger.claimDue(submissionId, grant), (claim) =>
        Effect.sync(() => {
          if (Option.isSome(claim)) onClaimed(before, claim.value, grant.now)
        }),
      )
    }),
})

/** The fence a fenced ledger or history write presents, from its arguments. */
const fenceOf = (name: string, args: ReadonlyArray<unknown>): Fence | undefined => {
  switch (name) {
    case "renew":
    case "release":
    case "park":
      return { _tag: "Owner", claim: args[0] as Claim }
    case "transition":
    case "settle":
    case "reserveSettlement":
    case "settleWithMessages":
    case "parkTimed":
    case "deferHead":
      return args[0] as Fence
    case "append":
    case "appendAll":
    case "appendWithMessages": {
      // An input record (a child's settlement) is no owner's write.
      const fence = args[2] as AppendFence
      return fence._tag === "Input" ? undefined : fence
    }
    default:
      return undefined
  }
}

/**
 * Reports every fenced write a reset incarnation (a zombie) gets through, with the epoch the
 * Submission had just before it (read in the same synchronous block as the in-memory write).
 */
const watchingZombies = <S extends object>(
  service: S,
  store: ReturnType<typeof memoryStoreOf>,
  zombie: () => boolean,
  onZombieWrite: (fence: Fence, epochBefore: number | undefined) => void,
): S => {
  const out: Record<string, unknown> = { ...(service as Record<string, unknown>) }
  for (const [name, value] of Object.entries(service)) {
    if (typeof value !== "function") continue
    out[name] = (...args: ReadonlyArray<never>) =>
      Effect.suspend(() => {
        const fence = fenceOf(name, args)
        const effect = (value as AnyFunction)(...args) as Effect.Effect<unknown>
        if (fence === undefined || !zombie()) return effect
        const id = fence._tag === "Owner" ? fence.claim.submissionId : fence.submissionId
        const epochBefore = store?.rows.get(id)?.producerEpoch
        return Effect.tap(effect, () => Effect.sync(() => onZombieWrite(fence, epochBefore)))
      })
  }
  return out as S
}

/** @internal The layer of one incarnation. */
export const incarnationLayer = (spec: IncarnationSpec) => {
  const store = memoryStoreOf(spec.stores.ledger)
  const zombie = () => !spec.holder.alive()
  const onZombieWrite = (fence: Fence, epochBefore: number | undefined) =>
    spec.onZombieWrite(spec.holder, fence, epochBefore)
  const storesAlive = spec.holder.storesAlive
  const fenced = (error: unknown) => {
    const tag = (error as { readonly _tag?: unknown } | undefined)?._tag
    if (!spec.holder.alive() && (tag === "FenceRejected" || tag === "OwnershipLost")) spec.onZombieFenced()
  }
  const ledger = gated(
    watchingZombies(
      observingClaims(spec.stores.ledger, (before, claim, now) =>
        spec.onClaim(spec.holder, before, claim, now),
      ),
      store,
      zombie,
      onZombieWrite,
    ),
    storesAlive,
    (name) => new LedgerError({ operation: `SubmissionLedger.${name}`, message: resetMessage }),
    spec.onActivity,
    fenced,
  )
  const history = gated(
    watchingZombies(spec.stores.history, store, zombie, onZombieWrite),
    storesAlive,
    (name) => new ThreadStoreError({ operation: `ThreadHistory.${name}`, message: resetMessage }),
    spec.onActivity,
    fenced,
  )
  const outbox = gated(
    watchingZombies(spec.stores.outbox, store, zombie, onZombieWrite),
    storesAlive,
    (name) => new MessageOutboxError({ operation: `MessageOutbox.${name}`, message: resetMessage }),
    spec.onActivity,
    fenced,
  )
  const base = Layer.mergeAll(
    DurableObjectContext.layer(spec.state, {} as Cloudflare.Env),
    Layer.succeed(MessageOutbox, outbox),
    Layer.succeed(RoutedPort, spec.port),
    Layer.succeed(SelfAddress, spec.self),
    simSqlClient,
    Layer.succeedContext(spec.config),
    ThreadMaintenanceFailpoint.layerTest(spec.maintenanceFailpoint),
    RuntimeFailpoint.layerTest(spec.runtimeFailpoint),
    Layer.succeed(SubmissionLedger, ledger),
    Layer.succeed(ThreadHistory, history),
  )
  const platform = Layer.mergeAll(ThreadMutationGate.layer, DurableAlarmService.layer).pipe(
    Layer.provideMerge(base),
  )
  const runtime = DurableAgentRuntime.layerWithBindings(spec.agents).pipe(
    Layer.provide(cloudflareWakeScheduler),
  )
  const hooks = Layer.mergeAll(ThreadPublication.layer, ThreadProjectionMaintenance.layer)
  return ThreadMaintenance.layer.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        hooks,
        messageDeliveryLayer(RoutedPort).pipe(Layer.provideMerge(runtime)),
        retentionLayer,
      ),
    ),
    Layer.provideMerge(platform),
  )
}

/** Entry points hold no state: one set serves every incarnation of the process. */
const entryPoints = { ...objectCalls(undefined), portCall }

/** The calls of an incarnation, as the Object dispatches them, and its `portCall`. */
export type EntryPoints = typeof entryPoints

/** Builds an incarnation in its own scope; its constructor is started by the caller. */
export const buildIncarnation = (
  spec: IncarnationSpec & { readonly deployment: string },
): Effect.Effect<Incarnation> =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    // A memo map of its own: an incarnation built from another Object's fiber (a routed request
    // constructs its target) must not reuse that Object's services.
    const memoMap = yield* Layer.makeMemoMap
    const context = yield* Layer.buildWithMemoMap(incarnationLayer(spec), memoMap, scope).pipe(Effect.orDie)
    return {
      id: spec.holder.id,
      holder: spec.holder,
      state: spec.state,
      scope,
      context,
      entry: entryPoints,
      ready: yield* Deferred.make<void>(),
      deployment: spec.deployment,
      closed: false,
    }
  })
