/**
 * A head Attempt that moves its Submission durably forward without settling it (into an
 * approval wait, into an Unknown Outcome, or through journaled steps before a yield) is
 * progress: the next alarm is `alarmBackoffBase` after the event began and no stall is
 * recorded, so Threads parking one after another are not slowed by a growing backoff, nor by
 * the time each event takes. (A yield after a journaled step: laneRotation.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect } from "effect"
import { BETA96_PACING } from "../../../src/CloudflareConfig.ts"
import { charging, makeRuns, reviewed, threeSteps } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName, rawState } from "../harness.ts"
import { deliver, deliverAcross, deliverOk, longFirstStep, reportOf, rowOf, submit } from "./fixtures.ts"
import { failAt } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"

const BASE = 100

/** The alarm and the stored retry after a pass, relative to the pass's end. */
const afterPass = (ctx: DurableObjectState) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const alarm = yield* alarmOf(ctx)
    return { delay: alarm === null ? null : alarm - now, retry: (yield* rawState(ctx))?.["retry"] }
  })

describe("head progress", () => {
  it.effect("counts a head that parks in an approval wait, lane after lane", () =>
    inObject(objectName("progress-approval"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [reviewed(runs)], config: BETA96_PACING })
        const lanes = ["lane-a", "lane-b", "lane-c", "lane-d"]
        for (const lane of lanes) yield* submit(inc, lane, "reviewed", lane, { n: 1 })

        for (const [index, lane] of lanes.entries()) {
          const report = yield* deliverOk(ctx, inc.maintenance)
          const last = index === lanes.length - 1
          expect(reportOf(report)).toEqual(["actionable", 0, 0, lanes.length, last ? "cleared" : "rearmed"])
          expect((yield* rawState(ctx))?.["lastServedThreadId"]).toBe(lane)
          // Parked, and the next lane comes one base later with no stall recorded.
          expect(yield* afterPass(ctx)).toEqual(
            last ? { delay: null, retry: undefined } : { delay: BASE, retry: undefined },
          )
        }
      }),
    ),
  )

  it.effect("counts a head that becomes an Unknown Outcome", () =>
    inObject(objectName("progress-unknown"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const agents = [charging(runs), threeSteps(runs)]
        // The charge starts, then the Attempt fails before its reply is journaled.
        const inc = yield* incarnation(ctx, {
          agents,
          runtime: yield* failAt("uncertain:after-start-append"),
          config: BETA96_PACING,
        })
        const charge = yield* submit(inc, "lane-a", "charging", "charge", { n: 1 })
        yield* submit(inc, "lane-b", "three-steps", "b1", { n: 1 })
        yield* submit(inc, "lane-b", "three-steps", "b2", { n: 2 })

        const failed = yield* deliver(ctx, inc.maintenance)
        expect(failed._tag).toBe("Failure")
        expect((yield* rawState(ctx))?.["retry"]).toMatchObject({ stalls: 1 })
        // The failing lane is the cursor: the next event serves the other lane first.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 2, "rearmed"])

        // Back at the charge: its outcome is unknown, the lane parks, lane-b still has work.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 0, 2, "rearmed"])
        expect((yield* rowOf(inc, charge.submissionId)).state).toBe("unknown")
        expect(yield* afterPass(ctx)).toEqual({ delay: BASE, retry: undefined })
      }),
    ),
  )

  it.effect.each([
    [30, 70],
    [80, 50],
  ] as const)(
    "paces the next event from this one's start: a %d ms event leaves the alarm %d ms away",
    ([eventMillis, delay]) =>
      inObject(objectName(`progress-pace-${eventMillis}`), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          const runs = yield* makeRuns
          const started = yield* Deferred.make<void>()
          const inc = yield* incarnation(ctx, {
            agents: [longFirstStep(runs, eventMillis, started)],
            config: BETA96_PACING,
          })
          yield* submit(inc, "lane-a", "long-first-step", "a", { n: 1 })
          yield* submit(inc, "lane-b", "long-first-step", "b", { n: 1 })

          const report = yield* deliverAcross(ctx, inc.maintenance, started, eventMillis)
          expect(reportOf(report)).toEqual(["actionable", 0, 1, 1, "rearmed"])
          // alarmBackoffBase after the event began, but never earlier than half of it from now.
          expect(yield* afterPass(ctx)).toEqual({ delay, retry: undefined })
        }),
      ),
  )
})
