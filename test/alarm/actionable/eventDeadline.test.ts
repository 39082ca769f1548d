import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { DurableAlarmError } from "../../../src/Alarm.ts"
import { makeRuns, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { failureOf } from "../fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, rawState } from "../harness.ts"
import { converge, deliver, generationsOf, rowOf, submit, tagsOf } from "./fixtures.ts"
import { runtimeSwitchboard } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"

describe("the event deadline", () => {
  it.effect("interrupts a held Attempt at 14 minutes, releases it and commits a failure retry", () =>
    inObject(objectName("deadline"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const failpoints = yield* runtimeSwitchboard()
        const held = yield* failpoints.pause("claim:after-claim")
        const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)], runtime: failpoints.handler })
        const receipt = yield* submit(inc, "lane", "three-steps", "held", { n: 1 })

        const pass = yield* Effect.forkChild(deliver(ctx, inc.maintenance))
        yield* held.reached
        const claimed = yield* rowOf(inc, receipt.submissionId)
        expect(claimed.ownership).toBeDefined()
        yield* TestClock.adjust("14 minutes")
        const exit = yield* Fiber.join(pass)
        const failedAt = yield* Clock.currentTimeMillis

        const error = failureOf(exit)
        expect(Exit.isFailure(exit)).toBe(true)
        expect(error).toBeInstanceOf(DurableAlarmError)
        expect((error as DurableAlarmError).message).toContain("14 minute deadline")
        // The held Attempt's scope closed: its Claim went back to the lane.
        const released = yield* rowOf(inc, receipt.submissionId)
        expect(released.ownership).toBeUndefined()
        expect(released.state).toBe("ready")
        expect(yield* tagsOf(inc, receipt.submissionId)).toEqual(["SubmissionAccepted"])
        const { dirty, processed } = yield* generationsOf(ctx)
        expect(dirty).toBeGreaterThan(processed)
        const retry = (yield* rawState(ctx))?.["retry"] as {
          generation: string
          notBefore: number
          nativeOnly: boolean
          stalls: number
        }
        // The deadline struck during the head Attempt: a native-phase failure.
        expect(retry).toMatchObject({ generation: String(dirty), nativeOnly: true, stalls: 1 })
        expect(retry.notBefore).toBeGreaterThanOrEqual(failedAt + 50)
        expect(retry.notBefore).toBeLessThanOrEqual(failedAt + 100)
        expect(yield* alarmOf(ctx)).toBe(retry.notBefore)

        const exits = yield* converge(ctx, inc.maintenance)
        expect(exits.map(Exit.isSuccess)).toEqual([true])
        expect(yield* Clock.currentTimeMillis).toBe(retry.notBefore)
        expect((yield* rowOf(inc, receipt.submissionId)).settlement?.outcome).toBe("completed")
        expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )
})
