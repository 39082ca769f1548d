/**
 * The failpoint switchboard of every suite: a handler for maintenance or runtime failpoints
 * that logs each hit and runs what a test armed at a location. An armed action runs at a
 * later hit (the next, or the `nth` from now) and only once; unarmed hits do nothing.
 *
 * A pause holds the hit until released; a freeze holds it forever, which with `abandon` (or a
 * killed Object) stands for an eviction at that instruction: no finalizer runs.
 */
import { Deferred, Effect } from "effect"
import type { ThreadMaintenanceFailpointLocation } from "../../src/Alarm.ts"
import { DurableRuntimeFailpointError } from "../../src/Testing.ts"
import type { RuntimeFailpointLocation } from "../../src/core/RuntimeFailpoint.ts"

/** Which hit of a location an action waits for: the `nth` from now (1 = the next). */
export interface At {
  readonly nth?: number
}

/** A held hit. */
export interface Hold {
  /** Completes once the hit happened. */
  readonly reached: Effect.Effect<void>
  /** Lets the held hit go on. */
  readonly release: Effect.Effect<void>
}

/** The switchboard of one kind of failpoint, `E` being what its hits may fail with. */
export interface Switchboard<L extends string, E> {
  /** Every hit, in order; tests may push markers of their own between them. */
  readonly hits: Array<string>
  /** The failpoint handler to install. */
  readonly handler: (location: L) => Effect.Effect<void, E>
  /** Runs `action` at a later hit of `location` (actions queue per location). */
  readonly once: (location: L, action: Effect.Effect<void, E>, at?: At) => Effect.Effect<void>
  /** Holds a later hit of `location` until released. */
  readonly pause: (location: L, at?: At) => Effect.Effect<Hold>
  /** Signals a later hit of `location` without holding it. */
  readonly observe: (location: L, at?: At) => Effect.Effect<Effect.Effect<void>>
  /** Holds a later hit of `location` forever; the result completes once it is reached. */
  readonly freeze: (location: L, at?: At) => Effect.Effect<Effect.Effect<void>>
  /** Runs `action` at the `index`-th hit of any location (1-based, counted from creation). */
  readonly atHit: (index: number, action: (location: L) => Effect.Effect<void, E>) => Effect.Effect<void>
  /** How many times `location` was hit. */
  readonly count: (location: L) => number
}

/** A switchboard for failpoints of kind `L`. */
export const makeSwitchboard = <L extends string, E = never>(): Effect.Effect<Switchboard<L, E>> =>
  Effect.sync(() => {
    const hits: Array<string> = []
    const actions = new Map<L, Array<Effect.Effect<void, E>>>()
    const byIndex = new Map<number, (location: L) => Effect.Effect<void, E>>()
    let total = 0
    const once = (location: L, action: Effect.Effect<void, E>, at: At = {}) =>
      Effect.sync(() => {
        // Hits before the nth pass through: they take the no-op places in the queue.
        const skipped = Array.from({ length: Math.max(0, (at.nth ?? 1) - 1) }, () => Effect.void)
        actions.set(location, [...(actions.get(location) ?? []), ...skipped, action])
      })
    const hold = (location: L, at: At, forever: boolean) =>
      Effect.gen(function* () {
        const reached = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const wait = forever ? Effect.never : Deferred.await(release)
        yield* once(location, Effect.andThen(Deferred.succeed(reached, undefined), wait), at)
        return {
          reached: Deferred.await(reached),
          release: Effect.asVoid(Deferred.succeed(release, undefined)),
        } satisfies Hold
      })
    return {
      hits,
      handler: (location) =>
        Effect.suspend(() => {
          hits.push(location)
          total += 1
          const indexed = byIndex.get(total)?.(location) ?? Effect.void
          return Effect.andThen(indexed, actions.get(location)?.shift() ?? Effect.void)
        }),
      once,
      pause: (location, at = {}) => hold(location, at, false),
      observe: (location, at = {}) =>
        Effect.gen(function* () {
          const reached = yield* Deferred.make<void>()
          yield* once(location, Deferred.succeed(reached, undefined), at)
          return Deferred.await(reached)
        }),
      freeze: (location, at = {}) => Effect.map(hold(location, at, true), (held) => held.reached),
      atHit: (index, action) =>
        Effect.sync(() => {
          byIndex.set(index, action)
        }),
      count: (location) => hits.filter((hit) => hit === location).length,
    }
  })

/** Maintenance failpoints (their hits cannot fail: a test dies or pauses there). */
export const maintenanceSwitchboard = makeSwitchboard<ThreadMaintenanceFailpointLocation>

/** Runtime failpoints, which may fail with a typed error. */
export const runtimeSwitchboard = makeSwitchboard<RuntimeFailpointLocation, DurableRuntimeFailpointError>

/** The typed failure a runtime failpoint fails with. */
export const failpointError = (location: RuntimeFailpointLocation) =>
  new DurableRuntimeFailpointError({ location, message: `failpoint ${location} fired` })

/** Shorthand: a runtime switchboard that freezes the `nth` hit of `location` (a kill there). */
export const freezeAt = (location: RuntimeFailpointLocation, nth = 1) =>
  Effect.gen(function* () {
    const board = yield* runtimeSwitchboard()
    const reached = yield* board.freeze(location, { nth })
    return { handler: board.handler, reached }
  })

/** Shorthand: a runtime switchboard whose `nth` hit of `location` fails with a typed error. */
export const failAt = (location: RuntimeFailpointLocation, nth = 1) =>
  Effect.gen(function* () {
    const board = yield* runtimeSwitchboard()
    yield* board.once(location, Effect.fail(failpointError(location)), { nth })
    return board.handler
  })

/** Shorthand: a runtime switchboard that holds the `nth` hit of `location` until released. */
export const pauseAt = (location: RuntimeFailpointLocation, nth = 1) =>
  Effect.gen(function* () {
    const board = yield* runtimeSwitchboard()
    const held = yield* board.pause(location, { nth })
    return { handler: board.handler, ...held }
  })
