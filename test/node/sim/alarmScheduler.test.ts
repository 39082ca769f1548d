/** The simulated alarm scheduler redelivers, limits and cancels handlers as workerd does. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import type { Fault, FaultPlan } from "./faults.ts"
import { hosted } from "./harness.ts"
import { ALARM_WALL_LIMIT, makeWorld, PLATFORM_MAX_RETRIES, type World } from "./world.ts"
import type { ThreadId } from "../../../src/core/Identifiers.ts"

const plan = (decide: (location: string) => Fault): FaultPlan => ({
  decide,
  zombie: () => 0,
  calm: () => {},
  describe: () => "test plan",
})

const config = { alarmBackoffBase: 100, alarmBackoffCap: 5_000, wakeScanInterval: 1_000 }

/** A world with one accepted Submission, so its alarm is armed. */
const withSubmission = (faults: FaultPlan) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(1_000_000)
    const world = yield* makeWorld({ config, faults, trace: () => {} })
    let accepted = false
    yield* world.call(
      "submit",
      (incarnation) =>
        incarnation.entry.submit({
          threadId: "lane-a" as ThreadId,
          agentId: "stepper",
          idempotencyKey: "key-1",
          input: { n: 1, steps: 1, sleep: 0, fail: false },
        }),
      (exit) => {
        accepted = Exit.isSuccess(exit)
      },
    )
    yield* world.settle
    expect(accepted).toBe(true)
    return world
  })

/** Moves time to the alarm and delivers it. */
const deliverDue = (world: World) =>
  Effect.gen(function* () {
    const at = world.storage.alarm
    if (at === null) return false
    yield* TestClock.setTime(Math.max(at, world.now()))
    const delivered = yield* world.deliver()
    yield* world.settle
    return delivered
  })

describe("simulated alarm scheduler", () => {
  it.effect("redelivers a failing handler on the platform's retry ladder, then drops the alarm", () =>
    hosted(
      1,
      Effect.gen(function* () {
        // Failing before the generation is read: the pass cannot rearm, the platform retries.
        const world = yield* withSubmission(
          plan((location) => (location === "maintenance:begin:before" ? "fail" : "none")),
        )
        const delays: Array<number> = []
        for (let attempt = 0; attempt <= PLATFORM_MAX_RETRIES; attempt++) {
          expect(yield* deliverDue(world)).toBe(true)
          if (world.storage.alarm !== null) delays.push(world.storage.alarm - world.now())
        }
        expect(delays).toEqual([2_000, 4_000, 8_000, 16_000, 32_000, 64_000])
        expect(world.storage.alarm).toBeNull()
        expect(world.stats.gaveUp).toBe(1)
      }),
    ),
  )

  it.effect("aborts a handler still running at the 15-minute wall limit", () =>
    hosted(
      2,
      Effect.gen(function* () {
        // Held at begin, then in the failure rearm that follows the pass's own 14-minute deadline.
        const world = yield* withSubmission(
          plan((location) =>
            location === "maintenance:begin:after" || location === "maintenance:retry:before"
              ? "pause"
              : "none",
          ),
        )
        expect(yield* deliverDue(world)).toBe(true)
        expect(world.handlerRunning).toBe(true)
        yield* TestClock.adjust(ALARM_WALL_LIMIT - 1)
        yield* world.settle
        expect(world.handlerRunning).toBe(true)
        yield* TestClock.adjust(1)
        yield* world.settle
        expect(world.handlerRunning).toBe(false)
        expect(world.stats.wallLimits).toBe(1)
        // The handler had written its prearm, which stays due.
        expect(world.storage.alarm).not.toBeNull()
      }),
    ),
  )
})
