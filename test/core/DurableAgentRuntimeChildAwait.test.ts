/**
 * `awaitChild` waits in memory for a child that has not settled yet (`childAwaitMillis`) before
 * its Attempt parks, in a host with a progress hub: a child that settles meanwhile leaves its
 * parent running in the same Attempt (one Claim, no park, no replay); one that takes longer is
 * parked for after the wait; a parent whose Object has another lane's head runnable, or one
 * configured with 0 (beta.96), parks without waiting. `TestClock` drives the wait's polls, so
 * whether an Attempt is still waiting is read from its fiber.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Schema } from "effect"
import { define } from "../../src/core/AgentRegistration.ts"
import { TestClock } from "effect/testing"
import { deliverLocally, doubler, parentOf, self } from "./childrenFixtures.ts"
import { makeRuns, runsOf } from "./runtimeAgents.ts"
import { processDue, processHead, recover, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { type Incarnation, runtimeHarnesses, runtimeOf } from "./runtimeHarness.ts"

const agentsOf = Effect.map(makeRuns, (runs) => {
  const child = doubler(runs)
  /** Sleeps first, so its child is started by an Attempt the due path claimed in place. */
  const napper = define({
    id: "napper",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        yield* ctx.sleep("nap", 100)
        const handle = yield* ctx.startChild({
          agent: child,
          input: { n },
          thread: { objectName: "local", threadId: "kids" },
        })
        const settled = yield* ctx.awaitChild(handle)
        return settled.outcome === "completed" ? settled.output : -1
      }),
  })
  return { runs, agents: [parentOf("parent", child, "kids"), napper, child] }
})

/** Whether the fiber has ended. */
const ended = <A, E>(fiber: Fiber.Fiber<A, E>) => Effect.sync(() => fiber.pollUnsafe() !== undefined)

/** Forks `attempt` and lets it run until it waits (or ends). */
const start = <A, E>(attempt: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkChild(attempt)
    for (let turn = 0; turn < 20; turn++) yield* Effect.yieldNow
    return fiber
  })

/** Starts the parent's Attempt and lets it run until it waits (or ends). */
const startParent = (incarnation: Incarnation) => start(processHead(incarnation, "p"))

/** Plays the child's side: delivers its start, runs it to its settlement, delivers the marker. */
const answerChild = (incarnation: Incarnation) =>
  Effect.gen(function* () {
    expect(yield* deliverLocally(incarnation)).toBe(1)
    expect(Option.isSome(yield* processHead(incarnation, "kids"))).toBe(true)
    expect(yield* deliverLocally(incarnation)).toBe(1)
  })

for (const harness of runtimeHarnesses) {
  describe(`awaitChild waits briefly before it parks (${harness.label})`, () => {
    it.effect("a child that settles within the wait: the parent goes on in the same Attempt", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const { runs, agents } = yield* agentsOf
            const first = yield* world.incarnation({ agents, self })
            const parent = yield* submitTo(first, "p", "parent", "p1", { n: 21 })
            const waiting = yield* startParent(first)
            expect(yield* ended(waiting)).toBe(false)
            // While the parent's Attempt waits: the child's start, the child, its settlement.
            yield* answerChild(first)
            // The wait's next poll sees the settlement recorded.
            yield* TestClock.adjust(1)
            const settled = yield* Fiber.join(waiting)
            expect(Option.getOrThrow(settled)).toMatchObject({
              outcome: "completed",
              output: "child said 42",
            })
            const row = yield* rowOf(first, parent.submissionId)
            expect(row.state).toBe("settled")
            // One Claim: the parent never parked, so no later Attempt replayed it.
            expect(row.producerEpoch).toBe(1)
            expect(yield* tagsOf(first, parent.submissionId)).toContain("ChildSettled")
            expect(yield* runsOf(runs)).toEqual({ "double-21": 1 })
          }),
        { progress: true },
      ),
    )

    it.effect("a parent resumed from a sleep waits too: its own due time holds nothing back", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const { agents } = yield* agentsOf
            const first = yield* world.incarnation({ agents, self })
            const parent = yield* submitTo(first, "p", "napper", "p1", { n: 4 })
            expect(Option.isNone(yield* processHead(first, "p"))).toBe(true)
            yield* TestClock.adjust(100)
            const waiting = yield* start(processDue(first, parent.submissionId))
            expect(yield* ended(waiting)).toBe(false)
            yield* answerChild(first)
            yield* TestClock.adjust(1)
            expect(yield* Fiber.join(waiting)).toMatchObject({
              _tag: "Settled",
              settlement: { outcome: "completed", output: 8 },
            })
          }),
        { progress: true },
      ),
    )

    it.effect(
      "a child slower than the wait: the parent parks once it ends, and resumes at the settlement",
      () =>
        harness.run(
          (world) =>
            Effect.gen(function* () {
              const { agents } = yield* agentsOf
              const first = yield* world.incarnation({ agents, self, config: { childAwaitMillis: 300 } })
              const parent = yield* submitTo(first, "p", "parent", "p1", { n: 5 })
              const waiting = yield* startParent(first)
              yield* TestClock.adjust(250)
              expect(yield* ended(waiting)).toBe(false)
              yield* TestClock.adjust(100)
              expect(Option.isNone(yield* Fiber.join(waiting))).toBe(true)
              expect((yield* rowOf(first, parent.submissionId)).state).toBe("suspended")
              yield* answerChild(first)
              expect((yield* rowOf(first, parent.submissionId)).state).toBe("ready")
              const settled = yield* processHead(first, "p")
              expect(Option.getOrThrow(settled)).toMatchObject({
                outcome: "completed",
                output: "child said 10",
              })
              expect((yield* rowOf(first, parent.submissionId)).producerEpoch).toBe(2)
            }),
          { progress: true },
        ),
    )

    it.effect("an abort accepted during the wait ends it at once; the parked parent settles aborted", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const { agents } = yield* agentsOf
            const first = yield* world.incarnation({ agents, self })
            const parent = yield* submitTo(first, "p", "parent", "p1", { n: 5 })
            const waiting = yield* startParent(first)
            expect(yield* ended(waiting)).toBe(false)
            yield* runtimeOf(first).abort(parent.submissionId)
            // The next poll sees a write that is no settlement, and the Attempt parks.
            yield* TestClock.adjust(1)
            expect(yield* ended(waiting)).toBe(true)
            expect(Option.isNone(yield* Fiber.join(waiting))).toBe(true)
            // Parked with its abort accepted: recovery settles it, as after any park.
            yield* recover(first)
            const row = yield* rowOf(first, parent.submissionId)
            expect(row.state).toBe("settled")
            expect(row.settlement?.outcome).toBe("aborted")
          }),
        { progress: true },
      ),
    )

    it.effect("another lane's head runnable: the parent parks without waiting", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const { agents } = yield* agentsOf
            const first = yield* world.incarnation({ agents, self })
            const parent = yield* submitTo(first, "p", "parent", "p1", { n: 5 })
            yield* submitTo(first, "q", "parent", "q1", { n: 6 })
            // No clock moves: a parent that waited would still be running.
            expect(yield* ended(yield* startParent(first))).toBe(true)
            expect((yield* rowOf(first, parent.submissionId)).state).toBe("suspended")
          }),
        { progress: true },
      ),
    )

    it.effect("childAwaitMillis 0 (beta.96): the parent parks without waiting", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const { agents } = yield* agentsOf
            const first = yield* world.incarnation({ agents, self, config: { childAwaitMillis: 0 } })
            const parent = yield* submitTo(first, "p", "parent", "p1", { n: 5 })
            expect(yield* ended(yield* startParent(first))).toBe(true)
            expect((yield* rowOf(first, parent.submissionId)).state).toBe("suspended")
          }),
        { progress: true },
      ),
    )
  })
}
