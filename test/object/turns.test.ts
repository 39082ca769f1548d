import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Scheduler } from "effect"
import { FLUSHES_BETWEEN_TURNS, makeObjectScheduler } from "../../src/internal/turns.ts"

/** Runs `yields` yields (each a flush of the scheduler) on a fresh Object scheduler. */
const yielding = (yields: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      for (let i = 0; i < yields; i++) yield* Effect.yieldNow
      const child = yield* Effect.forkChild(Effect.succeed("forked"))
      return yield* Fiber.join(child)
    }).pipe(Effect.provideService(Scheduler.Scheduler, makeObjectScheduler())),
  )

/** Whether a timer set before `run` fired before it finished. */
const timerFiredDuring = async (run: () => Promise<unknown>) => {
  let fired = false
  const timer = setTimeout(() => {
    fired = true
  }, 0)
  await run()
  clearTimeout(timer)
  return fired
}

describe("the ThreadObject scheduler", () => {
  it("resumes yielded and forked fibers in the same turn, so their writes share a commit", async () => {
    // The fork's start and its join are two more flushes.
    const fired = await timerFiredDuring(() => yielding(FLUSHES_BETWEEN_TURNS - 3))
    expect(fired).toBe(false)
  })

  it("waits for a timer after a run of flushes, so a long fiber lets other work in", async () => {
    const fired = await timerFiredDuring(() => yielding(FLUSHES_BETWEEN_TURNS * 4))
    expect(fired).toBe(true)
  })

  it("runs every fiber to its end through both kinds of flush", async () => {
    await expect(yielding(FLUSHES_BETWEEN_TURNS * 10)).resolves.toBe("forked")
  })
})
