import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeRuns, reviewed, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName } from "../harness.ts"
import { abandon, deliver, deliverOk, reportOf, rowOf, submit, threadRecords } from "./fixtures.ts"
import { runtimeSwitchboard } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"

describe("recovery before claim", () => {
  it.effect("settles a stranded Submission before the next one's input is applied", () =>
    inObject(objectName("recovery-first"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        // S1's Attempt dies mid-journey holding its Claim; then an abort of S1 is accepted.
        const killer = yield* runtimeSwitchboard()
        const killed = yield* killer.freeze("step:after-step-append")
        const first = yield* incarnation(ctx, { agents: [threeSteps(runs)], runtime: killer.handler })
        const stranded = yield* submit(first, "lane", "three-steps", "s1", { n: 1 })
        yield* abandon(deliver(ctx, first.maintenance))
        yield* killed
        expect((yield* rowOf(first, stranded.submissionId)).state).toBe("running")

        const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)] })
        yield* inc.maintenance.ensureAlarm
        yield* inc.maintenance.withMutation(inc.runtime.abort(stranded.submissionId))
        const next = yield* submit(inc, "lane", "three-steps", "s2", { n: 2 })
        // One event: recovery settles S1 aborted (its dead Claim is no live owner), then S2 runs.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 1, 1, 0, "cleared"])

        const records = yield* threadRecords(inc, "lane")
        const position = (submissionId: string, tag: string) =>
          records.findIndex((record) => record.submissionId === submissionId && record.entry._tag === tag)
        const settledS1 = position(stranded.submissionId, "SubmissionSettled")
        const inputS2 = position(next.submissionId, "InputApplied")
        expect(settledS1).toBeGreaterThan(position(next.submissionId, "SubmissionAccepted"))
        expect(inputS2).toBeGreaterThan(settledS1)
        expect((yield* rowOf(inc, stranded.submissionId)).settlement?.outcome).toBe("aborted")
        expect((yield* rowOf(inc, next.submissionId)).settlement?.output).toBe(12)
        expect(yield* runsOf(runs)).toEqual({ one: 2, two: 1, three: 1 })
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )
})

describe("the recovered count of a pass", () => {
  it.effect("counts the recovery reports, not the Submissions queued behind them", () =>
    inObject(objectName("recovered-count"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [reviewed(runs), threeSteps(runs)] })
        yield* submit(inc, "a", "reviewed", "r", { n: 1 })
        // Plain queued input needs no recovery: the first pass reports nothing recovered.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 0, 1, "cleared"])
        yield* submit(inc, "b", "three-steps", "x", { n: 1 })
        const y = yield* submit(inc, "b", "three-steps", "y", { n: 2 })
        yield* inc.maintenance.withMutation(inc.runtime.abort(y.submissionId))
        // Three nonterminal: the parked approval and the queued x need no recovery; the accepted
        // abort of y does, and settles it.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 1, 1, 1, "cleared"])
      }),
    ),
  )
})
