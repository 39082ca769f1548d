import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { gated, makeRuns, reviewed, runsOf, threeSteps } from "./runtimeAgents.ts"
import { processHead, processToSettlement, recover, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { historyOf, ledgerOf, runtimeHarnesses, runtimeOf } from "./runtimeHarness.ts"
import { freezeAt } from "../support/switchboard.ts"
import { Settlement } from "../../src/core/SubmissionLedger.ts"
import { unowned } from "./SubmissionLedgerFixtures.ts"

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

    it.effect("settles an accepted abort in one write: a kill before it leaves it to recovery", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const crash = yield* freezeAt("ledger:settle:before")
          const dying = yield* world.incarnation({ agents: [threeSteps(runs)], failpoint: crash.handler })
          const receipt = yield* submitTo(dying, "lane", "three-steps", "k", { n: 1 })
          yield* runtimeOf(dying).abort(receipt.submissionId)
          yield* Effect.forkDetach(runtimeOf(dying).runRecovery)
          yield* crash.reached
          const fresh = yield* world.incarnation({ agents: [threeSteps(runs)] })
          expect((yield* rowOf(fresh, receipt.submissionId)).state).toBe("ready")
          expect(yield* tagsOf(fresh, receipt.submissionId)).toEqual(["SubmissionAccepted"])
          expect(yield* recover(fresh)).toEqual({ [receipt.submissionId]: ["SettleAborted", "repaired"] })
          expect((yield* rowOf(fresh, receipt.submissionId)).state).toBe("settled")
          expect(yield* tagsOf(fresh, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "AbortRequested",
            "SubmissionSettled",
          ])
          expect(yield* processHead(fresh, "lane")).toEqual(Option.none())
        }),
      ),
    )

    it.effect("finishes a settlement an older release left reserved, from either side", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [threeSteps(runs)] })
          const ledger = ledgerOf(incarnation)
          const history = historyOf(incarnation)
          // Before settlement was one write, a settlement was reserved, recorded, then finalized.
          const reserve = (key: string, recorded: boolean) =>
            Effect.gen(function* () {
              const receipt = yield* submitTo(incarnation, key, "three-steps", key, { n: 1 })
              const row = yield* rowOf(incarnation, receipt.submissionId)
              const fence = unowned(row, 1)
              const settlement = new Settlement({
                submissionId: row.submissionId,
                threadId: row.threadId,
                outcome: "aborted",
                settledAt: 1,
              })
              const reserved = yield* ledger.reserveSettlement(fence, settlement)
              if (recorded) {
                yield* history.append(
                  row.submissionId,
                  { _tag: "SubmissionSettled", outcome: "aborted" },
                  unowned(reserved, 1),
                  1,
                )
              }
              return receipt.submissionId
            })
          const unrecorded = yield* reserve("unrecorded", false)
          const recorded = yield* reserve("recorded", true)
          expect(yield* recover(incarnation)).toEqual({
            [unrecorded]: ["AppendReservedSettlement", "repaired"],
            [recorded]: ["FinalizeLedgerFromHistory", "repaired"],
          })
          for (const submissionId of [unrecorded, recorded]) {
            expect((yield* rowOf(incarnation, submissionId)).state).toBe("settled")
            expect(settledCount(yield* tagsOf(incarnation, submissionId))).toBe(1)
          }
          expect(yield* recover(incarnation)).toEqual({})
        }),
      ),
    )
  })
}
