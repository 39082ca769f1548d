import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, Ref, Schema } from "effect"
import { define } from "../../src/core/AgentRegistration.ts"
import { TestClock } from "effect/testing"
import type { ThreadId } from "../../src/core/Identifiers.ts"
import { makeRuns, reviewed, runsOf } from "./runtimeAgents.ts"
import {
  processDue,
  processHead,
  processToSettlement,
  recover,
  rowOf,
  submitTo,
  tagsOf,
} from "./runtimeFixtures.ts"
import { runtimeHarnesses, runtimeOf, type RuntimeWorld } from "./runtimeHarness.ts"
import { freezeAt } from "../support/switchboard.ts"

/** A review suspended on its approval request. */
const suspendedReview = (world: RuntimeWorld) =>
  Effect.gen(function* () {
    const runs = yield* makeRuns
    const wakes = yield* Ref.make<ReadonlyArray<ThreadId>>([])
    const incarnation = yield* world.incarnation({ agents: [reviewed(runs)], wakes })
    const receipt = yield* submitTo(incarnation, "lane", "reviewed", "k", { n: 1 })
    expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
    yield* Ref.set(wakes, [])
    return { runs, wakes, incarnation, receipt }
  })

/** Asks for approval with a one-second timeout; when it times out, asks again without one. */
const reminded = define({
  id: "reminded",
  version: "1",
  input: Schema.Struct({}),
  output: Schema.String,
  program: (_, ctx) =>
    ctx.requestApproval({ first: true }, { timeoutMillis: 1_000 }).pipe(
      Effect.map((decision) => `${decision.approved}`),
      Effect.catchTag("ApprovalTimeout", (timeout) =>
        Effect.map(
          ctx.requestApproval({ again: true }),
          (decision) => `timed out at step ${timeout.step}, then ${decision.approved}`,
        ),
      ),
    ),
})

for (const harness of runtimeHarnesses) {
  describe(`AgentContext approvals (${harness.label})`, () => {
    it.effect("suspends with no work owed and resumes after an approval", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, wakes, incarnation, receipt } = yield* suspendedReview(world)
          const runtime = runtimeOf(incarnation)
          const row = yield* rowOf(incarnation, receipt.submissionId)
          expect(row.state).toBe("suspended")
          expect(row.ownership).toBeUndefined()
          expect(yield* tagsOf(incarnation, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "StepCompleted",
            "ApprovalRequested",
          ])
          expect(yield* recover(incarnation)).toEqual({
            [receipt.submissionId]: ["AwaitApprovalDecision", "none"],
          })
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const wrongWait = yield* Effect.flip(
            runtime.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: null }),
          )
          expect(wrongWait._tag).toBe("NotPending")

          yield* runtime.resolveApproval(receipt.submissionId, { approved: true, note: "ship it" })
          expect(yield* Ref.get(wakes)).toEqual([receipt.threadId])
          expect((yield* rowOf(incarnation, receipt.submissionId)).state).toBe("ready")
          const settlement = yield* processToSettlement(incarnation, "lane")
          expect(settlement.outcome).toBe("completed")
          expect(settlement.output).toBe("draft-1 published (ship it)")
          expect(yield* runsOf(runs)).toEqual({ draft: 1, publish: 1 })
        }),
      ),
    )

    it.effect("a denial settles the Submission failed at once", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, wakes, incarnation, receipt } = yield* suspendedReview(world)
          const runtime = runtimeOf(incarnation)
          yield* runtime.resolveApproval(receipt.submissionId, { approved: false, note: "too long" })
          expect(yield* Ref.get(wakes)).toEqual([receipt.threadId])
          const settlement = yield* runtime.awaitSettlement(receipt.submissionId, { timeoutMillis: 0 })
          expect(settlement.outcome).toBe("failed")
          expect(settlement.error).toBe("approval denied: too long")
          expect(yield* tagsOf(incarnation, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "StepCompleted",
            "ApprovalRequested",
            "ApprovalResolved",
            "SubmissionSettled",
          ])
          const again = yield* Effect.flip(runtime.resolveApproval(receipt.submissionId, { approved: true }))
          expect(again._tag).toBe("NotPending")
          expect(yield* runsOf(runs)).toEqual({ draft: 1 })
        }),
      ),
    )

    it.effect("records and applies a denial in one write: a kill leaves it pending or settled", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, incarnation, receipt } = yield* suspendedReview(world)
          for (const location of ["ledger:settle:before", "ledger:settle:after"] as const) {
            const crash = yield* freezeAt(location)
            const dying = yield* world.incarnation({ agents: [reviewed(runs)], failpoint: crash.handler })
            yield* Effect.forkDetach(
              runtimeOf(dying).resolveApproval(receipt.submissionId, { approved: false }),
            )
            yield* crash.reached
            const row = yield* rowOf(incarnation, receipt.submissionId)
            const tags = yield* tagsOf(incarnation, receipt.submissionId)
            if (location === "ledger:settle:before") {
              // Nothing was written: the approval is still pending, and nothing is owed.
              expect(row.state).toBe("suspended")
              expect(tags).not.toContain("ApprovalResolved")
              expect(yield* recover(incarnation)).toEqual({
                [receipt.submissionId]: ["AwaitApprovalDecision", "none"],
              })
            } else {
              expect(row.state).toBe("settled")
              expect(tags.slice(-2)).toEqual(["ApprovalResolved", "SubmissionSettled"])
              expect(yield* recover(incarnation)).toEqual({})
            }
          }
          const settlement = yield* runtimeOf(incarnation).awaitSettlement(receipt.submissionId, {
            timeoutMillis: 0,
          })
          expect(settlement.error).toBe("approval denied")
          const tags = yield* tagsOf(incarnation, receipt.submissionId)
          expect(tags.filter((tag) => tag === "ApprovalResolved")).toHaveLength(1)
          expect(tags.filter((tag) => tag === "SubmissionSettled")).toHaveLength(1)
        }),
      ),
    )

    it.effect("records an approval with the resumption: a kill after it leaves the row ready", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, receipt } = yield* suspendedReview(world)
          const crash = yield* freezeAt("resolve:after-intent")
          const dying = yield* world.incarnation({ agents: [reviewed(runs)], failpoint: crash.handler })
          yield* Effect.forkDetach(runtimeOf(dying).resolveApproval(receipt.submissionId, { approved: true }))
          yield* crash.reached
          const fresh = yield* world.incarnation({ agents: [reviewed(runs)] })
          expect((yield* rowOf(fresh, receipt.submissionId)).state).toBe("ready")
          expect(yield* recover(fresh)).toEqual({
            [receipt.submissionId]: ["ResumeFromTurnBoundary", "deferred"],
          })
          expect((yield* processToSettlement(fresh, "lane")).output).toBe("draft-1 published (no note)")
          expect(yield* runsOf(runs)).toEqual({ draft: 1, publish: 1 })
        }),
      ),
    )

    it.effect("an Attempt killed before parking suspends again without a second request", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const crash = yield* freezeAt("approval:after-request-append")
          const dying = yield* world.incarnation({ agents: [reviewed(runs)], failpoint: crash.handler })
          const receipt = yield* submitTo(dying, "lane", "reviewed", "k", { n: 2 })
          yield* Effect.forkDetach(processHead(dying, "lane"))
          yield* crash.reached
          yield* TestClock.adjust(30_001)
          const fresh = yield* world.incarnation({ agents: [reviewed(runs)] })
          expect(yield* recover(fresh)).toEqual({
            [receipt.submissionId]: ["ReleaseExpiredLease", "repaired"],
          })
          expect(yield* processHead(fresh, "lane")).toEqual(Option.none())
          expect((yield* rowOf(fresh, receipt.submissionId)).state).toBe("suspended")
          const tags = yield* tagsOf(fresh, receipt.submissionId)
          expect(tags.filter((tag) => tag === "ApprovalRequested")).toHaveLength(1)
          expect(yield* runsOf(runs)).toEqual({ draft: 1 })
        }),
      ),
    )

    it.effect("a request with a timeout closes undecided at its due time with a typed ApprovalTimeout", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents: [reminded] })
          const start = yield* Clock.currentTimeMillis
          const receipt = yield* submitTo(incarnation, "lane", "reminded", "k", {})
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const row = yield* rowOf(incarnation, receipt.submissionId)
          expect([row.state, row.dueAt, row.wait]).toEqual([
            "waiting",
            start + 1_000,
            { _tag: "Approval", step: 0, dueAt: start + 1_000, since: start },
          ])
          yield* TestClock.adjust(1_000)
          // The first request timed out; the second is the open one, and a decision resolves it.
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({
            _tag: "Parked",
            wait: "suspended",
          })
          expect(yield* tagsOf(incarnation, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "ApprovalRequested",
            "ApprovalTimedOut",
            "ApprovalRequested",
          ])
          yield* runtimeOf(incarnation).resolveApproval(receipt.submissionId, { approved: true })
          expect((yield* processToSettlement(incarnation, "lane")).output).toBe(
            "timed out at step 0, then true",
          )
        }),
      ),
    )

    it.effect("a decision before the due time wins; after the timeout is journaled it is refused", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents: [reminded] })
          const receipt = yield* submitTo(incarnation, "lane", "reminded", "k", {})
          yield* processHead(incarnation, "lane")
          yield* TestClock.adjust(2_000)
          // Overdue but not yet served: the decision still resumes it.
          yield* runtimeOf(incarnation).resolveApproval(receipt.submissionId, { approved: false, note: "no" })
          const settled = yield* rowOf(incarnation, receipt.submissionId)
          expect(settled.settlement).toMatchObject({ outcome: "failed", error: "approval denied: no" })
          expect(
            yield* Effect.flip(
              runtimeOf(incarnation).resolveApproval(receipt.submissionId, { approved: true }),
            ),
          ).toMatchObject({ _tag: "NotPending" })
        }),
      ),
    )
  })
}
