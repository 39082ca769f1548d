import { describe, expect, it } from "@effect/vitest"
import { Clock, DateTime, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { makeRuns, renamedSteps, runsOf, slow, threeSteps } from "./runtimeAgents.ts"
import {
  entriesOf,
  processHead,
  processToSettlement,
  recover,
  rowOf,
  submitTo,
  tagsOf,
} from "./runtimeFixtures.ts"
import { runtimeHarnesses, runtimeOf, sqlRuntimeHarness } from "./runtimeHarness.ts"
import { failAt, freezeAt } from "../support/switchboard.ts"

for (const harness of runtimeHarnesses) {
  describe(`AgentContext steps (${harness.label})`, () => {
    it.effect("replays completed steps after a crash and settles once", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const crash = yield* freezeAt("step:after-step-append", 2)
          const first = yield* world.incarnation({ agents: [threeSteps(runs)], failpoint: crash.handler })
          const receipt = yield* submitTo(first, "lane", "three-steps", "k", { n: 10 })
          yield* Effect.forkDetach(processHead(first, "lane"))
          yield* crash.reached
          expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1 })

          // The killed Attempt's lease runs out; a fresh incarnation takes over.
          yield* TestClock.adjust(30_001)
          const second = yield* world.incarnation({ agents: [threeSteps(runs)] })
          expect(yield* recover(second)).toEqual({
            [receipt.submissionId]: ["ReleaseExpiredLease", "repaired"],
          })
          const settlement = yield* processToSettlement(second, "lane")
          expect(settlement.outcome).toBe("completed")
          expect(settlement.output).toBe(11 + 12 + 13)
          expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
          expect(yield* tagsOf(second, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "StepCompleted",
            "StepCompleted",
            "StepCompleted",
            "SubmissionSettled",
          ])
          expect((yield* rowOf(second, receipt.submissionId)).state).toBe("settled")
          expect(yield* runtimeOf(second).awaitSettlement(receipt.submissionId)).toEqual(settlement)
          expect(yield* processHead(second, "lane")).toEqual(Option.none())
        }),
      ),
    )

    it.effect("a failed Attempt releases its Claim and the next one resumes after the last step", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const first = yield* world.incarnation({
            agents: [threeSteps(runs)],
            failpoint: yield* failAt("step:after-step-append", 1),
          })
          const receipt = yield* submitTo(first, "lane", "three-steps", "k", { n: 0 })
          const failure = yield* Effect.flip(processHead(first, "lane"))
          expect(failure._tag).toBe("DurableRuntimeFailpointError")
          const row = yield* rowOf(first, receipt.submissionId)
          expect(row.state).toBe("ready")
          expect(row.ownership).toBeUndefined()
          const settlement = yield* processToSettlement(first, "lane")
          expect(settlement.output).toBe(6)
          expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
        }),
      ),
    )

    it.effect("yields at a step boundary after yieldAfter and resumes without re-running steps", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const runtime = yield* world.incarnation({ agents: [slow(runs, 60_000)] })
          const receipt = yield* submitTo(runtime, "lane", "slow", "k", { n: 100 })
          const start = yield* Clock.currentTimeMillis
          const attempt = yield* Effect.forkChild(
            runtimeOf(runtime).processThreadHead(ThreadId.make("lane"), {
              yieldAfter: DateTime.makeUnsafe(start + 30_000),
            }),
          )
          yield* TestClock.adjust(60_000)
          expect(yield* Fiber.join(attempt)).toEqual(Option.none())
          expect(yield* runsOf(runs)).toEqual({ "slow-0": 1 })
          const row = yield* rowOf(runtime, receipt.submissionId)
          expect(row.state).toBe("ready")
          expect(yield* recover(runtime)).toEqual({
            [receipt.submissionId]: ["ResumeFromTurnBoundary", "deferred"],
          })

          const resumed = yield* Effect.forkChild(processToSettlement(runtime, "lane"))
          yield* TestClock.adjust(60_000)
          yield* TestClock.adjust(60_000)
          const settlement = yield* Fiber.join(resumed)
          expect(settlement.output).toBe(100 + 0 + 1 + 2)
          expect(yield* runsOf(runs)).toEqual({ "slow-0": 1, "slow-1": 1, "slow-2": 1 })
        }),
      ),
    )

    it.effect("renews the lease of a long step so no other Attempt can claim it", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const runtime = yield* world.incarnation({ agents: [slow(runs, 45_000, 1)] })
          const receipt = yield* submitTo(runtime, "lane", "slow", "k", { n: 1 })
          const attempt = yield* Effect.forkChild(processToSettlement(runtime, "lane"))
          yield* TestClock.adjust(40_000)
          const row = yield* rowOf(runtime, receipt.submissionId)
          expect(row.state).toBe("running")
          expect(row.ownership?.leaseExpiresAt).toBeGreaterThan(yield* Clock.currentTimeMillis)
          expect(yield* processHead(runtime, "lane")).toEqual(Option.none())
          yield* TestClock.adjust(5_000)
          expect((yield* Fiber.join(attempt)).output).toBe(1)
        }),
      ),
    )
  })
}

describe("AgentContext journal", () => {
  it.effect("fails the Attempt with RunJournalError when a replayed step has another name", () =>
    sqlRuntimeHarness.run((world) =>
      Effect.gen(function* () {
        const runs = yield* makeRuns
        const first = yield* world.incarnation({
          agents: [threeSteps(runs)],
          failpoint: yield* failAt("step:after-step-append", 1),
        })
        const receipt = yield* submitTo(first, "lane", "three-steps", "k", { n: 0 })
        yield* Effect.flip(processHead(first, "lane"))
        const renamed = yield* world.incarnation({ agents: [renamedSteps(runs)] })
        const failure = yield* Effect.flip(processHead(renamed, "lane"))
        expect(failure._tag).toBe("RunJournalError")
        expect(failure.message).toContain('"one"')
        expect((yield* rowOf(renamed, receipt.submissionId)).state).toBe("ready")
        const entries = yield* entriesOf(renamed, receipt.submissionId)
        expect(entries.filter((entry) => entry._tag === "StepCompleted")).toHaveLength(1)
      }),
    ),
  )
})
