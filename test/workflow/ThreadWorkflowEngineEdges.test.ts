/**
 * What the engine does at the edges of `effect/workflow`: what it does not support fails by
 * name instead of parking forever, a completion it cannot store fails its caller, long deferred
 * names work (a name with a control character is refused), and an idempotency key joins its execution whatever the payload.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, Schema } from "effect"
import { DurableDeferred } from "effect/workflow"
import {
  BulkyWorkflow,
  DetacherWorkflow,
  fragileRuns,
  Gate,
  Go,
  GateWorkflow,
  LongDeferred,
  LongerDeferredA,
  LongerDeferredB,
  LongNameWorkflow,
  RaceWorkflow,
  StaleResumeWorkflow,
  StubbornWorkflow,
} from "../worker/workflowEdgeCases.ts"
import { activityRuns, OrderWorkflow } from "../worker/workflowObject.ts"
import {
  clientEngine,
  completedExit,
  deliverAlarm,
  deliverUntil,
  executionClient,
  polled,
  uniqueId,
} from "./support.ts"

/** The message of the defect an exit died with, if it died. */
const defectMessage = (exit: Exit.Exit<unknown, unknown> | undefined) => {
  if (exit === undefined || Exit.isSuccess(exit) || !Cause.hasDies(exit.cause)) return undefined
  const defect = Cause.squash(exit.cause)
  return defect instanceof Error ? defect.message : String(defect)
}

describe("ThreadWorkflowEngine edges", () => {
  it.live("Activity.raceAll fails the execution naming the unsupported call instead of parking", () =>
    Effect.gen(function* () {
      const executionId = yield* RaceWorkflow.execute({ id: uniqueId("race") }, { discard: true })
      yield* deliverUntil(executionId, polled(RaceWorkflow, executionId, "Complete"), 50)
      expect(defectMessage(completedExit(yield* RaceWorkflow.poll(executionId)))).toContain("raceAll")
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a deferred completion over the stored-value limit fails DurableDeferred.done by name", () =>
    Effect.gen(function* () {
      const executionId = yield* GateWorkflow.execute({ id: uniqueId("huge") }, { discard: true })
      yield* deliverUntil(executionId, polled(GateWorkflow, executionId, "Suspended"))
      const token = DurableDeferred.tokenFromExecutionId(Gate, { workflow: GateWorkflow, executionId })
      const done = yield* Effect.exit(DurableDeferred.fail(Gate, { token, error: "e".repeat(200_000) }))
      expect(defectMessage(done)).toContain("payload-bytes")
      // A completion that fits still completes it.
      yield* DurableDeferred.succeed(Gate, { token, value: 3 })
      yield* deliverUntil(executionId, polled(GateWorkflow, executionId, "Complete"))
      expect(completedExit(yield* GateWorkflow.poll(executionId))).toEqual(Exit.succeed("n=3"))
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("deferreds whose names are longer than an event name complete, each its own", () =>
    Effect.gen(function* () {
      const executionId = yield* LongNameWorkflow.execute({ id: uniqueId("long") }, { discard: true })
      yield* deliverUntil(executionId, polled(LongNameWorkflow, executionId, "Suspended"))
      const tokenOf = (deferred: typeof LongDeferred) =>
        DurableDeferred.tokenFromExecutionId(deferred, { workflow: LongNameWorkflow, executionId })
      yield* DurableDeferred.succeed(LongerDeferredB, { token: tokenOf(LongerDeferredB), value: "c" })
      yield* DurableDeferred.succeed(LongerDeferredA, { token: tokenOf(LongerDeferredA), value: "b" })
      yield* DurableDeferred.succeed(LongDeferred, { token: tokenOf(LongDeferred), value: "a" })
      yield* deliverUntil(executionId, polled(LongNameWorkflow, executionId, "Complete"))
      expect(completedExit(yield* LongNameWorkflow.poll(executionId))).toEqual(Exit.succeed("a+b+c"))
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a deferred whose name has a control character fails DurableDeferred.done by name", () =>
    Effect.gen(function* () {
      const Hidden = DurableDeferred.make("gate\u0007", { success: Schema.Number, error: Schema.String })
      const executionId = yield* GateWorkflow.execute({ id: uniqueId("hidden") }, { discard: true })
      yield* deliverUntil(executionId, polled(GateWorkflow, executionId, "Suspended"))
      const token = DurableDeferred.tokenFromExecutionId(Hidden, { workflow: GateWorkflow, executionId })
      const done = yield* Effect.exit(DurableDeferred.succeed(Hidden, { token, value: 1 }))
      expect(defectMessage(done)).toContain("without control characters")
      // Nor is it kept for an execution not started yet.
      const later = yield* GateWorkflow.executionId({ id: uniqueId("hidden-early") })
      const early = DurableDeferred.tokenFromExecutionId(Hidden, {
        workflow: GateWorkflow,
        executionId: later,
      })
      const kept = yield* Effect.exit(DurableDeferred.succeed(Hidden, { token: early, value: 1 }))
      expect(defectMessage(kept)).toContain("without control characters")
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a detached child execute fails the parent naming the unsupported option", () =>
    Effect.gen(function* () {
      const executionId = yield* DetacherWorkflow.execute({ id: uniqueId("detach") }, { discard: true })
      yield* deliverUntil(executionId, polled(DetacherWorkflow, executionId, "Complete"), 50)
      expect(defectMessage(completedExit(yield* DetacherWorkflow.poll(executionId)))).toContain("detached")
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("resume of an execution never started does nothing", () =>
    Effect.gen(function* () {
      const executionId = yield* GateWorkflow.executionId({ id: uniqueId("never") })
      expect(yield* Effect.exit(GateWorkflow.resume(executionId))).toEqual(Exit.void)
      expect(yield* GateWorkflow.poll(executionId)).toEqual(Option.none())
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live(
    "a deferred completed before its execution started is kept for it; a later one changes nothing",
    () =>
      Effect.gen(function* () {
        const id = uniqueId("early")
        const executionId = yield* GateWorkflow.executionId({ id })
        const token = DurableDeferred.tokenFromExecutionId(Gate, { workflow: GateWorkflow, executionId })
        // As in the in-memory engine: kept in the execution's Object until it is admitted.
        yield* DurableDeferred.succeed(Gate, { token, value: 1 })
        yield* GateWorkflow.execute({ id }, { discard: true })
        // Started (not yet run), a second completion of the same deferred is the same event.
        yield* DurableDeferred.succeed(Gate, { token, value: 2 })
        yield* deliverUntil(executionId, polled(GateWorkflow, executionId, "Complete"))
        expect(completedExit(yield* GateWorkflow.poll(executionId))).toEqual(Exit.succeed("n=1"))
      }).pipe(Effect.provide(clientEngine)),
  )

  it.live("an activity retried by ActivityRetry whose typed error is too large to store fails by name", () =>
    Effect.gen(function* () {
      for (const retried of [false, true]) {
        const executionId = yield* BulkyWorkflow.execute(
          { id: uniqueId("bulky"), bytes: 2_500_000, retried },
          { discard: true },
        )
        // Stored whole, the error would fail every append of its Thread: the lane would stall.
        yield* deliverUntil(executionId, polled(BulkyWorkflow, executionId, "Complete"), 30)
        expect(defectMessage(completedExit(yield* BulkyWorkflow.poll(executionId)))).toMatch(
          /step "activity\/bulky\/1" is \d+ bytes; the limit is \d+/,
        )
      }
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("the same idempotency key with another payload joins the first execution", () =>
    Effect.gen(function* () {
      const id = uniqueId("samekey")
      const first = yield* OrderWorkflow.execute({ id })
      const second = yield* OrderWorkflow.execute({ id, refuse: true })
      expect(second).toEqual(first)
      const executionId = yield* OrderWorkflow.executionId({ id })
      expect(activityRuns.get(`${executionId}/charge`)).toBe(1)
      expect((yield* executionClient(executionId).submissions()).length).toBe(1)
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a resume sent while nothing is suspended does not resume a later failure's suspension", () =>
    Effect.gen(function* () {
      const executionId = yield* StaleResumeWorkflow.execute({ id: uniqueId("stale") }, { discard: true })
      // Parked on its deferred, not suspended by a failure: the resume has nothing to resume.
      yield* deliverUntil(executionId, polled(StaleResumeWorkflow, executionId, "Suspended"))
      yield* StaleResumeWorkflow.resume(executionId)
      const token = DurableDeferred.tokenFromExecutionId(Go, { workflow: StaleResumeWorkflow, executionId })
      yield* DurableDeferred.done(Go, { token, exit: Exit.void })
      yield* deliverUntil(
        executionId,
        Effect.sync(() => (fragileRuns.get(executionId) ?? 0) >= 1),
      )
      for (let round = 0; round < 5; round++) yield* deliverAlarm(executionId)
      // Its activity failed once and the execution waits for a resume.
      expect(fragileRuns.get(executionId)).toBe(1)
      expect(Option.map(yield* StaleResumeWorkflow.poll(executionId), (result) => result._tag)).toEqual(
        Option.some("Suspended"),
      )
      yield* StaleResumeWorkflow.resume(executionId)
      yield* deliverUntil(executionId, polled(StaleResumeWorkflow, executionId, "Complete"))
      expect(completedExit(yield* StaleResumeWorkflow.poll(executionId))).toEqual(Exit.succeed("ran 2 times"))
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a resume sent twice resumes one suspension: the next failure's suspension waits for its own", () =>
    Effect.gen(function* () {
      const executionId = yield* StubbornWorkflow.execute({ id: uniqueId("twice") }, { discard: true })
      yield* deliverUntil(executionId, polled(StubbornWorkflow, executionId, "Suspended"))
      expect(fragileRuns.get(executionId)).toBe(1)
      // Two resumes of the one suspension at once (a caller's retry, a second click).
      yield* Effect.all([StubbornWorkflow.resume(executionId), StubbornWorkflow.resume(executionId)], {
        concurrency: 2,
      })
      yield* deliverUntil(
        executionId,
        Effect.sync(() => (fragileRuns.get(executionId) ?? 0) >= 2),
      )
      for (let round = 0; round < 5; round++) yield* deliverAlarm(executionId)
      expect(fragileRuns.get(executionId)).toBe(2)
      expect(yield* polled(StubbornWorkflow, executionId, "Suspended")).toBe(true)
      yield* StubbornWorkflow.resume(executionId)
      yield* deliverUntil(executionId, polled(StubbornWorkflow, executionId, "Complete"))
      expect(completedExit(yield* StubbornWorkflow.poll(executionId))).toEqual(Exit.succeed("ran 3 times"))
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a resume retried after the execution ran on and was suspended again resumes that suspension", () =>
    Effect.gen(function* () {
      const executionId = yield* StubbornWorkflow.execute({ id: uniqueId("retried") }, { discard: true })
      yield* deliverUntil(executionId, polled(StubbornWorkflow, executionId, "Suspended"))
      yield* StubbornWorkflow.resume(executionId)
      // The execution runs on and fails again before the caller's retry arrives.
      yield* deliverUntil(
        executionId,
        Effect.map(
          polled(StubbornWorkflow, executionId, "Suspended"),
          (suspended) => suspended && (fragileRuns.get(executionId) ?? 0) >= 2,
        ),
      )
      yield* StubbornWorkflow.resume(executionId)
      yield* deliverUntil(executionId, polled(StubbornWorkflow, executionId, "Complete"))
      expect(completedExit(yield* StubbornWorkflow.poll(executionId))).toEqual(Exit.succeed("ran 3 times"))
    }).pipe(Effect.provide(clientEngine)),
  )
})
