/**
 * A kill at every runtime failpoint, one at a time: the same journey (steps, a cooperative
 * yield, a lease renewal, an uncertain step, a reconciled uncertain step whose first run is cut,
 * an approval, and an aborted Submission in another lane) is driven to the end through fresh
 * incarnations, and each Submission settles exactly once.
 */
import { expect } from "@effect/vitest"
import { Clock, DateTime, Effect, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Reconcile } from "../../src/core/AgentContext.ts"
import { define } from "../../src/core/AgentRegistration.ts"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { RUNTIME_FAILPOINT_LOCATIONS } from "../../src/core/RuntimeFailpoint.ts"
import {
  childOrJoin,
  type CrashingOps,
  crashMatrix,
  ignoreNotPending,
  untilDone,
} from "../support/crashMatrix.ts"
import { echo, ran, runsOf, type Runs } from "./runtimeAgents.ts"
import { rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { ledgerOf, runtimeOf } from "./runtimeHarness.ts"

const journey = (runs: Runs) =>
  define({
    id: "journey",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.String,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        // Each plain step takes 5 ms of virtual time: the second boundary renews, the third yields.
        const a = yield* ctx.step("a", Effect.as(Effect.andThen(ran(runs, "a"), TestClock.adjust(5)), n))
        const b = yield* ctx.step("b", Effect.as(Effect.andThen(ran(runs, "b"), TestClock.adjust(5)), a + 1))
        const u = yield* ctx.uncertainStep("u", Effect.as(ran(runs, "u"), `u${b}`), { result: Schema.String })
        // Its first run is cut before the effect (the Attempt ends mid-step): the next Attempt
        // asks its reconcile, which answers from whether the effect really ran.
        yield* ctx.uncertainStep(
          "v",
          Effect.flatMap(runsOf(runs), (counts) =>
            counts["v-cut"] === undefined
              ? Effect.andThen(ran(runs, "v-cut"), Effect.interrupt)
              : Effect.as(ran(runs, "v"), "v"),
          ),
          {
            result: Schema.String,
            reconcile: Effect.andThen(
              ran(runs, "reconcile"),
              Effect.map(runsOf(runs), (counts) =>
                counts["v"] === undefined ? Reconcile.notHappened : Reconcile.happened("v"),
              ),
            ),
          },
        )
        const decision = yield* ctx.requestApproval({ u })
        return yield* ctx.step("c", Effect.as(ran(runs, "c"), `${u}-${decision.approved}`))
      }),
  })

const drive = (ops: CrashingOps) =>
  Effect.gen(function* () {
    const { op } = ops

    const submit = (lane: string, agent: string, input: unknown) =>
      untilDone(op, (incarnation) => submitTo(incarnation, lane, agent, lane, input))
    const a = yield* submit("a", "journey", { n: 1 })
    const b = yield* submit("b", "echo", { text: "never" })
    yield* untilDone(op, (incarnation) => runtimeOf(incarnation).abort(b.submissionId))

    for (let round = 0; round < 12; round++) {
      yield* op((incarnation) => runtimeOf(incarnation).runRecovery)
      const rowA = yield* rowOf(ops.current, a.submissionId)
      const rowB = yield* rowOf(ops.current, b.submissionId)
      if (rowA.state === "settled" && rowB.state === "settled") break
      if (rowA.state === "suspended") {
        yield* op((incarnation) =>
          ignoreNotPending(runtimeOf(incarnation).resolveApproval(a.submissionId, { approved: true })),
        )
      } else if (rowA.state === "unknown") {
        yield* op((incarnation) =>
          ignoreNotPending(
            runtimeOf(incarnation).resolveUnknown(a.submissionId, { _tag: "Succeeded", value: "resolved" }),
          ),
        )
      } else {
        const now = yield* Clock.currentTimeMillis
        yield* op((incarnation) =>
          runtimeOf(incarnation).processThreadHead(ThreadId.make("a"), {
            yieldAfter: DateTime.makeUnsafe(now + 7),
          }),
        )
      }
      yield* op((incarnation) =>
        runtimeOf(incarnation).processThreadHead(ThreadId.make("b"), {
          yieldAfter: DateTime.makeUnsafe(Number.MAX_SAFE_INTEGER / 2048),
        }),
      )
    }

    const current = ops.current
    const settledA = yield* rowOf(current, a.submissionId)
    const settledB = yield* rowOf(current, b.submissionId)
    return {
      a: settledA,
      b: settledB,
      tagsA: yield* tagsOf(current, a.submissionId),
      tagsB: yield* tagsOf(current, b.submissionId),
      remaining: yield* Stream.runCollect(ledgerOf(current).scanNonterminal),
    }
  })

const once = (tags: ReadonlyArray<string>) => tags.filter((tag) => tag === "SubmissionSettled").length

crashMatrix({
  name: "DurableAgentRuntime crash matrix",
  incarnation: (runs) => ({ agents: [journey(runs), echo], config: { leaseRenewalInterval: 1 } }),
  drive,
  coverage: {
    test: "hits every failpoint location on the journey",
    check: (hits, result) => {
      // Subagents and joins have a journey of their own (DurableAgentRuntimeChildrenCrashMatrix),
      // and so has retention (RetentionCrashMatrix).
      expect(new Set(hits)).toEqual(
        new Set(RUNTIME_FAILPOINT_LOCATIONS.filter((at) => !childOrJoin(at) && !at.startsWith("retention:"))),
      )
      expect(result.a.settlement).toMatchObject({ outcome: "completed", output: "u2-true" })
      expect(result.b.settlement?.outcome).toBe("aborted")
      expect(result.runs).toEqual({ a: 1, b: 1, u: 1, "v-cut": 1, reconcile: 1, v: 1, c: 1 })
      expect(result.tagsA).toContain("ReconcileAnswered")
      expect(result.tagsA).toContain("ApprovalResolved")
    },
  },
  check: (result, label) => {
    expect(result.a.settlement?.outcome, label).toBe("completed")
    expect(result.b.settlement?.outcome, label).toBe("aborted")
    expect([once(result.tagsA), once(result.tagsB)], label).toEqual([1, 1])
    expect(result.remaining, label).toEqual([])
    // The uncertain effect never runs twice; plain steps run at least once.
    expect(result.runs.u ?? 0, label).toBeLessThanOrEqual(1)
    expect(result.runs.v ?? 0, label).toBeLessThanOrEqual(1)
    expect(result.runs.c ?? 0, label).toBeGreaterThanOrEqual(1)
  },
  timeout: 60_000,
})
