/**
 * `ThreadHostMaintenance`: application obligations that share this Object's alarm (outboxes, UI
 * relays), and `ThreadHostMaintenance.all`, which runs several hooks as parallel lanes of one
 * auxiliary wave.
 *
 * A combined hook remembers its lanes, so the pass runs each lane as it would run a hook alone:
 * its allowance checked on its own, its join bounded by its own allowance. The wave therefore
 * lasts at most the largest allowance (the spec's maximum over parallel lanes), and no lane is
 * granted a sibling's.
 */
import { Cause, Context, Effect, Exit, Layer, Option, Schema } from "effect"
import { AuxiliaryDispatchMillis } from "../../CloudflareConfig.ts"
import { ThreadHostMaintenanceError } from "./errors.ts"
import type { AuxiliaryDrain } from "./hooks.ts"

/**
 * Application obligations sharing this Object's alarm (outboxes, UI relays). One initial wave is
 * admitted even on a caught-up pass; `sourceFinished` closes admission of new waves only.
 * Admission and subscriptions live in the supplied event Scope. `dispatchTimeoutMillis` is the
 * finite whole-wave allowance (integer, 1..300000 ms): the maximum over parallel lanes, the sum
 * over sequential operations; a wave is admitted only if it fits before `dispatchUntil`.
 * Host mutations go through `ThreadMutationGate` (`invalidatesRecovery: false` for receipts).
 * The hook fails with a `ThreadHostMaintenanceError` of its own: map what it calls into it (the
 * gate's `DurableAlarmError` too, as its `cause`).
 */
export interface ThreadHostMaintenanceService {
  readonly dispatchTimeoutMillis: number
  readonly drainUntil: AuxiliaryDrain<ThreadHostMaintenanceError>
  readonly pendingDeadline: Effect.Effect<Option.Option<number>, ThreadHostMaintenanceError>
}

// The lanes of every hook `combine` made; a hook made otherwise is one lane.
const lanesOf = new WeakMap<ThreadHostMaintenanceService, ReadonlyArray<ThreadHostMaintenanceService>>()

/** @internal The lanes the pass runs for `host`. */
export const hostLanes = (host: ThreadHostMaintenanceService): ReadonlyArray<ThreadHostMaintenanceService> =>
  lanesOf.get(host) ?? [host]

/** @internal Settles parallel lanes: the failures of every failed lane, once all have ended. */
export const settleLanes = <E>(exits: ReadonlyArray<Exit.Exit<unknown, E>>): Effect.Effect<void, E> => {
  const failures = exits.flatMap((exit) => (Exit.isFailure(exit) ? [exit.cause] : []))
  const [first, ...rest] = failures
  return first === undefined
    ? Effect.void
    : Effect.failCause(rest.reduce<Cause.Cause<E>>((all, cause) => Cause.combine(all, cause), first))
}

const isAllowance = Schema.is(AuxiliaryDispatchMillis)

/**
 * @internal Several hooks as one, their lanes flattened. Its allowance is the largest valid one
 * of its lanes (1 without any); its deadline the earliest of theirs. Run on its own, its drain
 * runs every lane in parallel and fails, once all have ended, with the failures of those that
 * failed; the pass instead runs each lane as a hook of its own.
 */
export const combineHostMaintenance = (
  hooks: ReadonlyArray<ThreadHostMaintenanceService>,
): ThreadHostMaintenanceService => {
  const lanes = hooks.flatMap(hostLanes)
  const allowances = lanes.map((lane) => lane.dispatchTimeoutMillis).filter(isAllowance)
  const combined: ThreadHostMaintenanceService = {
    dispatchTimeoutMillis: allowances.length === 0 ? 1 : Math.max(...allowances),
    drainUntil: (sourceFinished, dispatchUntil) =>
      Effect.forEach(
        lanes,
        (lane) => Effect.exit(Effect.suspend(() => lane.drainUntil(sourceFinished, dispatchUntil))),
        {
          concurrency: "unbounded",
        },
      ).pipe(Effect.flatMap(settleLanes)),
    pendingDeadline: Effect.map(
      Effect.forEach(lanes, (lane) => lane.pendingDeadline),
      (deadlines) => {
        const due = deadlines.flatMap((deadline) => (Option.isSome(deadline) ? [deadline.value] : []))
        return due.length === 0 ? Option.none() : Option.some(Math.min(...due))
      },
    ),
  }
  lanesOf.set(combined, lanes)
  return combined
}

const reference = Context.Reference<ThreadHostMaintenanceService>(
  "@effect-agent/platform-cloudflare/ThreadHostMaintenance",
  {
    defaultValue: () => ({
      dispatchTimeoutMillis: 1,
      drainUntil: () => Effect.void,
      pendingDeadline: Effect.succeed(Option.none()),
    }),
  },
)

/** The layer of `ThreadHostMaintenance.all(lanes)`: the lanes' errors and requirements. */
type CombinedLayer<Lanes extends ReadonlyArray<Layer.Layer<never, unknown, unknown>>> = Layer.Layer<
  never,
  Layer.Error<Lanes[number]> | ThreadHostMaintenanceError,
  Layer.Services<Lanes[number]>
>

const all = <const Lanes extends ReadonlyArray<Layer.Layer<never, unknown, unknown>>>(
  lanes: Lanes,
): CombinedLayer<Lanes> =>
  // Built lane by lane, each seen as a layer of unknown errors and requirements: its own.
  Layer.fromBuildMemo((memoMap, scope) =>
    Effect.gen(function* () {
      const hooks: Array<ThreadHostMaintenanceService> = []
      for (const [index, lane] of lanes.entries()) {
        const context = yield* Layer.buildWithMemoMap(lane, memoMap, scope)
        const hook = Context.getOrUndefined(context, reference)
        if (hook === undefined) {
          return yield* new ThreadHostMaintenanceError({
            hook: `lane ${index}`,
            operation: "combine host maintenance",
            message: `lane ${index} of ThreadHostMaintenance.all provides no ThreadHostMaintenance`,
          })
        }
        hooks.push(hook)
      }
      return Context.make(reference, combineHostMaintenance(hooks))
    }),
  ) as CombinedLayer<Lanes>

/**
 * Application host maintenance; the default does nothing. Provide one to `ThreadObject.layer`
 * like any service, or several with `ThreadHostMaintenance.all([...])`.
 */
export const ThreadHostMaintenance: Context.Reference<ThreadHostMaintenanceService> & {
  /**
   * Several host maintenance hooks in one Object, each a Layer that provides
   * `ThreadHostMaintenance` (built with the Object's memo map, so they share its services), as
   * parallel lanes of one auxiliary wave:
   *
   * - each lane is admitted on every pass as if it were the only hook, and its allowance is
   *   checked on its own; after native work each lane is joined for at most its own
   *   `dispatchTimeoutMillis` and interrupted past it, so the wave lasts at most the largest
   *   (the combined hook's `dispatchTimeoutMillis`);
   * - the combined `pendingDeadline` is the earliest of the lanes' (a lane whose read fails
   *   fails the read, as it would alone);
   * - a lane's failure does not interrupt the others: the wave fails, with every failed lane's
   *   error, once each lane has ended or reached its own cutoff, so what the others did and
   *   persisted stands; the pass then commits its failure retry, as for one failing hook.
   *
   * A lane that provides no `ThreadHostMaintenance` fails the build with a
   * `ThreadHostMaintenanceError`. Combined hooks can be combined again; their lanes are
   * flattened.
   */
  readonly all: typeof all
} = Object.assign(reference, { all })
