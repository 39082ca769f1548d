import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit } from "effect"
import { DurableRuntimeFailpointError } from "../../../src/Testing.ts"
import { makeRuns, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { failureOf } from "../fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, rawState } from "../harness.ts"
import { abandon, converge, deliver, generationsOf, rowOf, submit, tagsOf } from "./fixtures.ts"
import { failpointError, runtimeSwitchboard } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"

describe("a failed delivery", () => {
  it.effect("rejects on a typed runtime failure and its redelivery converges", () =>
    inObject(objectName("typed-failure"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const failpoints = yield* runtimeSwitchboard()
        yield* failpoints.once("claim:after-claim", Effect.fail(failpointError("claim:after-claim")))
        const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)], runtime: failpoints.handler })
        const receipt = yield* submit(inc, "lane", "three-steps", "typed", { n: 1 })

        const exit = yield* deliver(ctx, inc.maintenance)
        const failedAt = yield* Clock.currentTimeMillis
        expect(failureOf(exit)).toBeInstanceOf(DurableRuntimeFailpointError)
        const row = yield* rowOf(inc, receipt.submissionId)
        expect([row.state, row.ownership, row.producerEpoch]).toEqual(["ready", undefined, 1])
        const alarm = yield* alarmOf(ctx)
        expect(alarm).toBeGreaterThanOrEqual(failedAt + 50)
        expect(alarm).toBeLessThanOrEqual(failedAt + 100)
        const { dirty } = yield* generationsOf(ctx)
        expect((yield* rawState(ctx))?.["retry"]).toEqual({
          generation: String(dirty),
          notBefore: alarm,
          nativeOnly: true,
          stalls: 1,
        })

        const exits = yield* converge(ctx, inc.maintenance)
        expect(exits.map(Exit.isSuccess)).toEqual([true])
        expect((yield* rowOf(inc, receipt.submissionId)).settlement?.outcome).toBe("completed")
        expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
      }),
    ),
  )

  it.effect("survives an eviction mid-pass: the persisted alarm alone converges the work", () =>
    inObject(objectName("evicted-pass"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const killer = yield* runtimeSwitchboard()
        const killed = yield* killer.freeze("claim:after-claim")
        const first = yield* incarnation(ctx, { agents: [threeSteps(runs)], runtime: killer.handler })
        const receipt = yield* submit(first, "lane", "three-steps", "evicted", { n: 1 })
        yield* abandon(deliver(ctx, first.maintenance))
        yield* killed
        // The delivery consumed the slot; the pass's begin prearm outlives the incarnation.
        expect(yield* alarmOf(ctx)).not.toBeNull()
        expect((yield* rowOf(first, receipt.submissionId)).ownership).toBeDefined()

        // No request reaches the fresh incarnation: its constructor gate and alarms only.
        const second = yield* incarnation(ctx, { agents: [threeSteps(runs)] })
        yield* second.maintenance.ensureAlarm
        const exits = yield* converge(ctx, second.maintenance)
        expect(exits.every(Exit.isSuccess)).toBe(true)
        expect((yield* rowOf(second, receipt.submissionId)).settlement?.outcome).toBe("completed")
        expect(yield* tagsOf(second, receipt.submissionId)).toEqual([
          "SubmissionAccepted",
          "InputApplied",
          "StepCompleted",
          "StepCompleted",
          "StepCompleted",
          "SubmissionSettled",
        ])
        expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
        const { dirty, processed } = yield* generationsOf(ctx)
        expect(processed).toBe(dirty)
      }),
    ),
  )
})
