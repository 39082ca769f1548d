import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import { define, withDigest } from "../../src/core/AgentRegistration.ts"
import { gated, makeRuns, ran, runsOf, threeSteps } from "./runtimeAgents.ts"
import { processHead, processToSettlement, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { runtimeHarnesses, runtimeOf } from "./runtimeHarness.ts"
import { pauseAt } from "../support/switchboard.ts"

for (const harness of runtimeHarnesses) {
  describe(`DurableAgentRuntime bindings (${harness.label})`, () => {
    it.effect("fails closed on an unavailable binding and changes nothing but the epoch", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const admitting = yield* world.incarnation({ agents: [threeSteps(runs)] })
          const receipt = yield* submitTo(admitting, "lane", "three-steps", "k", { n: 1 })
          const before = yield* rowOf(admitting, receipt.submissionId)
          const without = yield* world.incarnation({ agents: [] })
          const failure = yield* Effect.flip(processHead(without, "lane"))
          expect(failure).toMatchObject({ _tag: "BindingUnavailable", agentId: "three-steps" })
          const after = yield* rowOf(without, receipt.submissionId)
          expect(after).toEqual({ ...before, producerEpoch: before.producerEpoch + 1 })
          expect(yield* tagsOf(without, receipt.submissionId)).toEqual(["SubmissionAccepted"])
          expect((yield* processToSettlement(admitting, "lane")).output).toBe(9)
        }),
      ),
    )

    it.effect("fails closed on a digest mismatch until the admitted contract is registered", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const admitting = yield* world.incarnation({ agents: [threeSteps(runs)] })
          const receipt = yield* submitTo(admitting, "lane", "three-steps", "k", { n: 1 })
          const before = yield* rowOf(admitting, receipt.submissionId)
          const changed = yield* world.incarnation({
            agents: [withDigest(threeSteps(runs), "a-later-contract")],
          })
          for (const attempt of [1, 2]) {
            const failure = yield* Effect.flip(processHead(changed, "lane"))
            expect(failure._tag).toBe("BindingDigestMismatch")
            expect(yield* rowOf(changed, receipt.submissionId)).toEqual({
              ...before,
              producerEpoch: before.producerEpoch + attempt,
            })
          }
          expect(yield* runsOf(runs)).toEqual({})
          const restored = yield* world.incarnation({ agents: [threeSteps(runs)] })
          expect((yield* processToSettlement(restored, "lane")).outcome).toBe("completed")
        }),
      ),
    )
  })

  describe(`DurableAgentRuntime ownership (${harness.label})`, () => {
    it.effect("rejects a stale owner's writes after its lease expired and another Attempt claimed", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const stall = yield* pauseAt("step:after-step-append", 1)
          const slowOwner = yield* world.incarnation({ agents: [threeSteps(runs)], failpoint: stall.handler })
          const receipt = yield* submitTo(slowOwner, "lane", "three-steps", "k", { n: 1 })
          const stale = yield* Effect.forkChild(processHead(slowOwner, "lane"))
          yield* stall.reached
          yield* TestClock.adjust(30_001)
          const other = yield* world.incarnation({ agents: [threeSteps(runs)] })
          const settlement = yield* processToSettlement(other, "lane")
          const tags = yield* tagsOf(other, receipt.submissionId)
          yield* stall.release
          const exit = yield* Fiber.await(stale)
          expect(Exit.isFailure(exit) && Exit.findErrorOption(exit)).toMatchObject(
            Option.some({ _tag: "OwnershipLost" }),
          )
          expect(yield* tagsOf(other, receipt.submissionId)).toEqual(tags)
          expect((yield* rowOf(other, receipt.submissionId)).settlement).toEqual(settlement)
          expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
        }),
      ),
    )

    it.effect("a replaced incarnation leaves the live Claim of the one that replaced it alone", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const stall = yield* pauseAt("step:after-step-append", 1)
          // Built first: the older incarnation, still running after the newer one started.
          const replaced = yield* world.incarnation({ agents: [threeSteps(runs)] })
          const current = yield* world.incarnation({ agents: [threeSteps(runs)], failpoint: stall.handler })
          const receipt = yield* submitTo(current, "lane", "three-steps", "k", { n: 1 })
          const attempt = yield* Effect.forkChild(processHead(current, "lane"))
          yield* stall.reached
          const held = yield* rowOf(current, receipt.submissionId)
          expect(yield* processHead(replaced, "lane")).toEqual(Option.none())
          expect(yield* rowOf(replaced, receipt.submissionId)).toEqual(held)
          yield* stall.release
          const settled = yield* Fiber.join(attempt)
          expect(Option.map(settled, (settlement) => settlement.output)).toEqual(Option.some(9))
          expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
        }),
      ),
    )

    it.effect("an admin retry revokes a running Claim and the next Attempt reclaims", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const gate = yield* Deferred.make<void>()
          const incarnation = yield* world.incarnation({ agents: [gated(runs, gate)] })
          const runtime = runtimeOf(incarnation)
          const receipt = yield* submitTo(incarnation, "lane", "gated", "k", { n: 1 })
          const notRunning = yield* Effect.flip(runtime.retry(receipt.submissionId))
          expect(notRunning).toMatchObject({ _tag: "NotPending", expected: "retryable" })
          const revoked = yield* Effect.forkChild(processHead(incarnation, "lane"))
          yield* TestClock.adjust(100)
          const running = yield* rowOf(incarnation, receipt.submissionId)
          yield* runtime.retry(receipt.submissionId)
          const after = yield* rowOf(incarnation, receipt.submissionId)
          expect(after.state).toBe("ready")
          expect(after.producerEpoch).toBe(running.producerEpoch + 1)
          yield* TestClock.adjust(500)
          expect(Exit.findErrorOption(yield* Fiber.await(revoked))).toMatchObject(
            Option.some({ _tag: "OwnershipLost" }),
          )
          yield* Deferred.succeed(gate, undefined)
          expect((yield* processToSettlement(incarnation, "lane")).output).toBe(2)
          expect(yield* runsOf(runs)).toEqual({ wait: 2, finish: 1 })
        }),
      ),
    )

    it.effect("an interrupted Attempt leaves the row ready, not held by a lease", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const gate = yield* Deferred.make<void>()
          const incarnation = yield* world.incarnation({ agents: [gated(runs, gate)] })
          const receipt = yield* submitTo(incarnation, "lane", "gated", "k", { n: 1 })
          const attempt = yield* Effect.forkChild(processHead(incarnation, "lane"))
          yield* TestClock.adjust(100)
          yield* Fiber.interrupt(attempt)
          const row = yield* rowOf(incarnation, receipt.submissionId)
          expect(row.state).toBe("ready")
          expect(row.ownership).toBeUndefined()
          yield* Deferred.succeed(gate, undefined)
          expect((yield* processToSettlement(incarnation, "lane")).output).toBe(2)
        }),
      ),
    )

    it.effect("settles failed when the program dies", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const dies = define({
            id: "dies",
            version: "1",
            input: Schema.Struct({}),
            output: Schema.Null,
            program: (_input, ctx) =>
              Effect.andThen(
                ctx.step("before", Effect.as(ran(runs, "before"), 1)),
                Effect.die(new Error("boom")),
              ),
          })
          const incarnation = yield* world.incarnation({ agents: [dies] })
          yield* submitTo(incarnation, "lane", "dies", "k", {})
          const settlement = yield* processToSettlement(incarnation, "lane")
          expect(settlement.outcome).toBe("failed")
          expect(settlement.error).toContain("boom")
        }),
      ),
    )
  })
}
