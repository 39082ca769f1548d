import { env } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Scheduler } from "effect"
import { TestClock } from "effect/testing"
import { endTurn, FLUSHES_PER_TURN, ObjectScheduler } from "../../src/internal/turns.ts"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { threadName } from "./support.ts"

/** Runs `yields` yields (a flush each) and a fork on a fresh Object scheduler. */
const yielding = (yields: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      for (let i = 0; i < yields; i++) yield* Effect.yieldNow
      const child = yield* Effect.forkChild(Effect.succeed("forked"))
      return yield* Fiber.join(child)
    }).pipe(Effect.provideService(Scheduler.Scheduler, new ObjectScheduler())),
  )

/** How many turns a chain of zero-delay timers, started before `run`, took while it ran. */
const turnsDuring = async (run: () => Promise<unknown>) => {
  let turns = 0
  let timer = setTimeout(function tick() {
    turns += 1
    timer = setTimeout(tick, 0)
  }, 0)
  await run()
  clearTimeout(timer)
  return turns
}

describe("the ThreadObject scheduler", () => {
  it("resumes yielded and forked fibers in the same turn", async () => {
    // The yields and the fork's start are the turn's flushes.
    expect(await turnsDuring(() => yielding(FLUSHES_PER_TURN - 1))).toBe(0)
  })

  it("sends a turn's flushes past the bound to a timer, so a long fiber lets other work in", async () => {
    const turns = await turnsDuring(() => yielding(FLUSHES_PER_TURN * 4))
    expect(turns).toBeGreaterThanOrEqual(3)
    // One timer per bound's worth of flushes, not one per flush past the first bound.
    expect(turns).toBeLessThanOrEqual(8)
  })

  it("runs every fiber to its end through both kinds of flush", async () => {
    await expect(yielding(FLUSHES_PER_TURN * 10)).resolves.toBe("forked")
  })

  it.live("is the scheduler an agent's step runs on in a ThreadObject", () =>
    Effect.gen(function* () {
      const client = ThreadClient.make(env.THREADS_TEST, threadName("scheduler"))
      const receipt = yield* client.submit({ agentId: "scheduler", idempotencyKey: "k", input: {} })
      const settlement = yield* client.awaitSettlement(receipt.submissionId, 10_000)
      expect(settlement).toMatchObject({ outcome: "completed", output: true })
    }),
  )
})

describe("endTurn", () => {
  it.effect("resumes in a later turn, with a test clock that never moves", () =>
    Effect.gen(function* () {
      let ticked = false
      setTimeout(() => (ticked = true), 0)
      yield* endTurn
      expect(ticked).toBe(true)
    }).pipe(Effect.provide(TestClock.layer())),
  )

  it.effect("ends when interrupted", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.forkChild(endTurn)
      yield* Fiber.interrupt(fiber)
      expect(fiber.pollUnsafe()?._tag).toBe("Failure")
    }),
  )
})
