/**
 * The one driver of the runtime crash matrices: a fault at the n-th failpoint hit (a kill that
 * freezes the fiber forever, or a typed failure), operations that carry on in a fresh
 * incarnation over the same storage after a kill, once the dead owner's leases expired, and
 * `crashMatrix`, which runs a journey once without a fault and then once per chosen hit with
 * each fault there, against every runtime harness. A matrix brings its agents, its journey and
 * its story.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Predicate, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { failpointError, runtimeSwitchboard } from "./switchboard.ts"
import type { RuntimeFailpointHandler, RuntimeFailpointLocation } from "../../src/core/RuntimeFailpoint.ts"
import { makeRuns, type Runs, runsOf } from "../core/runtimeAgents.ts"
import {
  type Incarnation,
  type IncarnationOptions,
  type RuntimeHarness,
  runtimeHarnesses,
  type RuntimeWorld,
} from "../core/runtimeHarness.ts"

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

/** Locations only the delayed-submission and schedule journey reaches. */
export const scheduled = (location: RuntimeFailpointLocation) =>
  /^(ledger:(defer-head|schedule-put|schedule-remove|occurrence):|occurrence:)/.test(location)

/** The faults a matrix injects, each at one hit: a kill, and a typed failure. */
export const FAULTS = [
  ["a kill", freezeAtHit],
  ["a typed failure", failAtHit],
] as const

/** Repeats an operation until a run of it completes: a killed call is repeated by its caller. */
export const untilDone = <A, E>(
  op: CrashingOps["op"],
  f: (incarnation: Incarnation) => Effect.Effect<A, E>,
) =>
  Effect.gen(function* () {
    while (true) {
      const done = yield* op(f)
      if (Option.isSome(done)) return done.value
    }
  })

/** Takes `NotPending` (the wait was resolved already, by a run a fault cut short) as done. */
export const ignoreNotPending = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
  Effect.catchIf(
    Effect.asVoid(effect),
    (error): error is E => error._tag === "NotPending",
    () => Effect.void,
  )

/** A journey's result with what every run reports: whether the fault was injected, and the steps that ran. */
export type Run<A> = A & {
  readonly crashed: boolean
  readonly runs: Effect.Success<ReturnType<typeof runsOf>>
}

type Drive<A, E> = (
  world: RuntimeWorld,
  failpoint: RuntimeFailpointHandler | undefined,
  crash: Crash | undefined,
) => Effect.Effect<Run<A>, E, Scope.Scope>

/**
 * Drives a journey once to record its hits, then once per chosen hit with `inject` there (each
 * run in a fresh world), and checks every run: it must have crashed, and `check` says the rest.
 */
const atEachHit = <A, E>(
  harness: RuntimeHarness,
  inject: (hit: number) => Effect.Effect<Crash>,
  drive: Drive<A, E>,
  choose: (
    hits: ReadonlyArray<RuntimeFailpointLocation>,
  ) => ReadonlyArray<readonly [number, RuntimeFailpointLocation]>,
  check: (result: Run<A>, label: string) => void,
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

/** The operations of one run, as `crashingOps` returns them. */
export type CrashingOps = Effect.Success<ReturnType<typeof crashingOps>>

/** A crash matrix: its agents, a journey, what its fault-free run covers, and the story every run ends with. */
export interface CrashMatrix<A, E> {
  /** The describe block's name; the harness's label follows it. */
  readonly name: string
  /** What every incarnation of a run runs with (the failpoint aside), given the run's step counter. */
  readonly incarnation: (runs: Runs) => Omit<IncarnationOptions, "failpoint">
  /** The journey, driven to its end through the run's operations. */
  readonly drive: (
    ops: CrashingOps,
    failpoint: RuntimeFailpointHandler | undefined,
  ) => Effect.Effect<A, E, Scope.Scope>
  /** The fault-free run: its test's name, and its checks given the failpoint hits it recorded. */
  readonly coverage: {
    readonly test: string
    readonly check: (hits: ReadonlyArray<RuntimeFailpointLocation>, result: Run<A>) => void
  }
  /** The hits to inject at, with their offsets; every hit unless given. */
  readonly choose?: (
    harness: RuntimeHarness,
    hits: ReadonlyArray<RuntimeFailpointLocation>,
  ) => ReadonlyArray<readonly [number, RuntimeFailpointLocation]>
  /** What every run with a fault must end with; `label` names the fault and the hit. */
  readonly check: (result: Run<A>, label: string) => void
  /** Of each fault's test: one fresh world per injected fault. */
  readonly timeout: number
}

/** Registers a matrix against every runtime harness: the fault-free run, then each fault at each chosen hit. */
export const crashMatrix = <A, E>(matrix: CrashMatrix<A, E>) => {
  const drive: Drive<A, E> = (world, failpoint, crash) =>
    Effect.gen(function* () {
      const runs = yield* makeRuns
      const ops = yield* crashingOps(world, matrix.incarnation(runs), failpoint, crash)
      const result = yield* matrix.drive(ops, failpoint)
      return { ...result, crashed: yield* ops.crashed, runs: yield* runsOf(runs) }
    })
  for (const harness of runtimeHarnesses) {
    describe(`${matrix.name} (${harness.label})`, () => {
      it.effect(matrix.coverage.test, () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const hits: Array<RuntimeFailpointLocation> = []
            const result = yield* drive(
              world,
              (location) => Effect.sync(() => void hits.push(location)),
              undefined,
            )
            matrix.coverage.check(hits, result)
          }),
        ),
      )

      for (const [mode, inject] of FAULTS) {
        it.effect(
          `settles every Submission exactly once after ${mode} at each hit`,
          () =>
            atEachHit(
              harness,
              inject,
              drive,
              (hits) => (matrix.choose === undefined ? [...hits.entries()] : matrix.choose(harness, hits)),
              (result, label) => matrix.check(result, `${mode} ${label}`),
            ),
          matrix.timeout,
        )
      }
    })
  }
}
