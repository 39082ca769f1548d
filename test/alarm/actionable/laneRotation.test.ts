import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect } from "effect"
import { BETA96_PACING } from "../../../src/CloudflareConfig.ts"
import { makeRuns, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName, rawState } from "../harness.ts"
import {
  converge,
  deliverAcross,
  deliverOk,
  longFirstStep,
  reportOf,
  rowOf,
  submit,
  UNHURRIED,
} from "./fixtures.ts"
import { incarnation } from "../../support/incarnation.ts"

describe("lane rotation", () => {
  it.effect("serves three lanes in three consecutive events; a yielding head does not monopolize", () =>
    inObject(objectName("rotation"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const started = yield* Deferred.make<void>()
        // The first step outlasts the 10-minute yield deadline but not the 14-minute event.
        const inc = yield* incarnation(ctx, {
          agents: [longFirstStep(runs, 11 * 60_000, started), threeSteps(runs)],
          config: { ...UNHURRIED, ...BETA96_PACING },
        })
        const yielding = yield* submit(inc, "lane-a", "long-first-step", "a", { n: 1 })
        const b = yield* submit(inc, "lane-b", "three-steps", "b", { n: 1 })
        const c = yield* submit(inc, "lane-c", "three-steps", "c", { n: 1 })
        const cursor = Effect.map(rawState(ctx), (raw) => raw?.["lastServedThreadId"])

        const first = yield* deliverAcross(ctx, inc.maintenance, started, "11 minutes")
        expect(reportOf(first)).toEqual(["actionable", 0, 0, 3, "rearmed"])
        expect(yield* cursor).toBe("lane-a")
        // Journaling a step before the yield is progress: no stall, and the eleven-minute event
        // leaves the next one at the floor.
        expect((yield* rawState(ctx))?.["retry"]).toBeUndefined()
        expect(yield* alarmOf(ctx)).toBe((yield* Clock.currentTimeMillis) + 50)
        const yielded = yield* rowOf(inc, yielding.submissionId)
        expect([yielded.state, yielded.ownership]).toEqual(["ready", undefined])

        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 2, "rearmed"])
        expect(yield* cursor).toBe("lane-b")
        expect((yield* rowOf(inc, b.submissionId)).state).toBe("settled")
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 1, "rearmed"])
        expect(yield* cursor).toBe("lane-c")
        expect((yield* rowOf(inc, c.submissionId)).state).toBe("settled")

        // Back to the yielded lane: its first step replays, the second runs.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 0, "cleared"])
        expect(yield* cursor).toBe("lane-a")
        expect((yield* rowOf(inc, yielding.submissionId)).settlement?.output).toBe(2)
        expect(yield* runsOf(runs)).toEqual({ long: 1, short: 1, one: 2, two: 2, three: 2 })
        expect(yield* converge(ctx, inc.maintenance)).toEqual([])
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )
})
