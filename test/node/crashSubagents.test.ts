/**
 * A crash (`ctx.abort()`) at every boundary of subagents across two Objects and of joined
 * input, in the parent's Object, the child's or both (every subagent point again with the other
 * Object dying at its next boundary as well), then a Miniflare restart over the same
 * storage: both Objects converge by alarm delivery alone, every Submission settles exactly
 * once, the parent sees each child's settlement once, no step journals twice, both end with
 * no alarm, nothing owed and nothing left to send, as a crash-free control pair does.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { RUNTIME_FAILPOINT_LOCATIONS } from "../../src/core/RuntimeFailpoint.ts"
import { pairPoints } from "./support/crashPairPoints.ts"
import { runPairGroup } from "./support/crashPairs.ts"

describe("crash and restart across two Objects", () => {
  it.live(
    "crashes the parent, the child or both at every subagent and join boundary and converges",
    () =>
      Effect.gen(function* () {
        const report = yield* runPairGroup("crash-pairs", pairPoints)
        console.log(JSON.stringify({ ...report, violations: report.violations.length }))
        expect(report.violations).toEqual([])
        // Every subagent, delivery and join location is armed by some point.
        const armed = new Set(
          pairPoints
            .flatMap((point) => [point.parent, point.child])
            .flatMap((entry) => (entry === undefined ? [] : [entry.location])),
        )
        expect(
          RUNTIME_FAILPOINT_LOCATIONS.filter(
            (at) => /^(child|join|delivery):|joining|joined/.test(at) && !armed.has(at),
          ),
        ).toEqual([])
        expect(report.crashed).toBe(pairPoints.length)
        expect(report.bothKilled).toBe(
          pairPoints.filter((p) => p.parent !== undefined && p.child !== undefined).length,
        )
        // Where the other Object still had work (a retry, its own head), it died at a boundary too.
        expect(report.peerKilled.length).toBeGreaterThanOrEqual(8)
      }),
    240_000,
  )
})
