/**
 * Settlement waiters and the progress hub, on SQLite: the write that settles a Submission wakes
 * its waiter in the same incarnation with no poll due (the test clock never moves), whichever
 * writer settles it; a settlement written by another incarnation is found by the poll.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import type { SubmissionId } from "../../src/core/Identifiers.ts"
import { ProgressHub, type ProgressHubService } from "../../src/core/ProgressHub.ts"
import { makeProgressHub } from "../../src/core/internal/progress/hub.ts"
import { echo, makeRuns, threeSteps } from "./runtimeAgents.ts"
import { processHead, processToSettlement, recover, rowOf, submitTo } from "./runtimeFixtures.ts"
import { type IncarnationOptions, runtimeOf, type RuntimeWorld, sqlRuntimeHarness } from "./runtimeHarness.ts"

/** Lets queued microtasks and resumed fibers run, without moving the test clock. */
const settle = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

/** An incarnation whose ledger, history and runtime share `hub`. */
const withHub = (world: RuntimeWorld, options: IncarnationOptions, hub: ProgressHubService) =>
  Effect.provideService(world.incarnation(options), ProgressHub, hub)

/** A hub that records every publication and wakes nobody. */
const recordingHub = () => {
  const published: Array<SubmissionId> = []
  const inert = ProgressHub.defaultValue()
  const hub: ProgressHubService = {
    ...inert,
    publish: (submissionId) => Effect.sync(() => void published.push(submissionId)),
  }
  return { hub, published }
}

describe("DurableAgentRuntime settlement wake (SQLite in a Durable Object)", () => {
  it.effect("answers a waiter when the Attempt settles its Submission, with no poll due", () =>
    sqlRuntimeHarness.run((world) =>
      Effect.gen(function* () {
        const runs = yield* makeRuns
        const incarnation = yield* withHub(world, { agents: [threeSteps(runs)] }, makeProgressHub())
        const receipt = yield* submitTo(incarnation, "lane", "three-steps", "a", { n: 1 })
        const waiting = yield* Effect.forkChild(runtimeOf(incarnation).awaitSettlement(receipt.submissionId))
        yield* settle
        expect(waiting.pollUnsafe()).toBeUndefined()
        const settlement = yield* processToSettlement(incarnation, "lane")
        yield* settle
        expect(waiting.pollUnsafe()).toEqual(Exit.succeed(settlement))
      }),
    ),
  )

  it.effect("answers a waiter when recovery settles an aborted Submission", () =>
    sqlRuntimeHarness.run((world) =>
      Effect.gen(function* () {
        const incarnation = yield* withHub(world, { agents: [echo] }, makeProgressHub())
        const runtime = runtimeOf(incarnation)
        const head = yield* submitTo(incarnation, "lane", "echo", "head", { text: "first" })
        const queued = yield* submitTo(incarnation, "lane", "echo", "queued", { text: "second" })
        const waiting = yield* Effect.forkChild(runtime.awaitSettlement(queued.submissionId))
        yield* settle
        // The abort intent moves the row but does not settle it: the waiter reads and waits on.
        yield* runtime.abort(queued.submissionId)
        yield* settle
        expect(waiting.pollUnsafe()).toBeUndefined()
        yield* recover(incarnation)
        yield* settle
        const exit = waiting.pollUnsafe()
        expect(exit !== undefined && Exit.isSuccess(exit) ? exit.value.outcome : exit).toBe("aborted")
        expect((yield* rowOf(incarnation, head.submissionId)).state).toBe("ready")
      }),
    ),
  )

  it.effect("finds a settlement written by another incarnation at its next poll", () =>
    sqlRuntimeHarness.run((world) =>
      Effect.gen(function* () {
        const runs = yield* makeRuns
        const options = { agents: [threeSteps(runs)] }
        const waiterSide = yield* withHub(world, options, makeProgressHub())
        const writerSide = yield* withHub(world, options, makeProgressHub())
        const receipt = yield* submitTo(waiterSide, "lane", "three-steps", "a", { n: 1 })
        const waiting = yield* Effect.forkChild(runtimeOf(waiterSide).awaitSettlement(receipt.submissionId))
        yield* settle
        const settlement = yield* processToSettlement(writerSide, "lane")
        yield* settle
        expect(waiting.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust(500)
        expect(yield* Fiber.join(waiting)).toEqual(settlement)
      }),
    ),
  )

  it.effect("times out a waiter on virtual time and holds nothing for it afterwards", () =>
    sqlRuntimeHarness.run((world) =>
      Effect.gen(function* () {
        const runs = yield* makeRuns
        const hub = makeProgressHub()
        const incarnation = yield* withHub(world, { agents: [threeSteps(runs)] }, hub)
        const receipt = yield* submitTo(incarnation, "lane", "three-steps", "a", { n: 1 })
        const waiting = yield* Effect.forkChild(
          Effect.flip(runtimeOf(incarnation).awaitSettlement(receipt.submissionId, { timeoutMillis: 1_200 })),
        )
        yield* settle
        expect(yield* hub.watched).toBe(1)
        yield* TestClock.adjust(1_199)
        expect(waiting.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust(1)
        expect((yield* Fiber.join(waiting))._tag).toBe("SettlementTimeout")
        expect(yield* hub.watched).toBe(0)
      }),
    ),
  )

  it.effect(
    "publishes the Submission each write of its life moves, and nothing for a claim that finds none",
    () =>
      sqlRuntimeHarness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const { hub, published } = recordingHub()
          const incarnation = yield* withHub(world, { agents: [threeSteps(runs)] }, hub)
          const receipt = yield* submitTo(incarnation, "lane", "three-steps", "a", { n: 1 })
          expect(published).toEqual([receipt.submissionId])
          yield* processToSettlement(incarnation, "lane")
          // The claim, the steps' records and the settlement, all of this Submission.
          expect(published.length).toBeGreaterThanOrEqual(4)
          expect(new Set(published)).toEqual(new Set([receipt.submissionId]))
          const before = published.length
          expect(Option.isNone(yield* processHead(incarnation, "lane"))).toBe(true)
          expect(published.length).toBe(before)
        }),
      ),
  )
})
