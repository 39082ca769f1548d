/**
 * How a simulated run is hosted: its own scope, `TestClock`, seeded `Random` and a scheduler
 * that resumes fibers on microtasks only, in a fiber of its own.
 */
import { Effect, Fiber, Random, References, Scheduler, type Scope } from "effect"
import { TestClock } from "effect/testing"

/** Runs `effect` as one isolated, deterministic simulation run. */
export const hosted = <A, E>(seed: number, effect: Effect.Effect<A, E, Scope.Scope>): Effect.Effect<A, E> =>
  effect.pipe(
    Effect.scoped,
    // A long warning delay: the clock never moves on while a woken fiber still works.
    Effect.provide(TestClock.layer({ warningDelay: "1 minute" })),
    Random.withSeed(seed),
    Effect.provideService(References.MinimumLogLevel, "None"),
    // Fibers resume on microtasks, never on the event loop: nothing outside the run (the test
    // runner's own messages) can interleave with it, and it runs faster.
    Effect.provideService(Scheduler.Scheduler, new Scheduler.MixedScheduler("sync")),
    // A fresh fiber: a fiber's operation count decides when it yields, so a run must not
    // inherit the count of whatever ran before it.
    Effect.forkChild,
    Effect.flatMap(Fiber.join),
  )
