import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BETA96_PACING } from "../../../src/CloudflareConfig.ts"
import { makeRuns, threeSteps } from "../../core/runtimeAgents.ts"
import { dayAhead, inObject, objectName, putRawState, rawState } from "../harness.ts"
import { caughtUpRecord } from "../fixtures.ts"
import { deliverOk, reportOf, submit } from "./fixtures.ts"
import { incarnation } from "../../support/incarnation.ts"

describe("the stored nonterminal count", () => {
  it.effect("follows every pass that changes it, while work stays owed", () =>
    inObject(objectName("count-follows"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)], config: BETA96_PACING })
        for (const key of ["a", "b", "c"]) yield* submit(inc, "lane", "three-steps", key, { n: 1 })

        const counts: Array<readonly [number, unknown]> = []
        for (let pass = 0; pass < 3; pass++) {
          const report = yield* deliverOk(ctx, inc.maintenance)
          counts.push([report.nonterminal, (yield* rawState(ctx))?.["nonterminal"]])
        }
        // Each progressing pass leaves work owed and one Submission fewer: the record says so.
        expect(counts).toEqual([
          [2, 2],
          [1, 1],
          [0, 0],
        ])
      }),
    ),
  )

  it.effect("is what the next caught-up pass reports", () =>
    inObject(objectName("count-caught-up"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)], config: BETA96_PACING })
        yield* putRawState(ctx, caughtUpRecord(1n, { nonterminal: 7 }))
        yield* submit(inc, "lane", "three-steps", "a", { n: 1 })
        yield* submit(inc, "lane", "three-steps", "b", { n: 2 })
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 1, "rearmed"])
        // A forced delivery while the retry of this generation is not due is caught up.
        const record = (yield* rawState(ctx)) ?? {}
        yield* putRawState(ctx, {
          ...record,
          retry: { generation: record["dirty"], notBefore: now + 60_000, nativeOnly: true, stalls: 1 },
        })
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["caught-up", 0, 0, 1, "rearmed"])
      }),
    ),
  )
})
