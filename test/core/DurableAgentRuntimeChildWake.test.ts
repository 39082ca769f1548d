/**
 * What no recovery scan repairs, because none reads parked waits: a child's settlement and its
 * waiting parent's resumption commit together; a parent that parks on a child whose settlement
 * landed while it ran is left ready by the park itself; a join its host left behind is a
 * recovery candidate. Recovery runs with the narrow worklist a pass uses.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Stream } from "effect"
import { RecoveryWorklist } from "../../src/core/DurableAgentRuntime.ts"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { conversation, deliverLocally, doubler, parentOf, self } from "./childrenFixtures.ts"
import { makeRuns, runsOf } from "./runtimeAgents.ts"
import { entriesOf, processHead, rowOf, submitTo } from "./runtimeFixtures.ts"
import { type Incarnation, ledgerOf, outboxOf, runtimeHarnesses, runtimeOf } from "./runtimeHarness.ts"
import { runtimeSwitchboard } from "../support/switchboard.ts"

/** The recovery a pass runs: candidates only. */
const passRecovery = (incarnation: Incarnation) =>
  Effect.map(
    runtimeOf(incarnation).runRecovery.pipe(Effect.provideService(RecoveryWorklist, "candidates")),
    (reports) => reports.map((report) => [report.submissionId, report.decision._tag]),
  )

const candidates = (incarnation: Incarnation) =>
  Effect.map(Stream.runCollect(ledgerOf(incarnation).scanRecoveryCandidates), (rows) =>
    rows.map((row) => row.submissionId),
  )

const laneHeads = (incarnation: Incarnation) =>
  Effect.map(ledgerOf(incarnation).laneHeads, (heads) => heads.map((head) => head.threadId))

const childSettledCount = (incarnation: Incarnation, submissionId: Parameters<typeof rowOf>[1]) =>
  Effect.map(
    entriesOf(incarnation, submissionId),
    (entries) => entries.filter((entry) => entry._tag === "ChildSettled").length,
  )

for (const harness of runtimeHarnesses) {
  describe(`DurableAgentRuntime child wake-up without a recovery scan (${harness.label})`, () => {
    it.effect("resumes a parked parent in the write that records its child's settlement", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const child = doubler(runs)
          const agents = [parentOf("parent", child, "kids"), child]
          const board = yield* runtimeSwitchboard()
          const killed = yield* board.freeze("child:after-settled-append")
          const first = yield* world.incarnation({ agents, self, failpoint: board.handler })
          const parent = yield* submitTo(first, "p", "parent", "p1", { n: 21 })
          yield* processHead(first, "p")
          expect(yield* deliverLocally(first)).toBe(1)
          yield* processHead(first, "kids")
          expect((yield* rowOf(first, parent.submissionId)).state).toBe("suspended")
          // The marker's delivery dies right after the parent's write: no later write of it runs.
          yield* Effect.forkDetach(deliverLocally(first))
          yield* killed

          const second = yield* world.incarnation({ agents, self })
          expect((yield* rowOf(second, parent.submissionId)).state).toBe("ready")
          expect(yield* candidates(second)).toEqual([])
          expect(yield* passRecovery(second)).toEqual([])
          expect(yield* laneHeads(second)).toEqual(["p"])
          const settled = yield* processHead(second, "p")
          expect(Option.getOrThrow(settled).output).toBe("child said 42")
          // The unacknowledged marker is sent again; the parent applies it once.
          expect(yield* deliverLocally(second)).toBe(1)
          expect(yield* childSettledCount(second, parent.submissionId)).toBe(1)
          expect(yield* outboxOf(second).nextDue).toEqual(Option.none())
          expect(yield* runsOf(runs)).toEqual({ "double-21": 1 })
        }),
      ),
    )

    it.effect("leaves ready a parent that parks on a child whose settlement landed while it ran", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const child = doubler(runs)
          const board = yield* runtimeSwitchboard()
          // The parent journals its wait, then stops short of parking while the child finishes.
          const held = yield* board.pause("child:after-await-append")
          const inc = yield* world.incarnation({
            agents: [parentOf("parent", child, "kids"), child],
            self,
            failpoint: board.handler,
          })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 5 })
          const attempt = yield* Effect.forkChild(processHead(inc, "p"))
          yield* held.reached
          expect(yield* deliverLocally(inc)).toBe(1)
          yield* processHead(inc, "kids")
          // The settlement reaches a running parent: recorded, with nothing to resume yet.
          expect(yield* deliverLocally(inc)).toBe(1)
          expect((yield* rowOf(inc, parent.submissionId)).state).toBe("running")
          yield* held.release
          expect(yield* Fiber.join(attempt)).toEqual(Option.none())
          // The park saw the settlement in its own transaction: the parent is ready, not parked.
          const row = yield* rowOf(inc, parent.submissionId)
          expect([row.state, row.ownership]).toEqual(["ready", undefined])
          expect(yield* candidates(inc)).toEqual([])
          expect(yield* laneHeads(inc)).toEqual(["p"])
          const settled = yield* processHead(inc, "p")
          expect(Option.getOrThrow(settled).output).toBe("child said 10")
          expect(yield* childSettledCount(inc, parent.submissionId)).toBe(1)
        }),
      ),
    )

    it.effect("finds through recovery candidates a join whose host settled without finishing it", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const inc = yield* world.incarnation({ agents: [conversation(runs)] })
          const host = yield* submitTo(inc, "c", "conversation", "h", { n: 1 })
          yield* processHead(inc, "c")
          const join = yield* runtimeOf(inc).submit({
            threadId: ThreadId.make("c"),
            agentId: "conversation" as never,
            idempotencyKey: "j" as never,
            input: { n: 5 },
            mode: "join",
          })
          expect(join.host).toBe(host.submissionId)
          expect((yield* rowOf(inc, join.submissionId)).state).toBe("joining")
          // A denial settles the host in its own write; the join it never read is left behind.
          yield* runtimeOf(inc).resolveApproval(host.submissionId, { approved: false })
          expect((yield* rowOf(inc, host.submissionId)).state).toBe("settled")
          expect(yield* candidates(inc)).toEqual([join.submissionId])
          expect(yield* passRecovery(inc)).toEqual([[join.submissionId, "RevertJoining"]])
          const row = yield* rowOf(inc, join.submissionId)
          expect([row.state, row.host]).toEqual(["ready", undefined])
          // It runs as an ordinary Submission of its own: it asks its own approval.
          yield* processHead(inc, "c")
          yield* runtimeOf(inc).resolveApproval(join.submissionId, { approved: true })
          const settled = yield* processHead(inc, "c")
          expect(Option.getOrThrow(settled)).toMatchObject({ outcome: "completed", output: 5 })
          expect(Option.getOrThrow(settled).host).toBeUndefined()
        }),
      ),
    )
  })
}
