/**
 * A kill at every runtime failpoint, one at a time: the same journey (steps, a cooperative
 * yield, a lease renewal, a durable sleep, an event sent before its wait, one that wakes its
 * wait, a wait that times out, a step retried after a durable backoff, an uncertain step, a
 * reconciled uncertain step whose first run is cut, an approval that times out, an approval, and an aborted
 * Submission in another lane) is driven to the end through fresh incarnations, and each
 * Submission settles exactly once; the sleep never ends before its due time.
 */
import { expect } from "@effect/vitest"
import { Clock, DateTime, Effect, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Reconcile } from "../../src/core/AgentContext.ts"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { RUNTIME_FAILPOINT_LOCATIONS } from "../../src/core/RuntimeFailpoint.ts"
import {
  childOrJoin,
  type CrashingOps,
  crashMatrix,
  ignoreNotPending,
  scheduled,
  untilDone,
} from "../support/crashMatrix.ts"
import { echo, ran, runsOf, type Runs } from "./runtimeAgents.ts"
import { rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { historyOf, ledgerOf, runtimeOf } from "./runtimeHarness.ts"

const NAP_MILLIS = 100

const Early = AgentEvent.make("early", Schema.Struct({ n: Schema.Int }))
const Late = AgentEvent.make("late", Schema.Struct({ n: Schema.Int }))

const journey = (runs: Runs) =>
  define({
    id: "journey",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.String,
    events: [Early, Late],
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        // Each plain step takes 5 ms of virtual time: the second boundary renews, the third yields.
        const a = yield* ctx.step("a", Effect.as(Effect.andThen(ran(runs, "a"), TestClock.adjust(5)), n))
        const b = yield* ctx.step("b", Effect.as(Effect.andThen(ran(runs, "b"), TestClock.adjust(5)), a + 1))
        // A durable sleep: it fires once, at or after its due time.
        yield* ctx.sleep("nap", NAP_MILLIS)
        // Sent before the wait (kept and taken without parking), sent to the parked wait (it wakes
        // it), and never sent (the wait times out).
        const early = yield* ctx.waitForEvent(Early)
        const late = yield* ctx.waitForEvent(Late)
        const never = yield* ctx
          .waitForEvent(Late, { timeoutMillis: 30 })
          .pipe(Effect.catchTag("EventTimeout", () => Effect.succeed(undefined)))
        if (early.n !== 1 || late.n !== 2 || never !== undefined)
          return yield* new AgentFailure({ message: "events out of order" })
        // Fails its first run, then succeeds after a durable backoff.
        yield* ctx.step(
          "r",
          Effect.flatMap(ran(runs, "r"), () =>
            Effect.flatMap(runsOf(runs), (counts) =>
              counts["r"] === 1 ? Effect.fail(new AgentFailure({ message: "flaky" })) : Effect.succeed("r"),
            ),
          ),
          { retry: { attempts: 3, backoff: { baseMillis: 50, jitter: 0 } } },
        )
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
        // Nobody decides in time: the request closes, and the next one is decided.
        yield* ctx
          .requestApproval({ u, first: true }, { timeoutMillis: 40 })
          .pipe(Effect.catchTag("ApprovalTimeout", () => Effect.void))
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
    const sendEvent = (event: string, n: number) =>
      untilDone(op, (incarnation) =>
        runtimeOf(incarnation).receiveEvent({
          submissionId: a.submissionId,
          event,
          eventId: event,
          payload: { n },
        }),
      )
    yield* sendEvent("early", 1)
    const b = yield* submit("b", "echo", { text: "never" })
    yield* untilDone(op, (incarnation) => runtimeOf(incarnation).abort(b.submissionId))

    for (let round = 0; round < 20; round++) {
      yield* op((incarnation) => runtimeOf(incarnation).runRecovery)
      const rowA = yield* rowOf(ops.current, a.submissionId)
      const rowB = yield* rowOf(ops.current, b.submissionId)
      if (rowA.state === "settled" && rowB.state === "settled") break
      const now = yield* Clock.currentTimeMillis
      if (rowA.state === "waiting" || (rowA.state === "running" && rowA.dueAt !== undefined)) {
        // A timed wait: the due path serves it once its time comes.
        if (rowA.dueAt !== undefined && rowA.dueAt > now) yield* TestClock.adjust(rowA.dueAt - now)
        const at = yield* Clock.currentTimeMillis
        yield* op((incarnation) =>
          runtimeOf(incarnation).attemptDueHead(a.submissionId, { yieldAfter: DateTime.makeUnsafe(at + 7) }),
        )
      } else if (rowA.state === "suspended" && rowA.wait?._tag === "Event") {
        yield* sendEvent("late", 2)
      } else if (rowA.state === "suspended") {
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
    const records = yield* historyOf(current).forSubmission(a.submissionId)
    return {
      // When each record of a fired timer was appended, and the timer's due time.
      fired: records.flatMap((record) =>
        record.entry._tag === "TimerFired" ? [[record.recordedAt, record.entry.dueAt] as const] : [],
      ),
      // The ids of the events recorded and taken, as often as each record occurs.
      received: records.flatMap((record) =>
        record.entry._tag === "EventReceived" ? [record.entry.eventId] : [],
      ),
      consumed: records.flatMap((record) =>
        record.entry._tag === "EventConsumed" ? [record.entry.eventId] : [],
      ),
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
      // Subagents and joins, delayed submissions and schedules have journeys of their own
      // (DurableAgentRuntimeChildrenCrashMatrix, DurableAgentRuntimeScheduleCrashMatrix), and so
      // has retention (RetentionCrashMatrix).
      expect(new Set(hits)).toEqual(
        new Set(
          RUNTIME_FAILPOINT_LOCATIONS.filter(
            (at) => !childOrJoin(at) && !scheduled(at) && !at.startsWith("retention:"),
          ),
        ),
      )
      expect(result.a.settlement).toMatchObject({ outcome: "completed", output: "u2-true" })
      expect(result.b.settlement?.outcome).toBe("aborted")
      expect(result.runs).toEqual({ a: 1, b: 1, r: 2, u: 1, "v-cut": 1, reconcile: 1, v: 1, c: 1 })
      expect(result.tagsA).toContain("ReconcileAnswered")
      expect(result.tagsA).toContain("ApprovalResolved")
    },
  },
  check: (result, label) => {
    expect(result.a.settlement?.outcome, label).toBe("completed")
    expect(result.b.settlement?.outcome, label).toBe("aborted")
    expect([once(result.tagsA), once(result.tagsB)], label).toEqual([1, 1])
    // The sleep fired once, never before its due time by the Object's clock.
    expect(result.fired, label).toHaveLength(1)
    for (const [recordedAt, dueAt] of result.fired) expect(recordedAt, label).toBeGreaterThanOrEqual(dueAt)
    expect(result.tagsA.filter((tag) => tag === "StepAttemptFailed").length, label).toBeLessThanOrEqual(2)
    // Each event is recorded once and taken once, by its own wait; each timeout is journaled once.
    expect(result.received, label).toEqual(["early", "late"])
    expect(result.consumed, label).toEqual(["early", "late"])
    expect(
      result.tagsA.filter((tag) => tag === "EventWaitTimedOut"),
      label,
    ).toHaveLength(1)
    expect(
      result.tagsA.filter((tag) => tag === "ApprovalTimedOut"),
      label,
    ).toHaveLength(1)
    expect(result.remaining, label).toEqual([])
    // The uncertain effect never runs twice; plain steps run at least once.
    expect(result.runs.u ?? 0, label).toBeLessThanOrEqual(1)
    expect(result.runs.v ?? 0, label).toBeLessThanOrEqual(1)
    expect(result.runs.c ?? 0, label).toBeGreaterThanOrEqual(1)
  },
  timeout: 60_000,
})
