import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { makeRuns, charging, reviewed, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName } from "../harness.ts"
import {
  abandon,
  converge,
  deliver,
  deliverOk,
  fingerprint,
  reportOf,
  rowOf,
  submit,
  tagsOf,
} from "./fixtures.ts"
import { runtimeSwitchboard } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"

describe("double-fired alarms", () => {
  it.effect("settle a ready lane once, and an extra delivery on the settled lane changes nothing", () =>
    inObject(objectName("double-ready"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)] })
        const receipt = yield* submit(inc, "lane", "three-steps", "once", { n: 1 })
        // Two deliveries of the same alarm at once: the pass permit runs them one after another.
        const [first, second] = yield* Effect.all(
          [deliver(ctx, inc.maintenance), Effect.exit(inc.maintenance.pass)],
          {
            concurrency: 2,
          },
        )
        // Whichever takes the permit first settles the lane; the other finds it caught up.
        const reports = [first, second].map((exit) => Exit.isSuccess(exit) && reportOf(exit.value))
        expect(reports.sort()).toEqual([
          ["actionable", 0, 1, 0, "cleared"],
          ["caught-up", 0, 0, 0, "cleared"],
        ])
        expect((yield* rowOf(inc, receipt.submissionId)).settlement?.output).toBe(9)
        expect(yield* alarmOf(ctx)).toBeNull()

        const of = { submissions: [receipt.submissionId], threads: ["lane"] }
        const before = yield* fingerprint(ctx, inc, of)
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["caught-up", 0, 0, 0, "cleared"])
        expect(yield* fingerprint(ctx, inc, of)).toBe(before)
        expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
      }),
    ),
  )

  it.effect("leave a suspended lane's history, ledger and record unchanged", () =>
    inObject(objectName("double-suspended"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [reviewed(runs)] })
        const receipt = yield* submit(inc, "lane", "reviewed", "waits", { n: 1 })
        yield* converge(ctx, inc.maintenance)
        expect((yield* rowOf(inc, receipt.submissionId)).state).toBe("suspended")

        const of = { submissions: [receipt.submissionId], threads: ["lane"] }
        const before = yield* fingerprint(ctx, inc, of)
        const extra = yield* Effect.all([deliverOk(ctx, inc.maintenance), inc.maintenance.pass], {
          concurrency: 2,
        })
        expect(extra.map(reportOf)).toEqual([
          ["caught-up", 0, 0, 1, "cleared"],
          ["caught-up", 0, 0, 1, "cleared"],
        ])
        expect(yield* fingerprint(ctx, inc, of)).toBe(before)
        expect(yield* alarmOf(ctx)).toBeNull()
        expect(yield* runsOf(runs)).toEqual({ draft: 1 })
      }),
    ),
  )

  it.effect("never replay an Unknown Outcome: the lane quiesces until its resolution converges", () =>
    inObject(objectName("double-unknown"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const killed = yield* runtimeSwitchboard()
        const kill = yield* killed.freeze("uncertain:after-start-append")
        const first = yield* incarnation(ctx, { agents: [charging(runs)], runtime: killed.handler })
        const receipt = yield* submit(first, "lane", "charging", "charge", { n: 7 })
        // The first incarnation dies after journaling the start of the charge.
        yield* abandon(deliver(ctx, first.maintenance))
        yield* kill
        expect(yield* alarmOf(ctx)).not.toBeNull()
        yield* TestClock.adjust("31 seconds")

        const inc = yield* incarnation(ctx, { agents: [charging(runs)] })
        yield* inc.maintenance.ensureAlarm
        const exits = yield* converge(ctx, inc.maintenance)
        expect(exits.map((exit) => Exit.isSuccess(exit) && reportOf(exit.value))).toEqual([
          ["actionable", 0, 0, 1, "cleared"],
        ])
        const row = yield* rowOf(inc, receipt.submissionId)
        expect(row.state).toBe("unknown")
        expect(row.ownership).toBeUndefined()
        expect(yield* tagsOf(inc, receipt.submissionId)).toEqual([
          "SubmissionAccepted",
          "InputApplied",
          "StepCompleted",
          "UncertainStepStarted",
          "UnknownOutcomeRecorded",
        ])

        const of = { submissions: [receipt.submissionId], threads: ["lane"] }
        const before = yield* fingerprint(ctx, inc, of)
        const extra = yield* Effect.all([deliverOk(ctx, inc.maintenance), inc.maintenance.pass], {
          concurrency: 2,
        })
        expect(extra.map((report) => report.phase)).toEqual(["caught-up", "caught-up"])
        expect(yield* fingerprint(ctx, inc, of)).toBe(before)
        expect(yield* alarmOf(ctx)).toBeNull()

        yield* inc.maintenance.withMutation(
          inc.runtime.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: "receipt-42" }),
        )
        yield* converge(ctx, inc.maintenance)
        expect((yield* rowOf(inc, receipt.submissionId)).settlement?.output).toEqual({
          receipt: "receipt-42",
          note: "done",
        })
        // The charge itself never ran: its start was journaled, its outcome came from the resolution.
        expect(yield* runsOf(runs)).toEqual({ prepare: 1, after: 1 })
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )
})
