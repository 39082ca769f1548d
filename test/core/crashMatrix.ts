/**
 * The machinery of the runtime crash matrices: a fault at the n-th failpoint hit (a kill that
 * freezes the fiber forever, or a typed failure), and operations that carry on in a fresh
 * incarnation over the same storage after a kill, once the dead owner's leases expired.
 */
import { expect } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Predicate, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { failpointError, runtimeSwitchboard } from "../support/switchboard.ts"
import type { RuntimeFailpointHandler, RuntimeFailpointLocation } from "../../src/core/RuntimeFailpoint.ts"
import type { Incarnation, IncarnationOptions, RuntimeHarness, RuntimeWorld } from "./runtimeHarness.ts"

/** A fault at one hit. */
export interface Crash {
  readonly handler: RuntimeFailpointHandler
  /** Completes when the failpoint froze its fiber (a kill); never for a typed failure. */
  readonly reached: Effect.Effect<void>
  /** Whether the fault was injected (a typed failure inside a finalizer is swallowed there). */
  readonly fired: Effect.Effect<boolean>
}

/** Freezes the `index`-th hit of any location (1-based) forever. */
export const freezeAtHit = (index: number) =>
  Effect.gen(function* () {
    const board = yield* runtimeSwitchboard()
    const reached = yield* Deferred.make<void>()
    yield* board.atHit(index, () => Effect.andThen(Deferred.succeed(reached, undefined), Effect.never))
    return {
      handler: board.handler,
      reached: Deferred.await(reached),
      fired: Deferred.isDone(reached),
    } satisfies Crash
  })

/** Fails the `index`-th hit of any location (1-based) with a typed error. */
export const failAtHit = (index: number) =>
  Effect.gen(function* () {
    const board = yield* runtimeSwitchboard()
    const hit = yield* Deferred.make<void>()
    yield* board.atHit(index, (location) =>
      Effect.andThen(Deferred.succeed(hit, undefined), Effect.fail(failpointError(location))),
    )
    return { handler: board.handler, reached: Effect.never, fired: Deferred.isDone(hit) } satisfies Crash
  })

/**
 * Operations over a world that survive one injected fault: a kill switches to a fresh
 * incarnation (without the failpoint) after the leases expired, a typed failure ends only the
 * operation it hit. An operation that ends interrupted (a journey's own cut: its Attempt ended
 * mid-step as if its process died) moves time past any lease it may still hold, and the
 * incarnation carries on. `None` when the operation did not complete.
 */
export const crashingOps = (
  world: RuntimeWorld,
  options: Omit<IncarnationOptions, "failpoint">,
  failpoint: RuntimeFailpointHandler | undefined,
  crash: Crash | undefined,
) =>
  Effect.gen(function* () {
    let current: Incarnation = yield* world.incarnation({
      ...options,
      ...(failpoint === undefined ? {} : { failpoint }),
    })
    let crashed = false
    const cut = Effect.as(TestClock.adjust(30_001), Option.none<never>())
    const op = <A, E>(f: (incarnation: Incarnation) => Effect.Effect<A, E>) =>
      Effect.gen(function* () {
        if (crash === undefined || crashed) {
          const exit = yield* Effect.exit(f(current))
          if (!Exit.hasInterrupts(exit)) return Option.some(yield* exit)
          return yield* cut
        }
        const fiber = yield* Effect.forkDetach(f(current))
        const outcome = yield* Effect.raceFirst(
          Effect.map(Fiber.await(fiber), (exit) => ({ _tag: "Done" as const, exit })),
          Effect.as(crash.reached, { _tag: "Killed" as const }),
        )
        if (outcome._tag === "Done") {
          if (Exit.hasInterrupts(outcome.exit)) return yield* cut
          const failed = Exit.findErrorOption(outcome.exit)
          if (Option.isNone(failed) || !Predicate.isTagged(failed.value, "DurableRuntimeFailpointError")) {
            return Option.some(yield* outcome.exit)
          }
          // A typed failure ends the operation; the same incarnation carries on.
          crashed = true
          return Option.none<A>()
        }
        crashed = true
        yield* TestClock.adjust(30_001)
        current = yield* world.incarnation(options)
        return Option.none<A>()
      })
    return {
      op,
      get current() {
        return current
      },
      /** Whether the fault was injected. */
      crashed: Effect.suspend(() => (crashed || crash === undefined ? Effect.succeed(crashed) : crash.fired)),
    }
  })

/** Locations only the subagent and join journey reaches. */
export const childOrJoin = (location: RuntimeFailpointLocation) =>
  /^(child|join|delivery):|joining|joined/.test(location)

/** The faults a matrix injects, each at one hit: a kill, and a typed failure. */
export const FAULTS = [
  ["a kill", freezeAtHit],
  ["a typed failure", failAtHit],
] as const

/**
 * Drives a journey once to record its hits, then once per chosen hit with `inject` there (each
 * run in a fresh world), and checks every run: it must have crashed, and `check` says the rest.
 */
export const atEachHit = <A extends { readonly crashed: boolean }, E>(
  harness: RuntimeHarness,
  inject: (hit: number) => Effect.Effect<Crash>,
  drive: (
    world: RuntimeWorld,
    failpoint: RuntimeFailpointHandler | undefined,
    crash: Crash | undefined,
  ) => Effect.Effect<A, E, Scope.Scope>,
  choose: (
    hits: ReadonlyArray<RuntimeFailpointLocation>,
  ) => ReadonlyArray<readonly [number, RuntimeFailpointLocation]>,
  check: (result: A, label: string) => void,
) =>
  Effect.gen(function* () {
    const hits: Array<RuntimeFailpointLocation> = []
    yield* harness.run((world) =>
      drive(world, (location) => Effect.sync(() => void hits.push(location)), undefined),
    )
    for (const [offset, location] of choose(hits)) {
      const label = `at hit ${offset + 1} (${location})`
      const result = yield* harness.run((world) =>
        Effect.flatMap(inject(offset + 1), (crash) => drive(world, crash.handler, crash)),
      )
      expect(result.crashed, label).toBe(true)
      check(result, label)
    }
  })
