/**
 * `awaitChild` waits in memory for a child that has not settled yet (`childAwaitMillis`) before
 * its Attempt parks, in a host with a progress hub: a child that settles meanwhile leaves its
 * parent running in the same Attempt (one Claim, no park, no replay); one that takes longer is
 * parked for as before; a parent whose Object has another lane's head runnable, or one
 * configured with 0 (beta.96), parks at once. Real time: the wait polls on timers. The in-memory
 * store publishes nothing to a progress hub, so there the wait always runs out and parks: the
 * early answer is checked on SQLite alone.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option } from "effect"
import { deliverLocally, doubler, parentOf, self } from "./childrenFixtures.ts"
import { makeRuns, runsOf } from "./runtimeAgents.ts"
import { processHead, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { type Incarnation, runtimeHarnesses, sqlRuntimeHarness } from "./runtimeHarness.ts"

const agentsOf = Effect.map(makeRuns, (runs) => {
  const child = doubler(runs)
  return { runs, agents: [parentOf("parent", child, "kids"), child] }
})

/** Delivers what the outbox holds once something is there (the parent's Attempt enqueues it). */
const deliverSoon = (incarnation: Incarnation) =>
  Effect.gen(function* () {
    for (let round = 0; round < 200; round++) {
      if ((yield* deliverLocally(incarnation)) > 0) return
      yield* Effect.sleep(5)
    }
    return yield* Effect.die(new Error("nothing to deliver after a second"))
  })

for (const harness of runtimeHarnesses) {
  describe(`awaitChild waits briefly before it parks (${harness.label})`, () => {
    if (harness === sqlRuntimeHarness)
      it.live("a child that settles within the wait: the parent goes on in the same Attempt", () =>
        harness.run(
          (world) =>
            Effect.gen(function* () {
              const { runs, agents } = yield* agentsOf
              const first = yield* world.incarnation({ agents, self, config: { childAwaitMillis: 10_000 } })
              const parent = yield* submitTo(first, "p", "parent", "p1", { n: 21 })
              const waiting = yield* Effect.forkChild(processHead(first, "p"))
              // While the parent's Attempt waits: the child's start, the child, its settlement.
              yield* deliverSoon(first)
              const child = yield* processHead(first, "kids")
              expect(Option.isSome(child)).toBe(true)
              yield* deliverSoon(first)
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

    it.live("a child slower than the wait: the parent parks after it, and resumes at the settlement", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const { agents } = yield* agentsOf
            const first = yield* world.incarnation({ agents, self, config: { childAwaitMillis: 30 } })
            const parent = yield* submitTo(first, "p", "parent", "p1", { n: 5 })
            expect(Option.isNone(yield* processHead(first, "p"))).toBe(true)
            expect((yield* rowOf(first, parent.submissionId)).state).toBe("suspended")
            expect(yield* deliverLocally(first)).toBe(1)
            yield* processHead(first, "kids")
            expect(yield* deliverLocally(first)).toBe(1)
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

    it.live("another lane's head runnable: the parent parks at once, holding no lane back", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const { agents } = yield* agentsOf
            const first = yield* world.incarnation({ agents, self, config: { childAwaitMillis: 10_000 } })
            const parent = yield* submitTo(first, "p", "parent", "p1", { n: 5 })
            yield* submitTo(first, "q", "parent", "q1", { n: 6 })
            // A wait of 10 s would outlast this bound; parking at once does not come near it.
            const outcome = yield* processHead(first, "p").pipe(Effect.timeout("5 seconds"))
            expect(Option.isNone(outcome)).toBe(true)
            expect((yield* rowOf(first, parent.submissionId)).state).toBe("suspended")
          }),
        { progress: true },
      ),
    )

    it.live("childAwaitMillis 0 (beta.96): the parent parks at once", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const { agents } = yield* agentsOf
            const first = yield* world.incarnation({ agents, self, config: { childAwaitMillis: 0 } })
            const parent = yield* submitTo(first, "p", "parent", "p1", { n: 5 })
            const outcome = yield* processHead(first, "p").pipe(Effect.timeout("5 seconds"))
            expect(Option.isNone(outcome)).toBe(true)
            expect((yield* rowOf(first, parent.submissionId)).state).toBe("suspended")
          }),
        { progress: true },
      ),
    )
  })
}
