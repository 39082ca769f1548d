import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit } from "effect"
import { ApprovalDecision } from "../../../src/core/DurableAgentRuntime.ts"
import { makeRuns, reviewed, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { forbidSql } from "../fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName } from "../harness.ts"
import { converge, fingerprint, generationsOf, reportOf, rowOf, submit, tagsOf } from "./fixtures.ts"
import { incarnation } from "../../support/incarnation.ts"

describe("a stable external wait", () => {
  it.effect("quiesces an approval-suspended head with its follower, and a forced alarm does O(1) work", () =>
    inObject(objectName("quiescent-approval"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [reviewed(runs), threeSteps(runs)] })
        const head = yield* submit(inc, "lane", "reviewed", "head", { n: 1 })
        const follower = yield* submit(inc, "lane", "three-steps", "follower", { n: 1 })

        const exits = yield* converge(ctx, inc.maintenance)
        expect(exits.map((exit) => Exit.isSuccess(exit) && reportOf(exit.value))).toEqual([
          ["actionable", 0, 0, 2, "cleared"],
        ])
        expect((yield* rowOf(inc, head.submissionId)).state).toBe("suspended")
        expect((yield* rowOf(inc, follower.submissionId)).state).toBe("ready")
        const acknowledged = yield* generationsOf(ctx)
        expect(acknowledged.processed).toBe(acknowledged.dirty)

        const of = { submissions: [head.submissionId, follower.submissionId], threads: ["lane"] }
        const before = yield* fingerprint(ctx, inc, of)
        const forced = yield* Effect.scoped(
          Effect.gen(function* () {
            const spy = yield* forbidSql(ctx)
            const report = yield* inc.maintenance.pass
            return { report, sql: [...spy.attempts] }
          }),
        )
        expect(reportOf(forced.report)).toEqual(["caught-up", 0, 0, 2, "cleared"])
        expect(forced.sql).toEqual([])
        expect(yield* alarmOf(ctx)).toBeNull()
        expect(yield* fingerprint(ctx, inc, of)).toBe(before)

        yield* inc.maintenance.withMutation(
          inc.runtime.resolveApproval(
            head.submissionId,
            new ApprovalDecision({ approved: true, note: "ok" }),
          ),
        )
        expect(yield* alarmOf(ctx)).not.toBeNull()
        yield* converge(ctx, inc.maintenance)
        expect((yield* rowOf(inc, head.submissionId)).settlement?.output).toBe("draft-1 published (ok)")
        expect((yield* rowOf(inc, follower.submissionId)).settlement?.output).toBe(9)
        expect(yield* runsOf(runs)).toEqual({ draft: 1, publish: 1, one: 1, two: 1, three: 1 })
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect.each([
    {
      approved: true,
      outcome: "completed",
      tags: ["ApprovalResolved", "StepCompleted", "SubmissionSettled"],
    },
    { approved: false, outcome: "failed", tags: ["ApprovalResolved", "SubmissionSettled"] },
  ])(
    "is restored to liveness by its resolving mutation (approved: $approved)",
    ({ approved, outcome, tags }) =>
      inObject(objectName(`liveness-${approved}`), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          const runs = yield* makeRuns
          const inc = yield* incarnation(ctx, { agents: [reviewed(runs), threeSteps(runs)] })
          const head = yield* submit(inc, "lane", "reviewed", "head", { n: 2 })
          const follower = yield* submit(inc, "lane", "three-steps", "follower", { n: 2 })
          yield* converge(ctx, inc.maintenance)
          expect(yield* alarmOf(ctx)).toBeNull()

          const resolvedAt = yield* Clock.currentTimeMillis
          yield* inc.maintenance.withMutation(
            inc.runtime.resolveApproval(head.submissionId, new ApprovalDecision({ approved })),
          )
          // The mutation's own prearm bounds the wake: no hint or request is needed.
          expect(yield* alarmOf(ctx)).toBeLessThanOrEqual(resolvedAt + 50)
          const { dirty, processed } = yield* generationsOf(ctx)
          expect(dirty).toBeGreaterThan(processed)

          yield* converge(ctx, inc.maintenance)
          expect((yield* rowOf(inc, head.submissionId)).settlement?.outcome).toBe(outcome)
          expect((yield* tagsOf(inc, head.submissionId)).slice(-tags.length)).toEqual(tags)
          expect((yield* rowOf(inc, follower.submissionId)).settlement?.outcome).toBe("completed")
          expect(yield* alarmOf(ctx)).toBeNull()
          const settled = yield* generationsOf(ctx)
          expect(settled.processed).toBe(settled.dirty)
        }),
      ),
  )
})
