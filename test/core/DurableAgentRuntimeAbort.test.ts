import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { gated, makeRuns, reviewed, runsOf, threeSteps } from "./runtimeAgents.ts"
import { processHead, processToSettlement, recover, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { runtimeHarnesses, runtimeOf } from "./runtimeHarness.ts"
import { freezeAt } from "../support/switchboard.ts"

const settledCount = (tags: ReadonlyArray<string>) => tags.filter((tag) => tag === "SubmissionSettled").length

for (const harness of runtimeHarnesses) {
  describe(`DurableAgentRuntime abort (${harness.label})`, () => {
    it.effect("stops a running head within a poll interval and settles it aborted once", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const gate = yield* Deferred.make<void>()
          const incarnation = yield* world.incarnation({ agents: [gated(runs, gate)] })
          const runtime = runtimeOf(incarnation)
          const receipt = yield* submitTo(incarnation, "lane", "gated", "k", { n: 1 })
          const attempt = yield* Effect.forkChild(processHead(incarnation, "lane"))
          yield* TestClock.adjust(100)
          expect(yield* runsOf(runs)).toEqual({ wait: 1 })
          yield* runtime.abort(receipt.submissionId)
          // A live owner finishes the abort itself: recovery leaves it alone.
          expect(yield* recover(incarnation)).toEqual({ [receipt.submissionId]: ["NoAction", "none"] })
          yield* TestClock.adjust(500)
          const settlement = Option.getOrThrow(yield* Fiber.join(attempt))
          expect(settlement.outcome).toBe("aborted")
          expect(yield* runsOf(runs)).toEqual({ wait: 1 })
          yield* runtime.abort(receipt.submissionId)
          const tags = yield* tagsOf(incarnation, receipt.submissionId)
          expect(tags.slice(-2)).toEqual(["AbortRequested", "SubmissionSettled"])
          expect(settledCount(tags)).toBe(1)
          expect(yield* runtime.awaitSettlement(receipt.submissionId)).toEqual(settlement)
        }),
      ),
    )

    it.effect("settles an aborted ready head at claim time without running its program", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [threeSteps(runs)] })
          const receipt = yield* submitTo(incarnation, "lane", "three-steps", "k", { n: 1 })
          yield* runtimeOf(incarnation).abort(receipt.submissionId)
          const settlement = yield* processToSettlement(incarnation, "lane")
          expect(settlement.outcome).toBe("aborted")
          expect(yield* runsOf(runs)).toEqual({})
          expect(yield* tagsOf(incarnation, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "AbortRequested",
            "SubmissionSettled",
          ])
        }),
      ),
    )

    it.effect("settles an aborted follower through recovery without waiting for the head", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [reviewed(runs), threeSteps(runs)] })
          const head = yield* submitTo(incarnation, "lane", "reviewed", "head", { n: 1 })
          const follower = yield* submitTo(incarnation, "lane", "three-steps", "follower", { n: 1 })
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          yield* runtimeOf(incarnation).abort(follower.submissionId)
          expect(yield* recover(incarnation)).toEqual({
            [head.submissionId]: ["AwaitApprovalDecision", "none"],
            [follower.submissionId]: ["SettleAborted", "repaired"],
          })
          const settlement = yield* runtimeOf(incarnation).awaitSettlement(follower.submissionId)
          expect(settlement.outcome).toBe("aborted")
          expect(settledCount(yield* tagsOf(incarnation, follower.submissionId))).toBe(1)
          expect(yield* recover(incarnation)).toEqual({
            [head.submissionId]: ["AwaitApprovalDecision", "none"],
          })
          expect((yield* rowOf(incarnation, head.submissionId)).state).toBe("suspended")
          expect((yield* runsOf(runs)).one).toBeUndefined()
        }),
      ),
    )

    it.effect("settles an aborted suspended head through recovery", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [reviewed(runs)] })
          const head = yield* submitTo(incarnation, "lane", "reviewed", "head", { n: 1 })
          yield* processHead(incarnation, "lane")
          yield* runtimeOf(incarnation).abort(head.submissionId)
          expect(yield* recover(incarnation)).toEqual({ [head.submissionId]: ["SettleAborted", "repaired"] })
          expect((yield* rowOf(incarnation, head.submissionId)).settlement?.outcome).toBe("aborted")
          const late = yield* Effect.flip(
            runtimeOf(incarnation).resolveApproval(head.submissionId, { approved: true }),
          )
          expect(late._tag).toBe("NotPending")
        }),
      ),
    )

    it.effect("recovery finalizes an aborted settlement already in the history", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const crash = yield* freezeAt("terminalize:after-canonical-append")
          const dying = yield* world.incarnation({ agents: [threeSteps(runs)], failpoint: crash.handler })
          const receipt = yield* submitTo(dying, "lane", "three-steps", "k", { n: 1 })
          yield* runtimeOf(dying).abort(receipt.submissionId)
          yield* Effect.forkDetach(runtimeOf(dying).runRecovery)
          yield* crash.reached
          const fresh = yield* world.incarnation({ agents: [threeSteps(runs)] })
          expect(yield* recover(fresh)).toEqual({
            [receipt.submissionId]: ["FinalizeLedgerFromHistory", "repaired"],
          })
          expect((yield* rowOf(fresh, receipt.submissionId)).state).toBe("settled")
          expect(settledCount(yield* tagsOf(fresh, receipt.submissionId))).toBe(1)
          expect(yield* processHead(fresh, "lane")).toEqual(Option.none())
        }),
      ),
    )
  })
}
