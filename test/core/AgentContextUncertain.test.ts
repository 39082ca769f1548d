import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Ref } from "effect"
import { TestClock } from "effect/testing"
import type { ThreadId } from "../../src/core/Identifiers.ts"
import { charging, echo, makeRuns, runsOf } from "./runtimeAgents.ts"
import {
  entriesOf,
  processHead,
  processToSettlement,
  recover,
  rowOf,
  submitTo,
  tagsOf,
} from "./runtimeFixtures.ts"
import { runtimeHarnesses, runtimeOf, type RuntimeWorld } from "./runtimeHarness.ts"
import { freezeAt } from "../support/switchboard.ts"

/** A charge killed after its start was journaled, a follower queued behind it, and a fresh incarnation. */
const killedCharge = (world: RuntimeWorld) =>
  Effect.gen(function* () {
    const runs = yield* makeRuns
    const crash = yield* freezeAt("uncertain:after-start-append")
    const first = yield* world.incarnation({ agents: [charging(runs), echo], failpoint: crash.handler })
    const head = yield* submitTo(first, "lane", "charging", "charge", { n: 5 })
    const follower = yield* submitTo(first, "lane", "echo", "echo", { text: "after the charge" })
    yield* Effect.forkDetach(processHead(first, "lane"))
    yield* crash.reached
    yield* TestClock.adjust(30_001)
    const wakes = yield* Ref.make<ReadonlyArray<ThreadId>>([])
    const second = yield* world.incarnation({ agents: [charging(runs), echo], wakes })
    return { runs, head, follower, second, wakes }
  })

for (const harness of runtimeHarnesses) {
  describe(`AgentContext uncertain steps (${harness.label})`, () => {
    it.effect("records an Unknown Outcome after a crash and blocks the lane until it is resolved", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, follower, second, wakes } = yield* killedCharge(world)
          const runtime = runtimeOf(second)
          expect(yield* recover(second)).toEqual({
            [head.submissionId]: ["MarkUnknown", "unknown"],
            [follower.submissionId]: ["ApplyInput", "deferred"],
          })
          expect((yield* rowOf(second, head.submissionId)).state).toBe("unknown")
          expect(yield* tagsOf(second, head.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "StepCompleted",
            "UncertainStepStarted",
            "UnknownOutcomeRecorded",
          ])
          // The lane waits: neither the head nor the follower is claimable.
          expect(yield* processHead(second, "lane")).toEqual(Option.none())
          expect((yield* rowOf(second, follower.submissionId)).state).toBe("ready")
          expect(yield* recover(second)).toEqual({
            [head.submissionId]: ["AwaitUnknownResolution", "unknown"],
            [follower.submissionId]: ["ApplyInput", "deferred"],
          })
          expect(
            (yield* Effect.flip(runtime.resolveApproval(head.submissionId, { approved: true })))._tag,
          ).toBe("NotPending")

          yield* runtime.resolveUnknown(head.submissionId, { _tag: "Succeeded", value: "charged-by-hand" })
          expect(yield* Ref.get(wakes)).toEqual([head.threadId])
          const pending = yield* Effect.flip(
            runtime.resolveUnknown(head.submissionId, { _tag: "Succeeded", value: "again" }),
          )
          expect(pending._tag).toBe("NotPending")
          const settlement = yield* processToSettlement(second, "lane")
          expect(settlement.output).toEqual({ receipt: "charged-by-hand", note: "done" })
          // The external effect never ran: its outcome came from the resolution.
          expect(yield* runsOf(runs)).toEqual({ prepare: 1, after: 1 })
          expect((yield* processToSettlement(second, "lane")).output).toBe("after the charge")
        }),
      ),
    )

    it.effect("resolves only the uncertain step a resolution names", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { head, second } = yield* killedCharge(world)
          yield* recover(second)
          // The charge is call 1: a resolution meant for another step is refused, writing nothing.
          const refused = yield* Effect.flip(
            runtimeOf(second).resolveUnknown(
              head.submissionId,
              { _tag: "Succeeded", value: "x" },
              { step: 3 },
            ),
          )
          expect(refused).toMatchObject({ _tag: "NotPending", expected: "unknown-outcome" })
          expect(refused.message).toContain("call 1, not at call 3")
          expect((yield* rowOf(second, head.submissionId)).state).toBe("unknown")
          yield* runtimeOf(second).resolveUnknown(
            head.submissionId,
            { _tag: "Succeeded", value: "charged-by-hand" },
            { step: 1 },
          )
          expect((yield* processToSettlement(second, "lane")).output).toEqual({
            receipt: "charged-by-hand",
            note: "done",
          })
        }),
      ),
    )

    it.effect("opens the outcome again when a resolution's value is not a result of the step", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, second } = yield* killedCharge(world)
          yield* recover(second)
          // The charge's result is a string: 42 cannot be it, and no later deployment makes it one.
          yield* runtimeOf(second).resolveUnknown(head.submissionId, { _tag: "Succeeded", value: 42 })
          expect(yield* processHead(second, "lane")).toEqual(Option.none())
          expect((yield* rowOf(second, head.submissionId)).state).toBe("unknown")
          expect((yield* tagsOf(second, head.submissionId)).slice(-3)).toEqual([
            "UnknownOutcomeRecorded",
            "UnknownOutcomeResolved",
            "UnknownOutcomeRecorded",
          ])
          // The lane is not wedged: the operator resolves it again, and it settles once.
          yield* runtimeOf(second).resolveUnknown(head.submissionId, {
            _tag: "Succeeded",
            value: "charged-by-hand",
          })
          expect((yield* processToSettlement(second, "lane")).output).toEqual({
            receipt: "charged-by-hand",
            note: "done",
          })
          expect((yield* runsOf(runs)).charge).toBeUndefined()
        }),
      ),
    )

    it.effect("a Failed resolution fails the step with an AgentFailure the program can catch", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, second } = yield* killedCharge(world)
          yield* recover(second)
          yield* runtimeOf(second).resolveUnknown(head.submissionId, {
            _tag: "Failed",
            message: "card declined",
          })
          expect(yield* recover(second)).toMatchObject({
            [head.submissionId]: ["ResumeFromTurnBoundary", "deferred"],
          })
          const settlement = yield* processToSettlement(second, "lane")
          expect(settlement.output).toEqual({ receipt: "refused: card declined", note: "done" })
          expect((yield* runsOf(runs)).charge).toBeUndefined()
        }),
      ),
    )

    it.effect("an Attempt that claims an expired uncertain step parks it unknown without running it", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, second } = yield* killedCharge(world)
          expect(yield* processHead(second, "lane")).toEqual(Option.none())
          expect((yield* rowOf(second, head.submissionId)).state).toBe("unknown")
          const entries = yield* entriesOf(second, head.submissionId)
          expect(entries.at(-1)).toEqual({ _tag: "UnknownOutcomeRecorded", step: 1, name: "charge" })
          expect(yield* recover(second)).toMatchObject({
            [head.submissionId]: ["AwaitUnknownResolution", "unknown"],
          })
          expect((yield* runsOf(runs)).charge).toBeUndefined()
        }),
      ),
    )

    it.effect("replays a finished uncertain step from its recorded result", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const crash = yield* freezeAt("step:after-step-append", 2)
          const first = yield* world.incarnation({ agents: [charging(runs)], failpoint: crash.handler })
          const receipt = yield* submitTo(first, "lane", "charging", "charge", { n: 7 })
          yield* Effect.forkDetach(processHead(first, "lane"))
          yield* crash.reached
          yield* TestClock.adjust(30_001)
          const second = yield* world.incarnation({ agents: [charging(runs)] })
          const settlement = yield* processToSettlement(second, "lane")
          expect(settlement.output).toEqual({ receipt: "charged-7", note: "done" })
          expect(yield* runsOf(runs)).toEqual({ prepare: 1, charge: 1, after: 1 })
          expect(yield* tagsOf(second, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "StepCompleted",
            "UncertainStepStarted",
            "StepCompleted",
            "StepCompleted",
            "SubmissionSettled",
          ])
        }),
      ),
    )
  })
}
