import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option } from "effect"
import { AttemptId, OwnershipToken, ThreadId } from "../../../src/core/Identifiers.ts"
import { makeRuns, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName, rawState } from "../harness.ts"
import { deliverOk, reportOf, rowOf, submit } from "./fixtures.ts"
import { freshMaintenance, incarnation } from "../../support/incarnation.ts"

/** Jittered bounds of stages 0..3 with base 10 and cap 40. */
const bounds = [
  [5, 10],
  [10, 20],
  [20, 40],
  [20, 40],
] as const

describe("no-progress backoff", () => {
  it.effect("may exceed the scan cadence while a live Claim elsewhere is never stolen", () =>
    inObject(objectName("no-progress"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, {
          agents: [threeSteps(runs)],
          config: { alarmBackoffBase: 10, alarmBackoffCap: 40, wakeScanInterval: 1 },
        })
        const receipt = yield* submit(inc, "lane", "three-steps", "owned", { n: 1 })
        // Another producer holds the head with a short live lease.
        const claim = Option.getOrThrow(
          yield* inc.ledger.claim(ThreadId.make("lane"), {
            attemptId: AttemptId.make("elsewhere"),
            ownershipToken: OwnershipToken.make("elsewhere-token"),
            now: yield* Clock.currentTimeMillis,
            leaseDurationMillis: 250,
          }),
        )

        for (const [stage, [low, high]] of bounds.entries()) {
          const maintenance = yield* freshMaintenance(inc)
          const report = yield* deliverOk(ctx, maintenance)
          const now = yield* Clock.currentTimeMillis
          expect(reportOf(report)).toEqual(["actionable", 0, 0, 1, "rearmed"])
          const alarm = (yield* alarmOf(ctx)) ?? 0
          expect(alarm, `stage ${stage}`).toBeGreaterThan(now + 1)
          expect(alarm, `stage ${stage}`).toBeGreaterThanOrEqual(now + low)
          expect(alarm, `stage ${stage}`).toBeLessThanOrEqual(now + high)
          expect((yield* rawState(ctx))?.["retry"]).toMatchObject({ notBefore: alarm, stalls: stage + 1 })
          yield* maintenance.ensureAlarm
          expect(yield* alarmOf(ctx)).toBe(alarm)
          const row = yield* rowOf(inc, receipt.submissionId)
          expect([row.state, row.producerEpoch, row.ownership?.ownershipToken]).toEqual([
            "running",
            claim.producerEpoch,
            "elsewhere-token",
          ])
        }
        expect(yield* runsOf(runs)).toEqual({})

        const retryAt = (yield* alarmOf(ctx)) ?? 0
        const releasedAt = yield* Clock.currentTimeMillis
        yield* inc.maintenance.withMutation(inc.ledger.release(claim))
        // The new generation makes the retry obsolete: the mutation's prearm comes first.
        expect(yield* alarmOf(ctx)).toBe(releasedAt + 5)
        expect(releasedAt + 5).toBeLessThan(retryAt)
        const maintenance = yield* freshMaintenance(inc)
        expect(reportOf(yield* deliverOk(ctx, maintenance))).toEqual(["actionable", 0, 1, 0, "cleared"])
        expect((yield* rowOf(inc, receipt.submissionId)).settlement?.output).toBe(9)
        expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
      }),
    ),
  )
})
