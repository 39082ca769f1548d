/**
 * A kill (and a typed failure) at every runtime failpoint of a workflow's execution, one at a
 * time, against both ledgers: an activity, a durable clock, a deferred completed from outside
 * and a second activity, driven to the end through fresh incarnations. The execution settles
 * exactly once with the workflow's encoded result, the clock fires once and never early, and
 * the deferred's completion is recorded and taken once.
 */
import { expect } from "@effect/vitest"
import { Clock, DateTime, Effect, Layer, Schema, Stream } from "effect"
import { Activity, DurableClock, DurableDeferred, Workflow } from "effect/workflow"
import { TestClock } from "effect/testing"
import { ThreadId } from "../../src/core/Identifiers.ts"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"
import { type CrashingOps, crashMatrix, untilDone } from "../support/crashMatrix.ts"
import { echo, ran, type Runs } from "../core/runtimeAgents.ts"
import { rowOf, submitTo, tagsOf } from "../core/runtimeFixtures.ts"
import { historyOf, ledgerOf, runtimeOf } from "../core/runtimeHarness.ts"

const NAP_MILLIS = 100
const EXECUTION_ID = "journey-1"

const Journey = Workflow.make("Journey", {
  payload: { n: Schema.Number },
  success: Schema.String,
  idempotencyKey: ({ n }) => String(n),
})
const Signal = DurableDeferred.make("signal", { success: Schema.Number })
const journeyAgent = ThreadWorkflowEngine.agent(Journey)

const handler = (runs: Runs) =>
  Journey.toLayer(({ n }) =>
    Effect.gen(function* () {
      const a = yield* Activity.make({
        name: "a",
        success: Schema.Number,
        execute: Effect.as(ran(runs, "a"), n + 1),
      })
      yield* DurableClock.sleep({ name: "nap", duration: NAP_MILLIS, inMemoryThreshold: 0 })
      const signal = yield* DurableDeferred.await(Signal)
      return yield* Activity.make({
        name: "b",
        success: Schema.String,
        execute: Effect.as(ran(runs, "b"), `${a}-${signal}`),
      })
    }),
  )

// The matrix hands the run's counter to `incarnation`, which runs before `drive`: the handler
// reads it from here.
let runsOfThisRun: Runs | undefined

const drive = (ops: CrashingOps) =>
  Effect.gen(function* () {
    const { op } = ops
    // The Object's engine with the handler registered: the program finds it in its context.
    const engine = yield* Layer.build(
      handler(runsOfThisRun!).pipe(Layer.provideMerge(ThreadWorkflowEngine.layer)),
    )
    const withEngine = <A, E>(effect: Effect.Effect<A, E>) => Effect.provide(effect, engine)

    const a = yield* untilDone(op, (incarnation) =>
      submitTo(incarnation, ThreadWorkflowEngine.THREAD_ID, journeyAgent.id, EXECUTION_ID, {
        executionId: EXECUTION_ID,
        payload: { n: 1 },
      }),
    )
    const thread = ThreadId.make(ThreadWorkflowEngine.THREAD_ID)
    // Each wait the row was seen parked on, with the Object's clock when it was seen.
    const waits: Array<{ readonly tag: string; readonly dueAt?: number; readonly seenAt: number }> = []
    for (let round = 0; round < 20; round++) {
      yield* op((incarnation) => withEngine(runtimeOf(incarnation).runRecovery))
      const row = yield* rowOf(ops.current, a.submissionId)
      if (row.state === "settled") break
      const now = yield* Clock.currentTimeMillis
      if (row.wait !== undefined)
        waits.push({
          tag: row.wait._tag,
          ...("dueAt" in row.wait ? { dueAt: row.wait.dueAt } : {}),
          seenAt: now,
        })
      if (row.state === "waiting" || (row.state === "running" && row.dueAt !== undefined)) {
        if (row.dueAt !== undefined && row.dueAt > now) yield* TestClock.adjust(row.dueAt - now)
        const at = yield* Clock.currentTimeMillis
        yield* op((incarnation) =>
          withEngine(
            runtimeOf(incarnation).attemptDueHead(a.submissionId, {
              yieldAfter: DateTime.makeUnsafe(at + 7),
            }),
          ),
        )
      } else if (row.state === "suspended" && row.wait?._tag === "Event") {
        // What `DurableDeferred.succeed` sends from a Worker, idempotent by the deferred's name.
        yield* untilDone(op, (incarnation) =>
          runtimeOf(incarnation).receiveEvent({
            submissionId: a.submissionId,
            event: "workflow/deferred/signal",
            eventId: "signal",
            payload: { _tag: "Success", value: 7 },
          }),
        )
      } else {
        yield* op((incarnation) =>
          withEngine(
            runtimeOf(incarnation).processThreadHead(thread, { yieldAfter: DateTime.makeUnsafe(now + 7) }),
          ),
        )
      }
    }

    const current = ops.current
    const records = yield* historyOf(current).forSubmission(a.submissionId)
    return {
      fired: records.flatMap((record) =>
        record.entry._tag === "TimerFired" ? [[record.recordedAt, record.entry.dueAt] as const] : [],
      ),
      received: records.flatMap((record) =>
        record.entry._tag === "EventReceived" ? [record.entry.eventId] : [],
      ),
      consumed: records.flatMap((record) =>
        record.entry._tag === "EventConsumed" ? [record.entry.eventId] : [],
      ),
      waits,
      a: yield* rowOf(current, a.submissionId),
      tags: yield* tagsOf(current, a.submissionId),
      remaining: yield* Stream.runCollect(ledgerOf(current).scanNonterminal),
    }
  })

const DONE = { _tag: "Success", value: "2-7" }

crashMatrix({
  name: "ThreadWorkflowEngine crash matrix",
  incarnation: (runs) => {
    runsOfThisRun = runs
    return { agents: [journeyAgent, echo], config: { leaseRenewalInterval: 1 } }
  },
  drive,
  coverage: {
    test: "runs the workflow's activities once each without a fault",
    check: (hits, result) => {
      expect(hits.length).toBeGreaterThan(0)
      expect(result.a.settlement).toMatchObject({ outcome: "completed", output: DONE })
      expect(result.runs).toEqual({ a: 1, b: 1 })
      expect(result.waits.map((wait) => wait.tag)).toEqual(["Sleep", "Event", "Event"])
    },
  },
  check: (result, label) => {
    expect(result.a.settlement, label).toMatchObject({ outcome: "completed", output: DONE })
    expect(
      result.tags.filter((tag) => tag === "SubmissionSettled"),
      label,
    ).toHaveLength(1)
    // The clock parked the execution on a timer, and its deferred was waited for only once the
    // timer was due by the Object's clock. (A timer whose Attempt parks again at once leaves no
    // `TimerFired` record: at most one.)
    const sleep = result.waits.find((wait) => wait.tag === "Sleep")
    const event = result.waits.find((wait) => wait.tag === "Event")
    expect(sleep?.dueAt, label).toBeDefined()
    expect(event?.seenAt ?? 0, label).toBeGreaterThanOrEqual(sleep?.dueAt ?? Number.MAX_SAFE_INTEGER)
    expect(result.fired.length, label).toBeLessThanOrEqual(1)
    expect(result.received, label).toEqual(["signal"])
    expect(result.consumed, label).toEqual(["signal"])
    expect(result.remaining, label).toEqual([])
    // Activities are plain steps: at least once each, and the result is the recorded one.
    expect(result.runs.a ?? 0, label).toBeGreaterThanOrEqual(1)
    expect(result.runs.b ?? 0, label).toBeGreaterThanOrEqual(1)
  },
  timeout: 60_000,
})
