import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { BETA96_PACING } from "../../../src/CloudflareConfig.ts"
import { makeRuns, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName } from "../harness.ts"
import { converge, deliverOk, generationsOf, reportOf, rowOf, submit } from "./fixtures.ts"
import { runtimeSwitchboard } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"

describe("one head per event", () => {
  it.effect("returns after the head settles without running the follower queued meanwhile", () =>
    inObject(objectName("one-head"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const failpoints = yield* runtimeSwitchboard()
        const held = yield* failpoints.pause("ledger:settle:after")
        const inc = yield* incarnation(ctx, {
          agents: [threeSteps(runs)],
          runtime: failpoints.handler,
          config: BETA96_PACING,
        })
        const head = yield* submit(inc, "lane", "three-steps", "head", { n: 1 })

        const pass = yield* Effect.forkChild(deliverOk(ctx, inc.maintenance))
        yield* held.reached
        const follower = yield* submit(inc, "lane", "three-steps", "follower", { n: 2 })
        yield* held.release
        const first = yield* Fiber.join(pass)

        expect(reportOf(first)).toEqual(["actionable", 0, 1, 1, "rearmed"])
        expect((yield* rowOf(inc, head.submissionId)).state).toBe("settled")
        expect((yield* rowOf(inc, follower.submissionId)).state).toBe("ready")
        expect(failpoints.count("claim:after-claim")).toBe(1)
        const { dirty, processed } = yield* generationsOf(ctx)
        expect(dirty).toBeGreaterThan(processed)
        expect(yield* alarmOf(ctx)).not.toBeNull()

        const second = yield* deliverOk(ctx, inc.maintenance)
        expect(reportOf(second)).toEqual(["actionable", 0, 1, 0, "cleared"])
        expect((yield* rowOf(inc, follower.submissionId)).settlement?.output).toBe(12)
        expect(yield* converge(ctx, inc.maintenance)).toEqual([])
        expect(yield* alarmOf(ctx)).toBeNull()
        expect(yield* runsOf(runs)).toEqual({ one: 2, two: 2, three: 2 })
        const settled = yield* generationsOf(ctx)
        expect(settled.processed).toBe(settled.dirty)
      }),
    ),
  )
})
