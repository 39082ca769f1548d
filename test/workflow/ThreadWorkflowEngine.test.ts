/**
 * Effect's workflows on Threads, driven from a Worker through `layerClient`: an execution is a
 * Submission in the Object named by its execution id, its activities journaled steps.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, Schema } from "effect"
import { Workflow } from "effect/workflow"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"
import {
  activityRuns,
  FlakyWorkflow,
  OrderRefused,
  OrderWorkflow,
  PatientWorkflow,
  UnhandledWorkflow,
} from "../worker/workflowObject.ts"
import { clientEngine, completedExit, deliverUntil, executionClient, polled, uniqueId } from "./support.ts"

describe("ThreadWorkflowEngine", () => {
  it.live("runs a workflow's activities once each and answers its typed result", () =>
    Effect.gen(function* () {
      const id = uniqueId("order")
      const executionId = yield* OrderWorkflow.execute({ id }, { discard: true })
      yield* deliverUntil(executionId, polled(OrderWorkflow, executionId, "Complete"))
      const result = yield* OrderWorkflow.poll(executionId)
      expect(Option.map(result, (r) => r._tag === "Complete" && r.exit)).toEqual(
        Option.some(Exit.succeed({ charged: 42, shipped: `parcel-${id}` })),
      )
      expect(activityRuns.get(`${executionId}/charge`)).toBe(1)
      expect(activityRuns.get(`${executionId}/ship`)).toBe(1)
      const status = yield* executionClient(executionId).findSubmission(executionId)
      expect(status?.agentId).toBe("workflow/Order")
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("answers a workflow's typed error as its failure", () =>
    Effect.gen(function* () {
      const id = uniqueId("refused")
      const exit = yield* Effect.exit(OrderWorkflow.execute({ id, refuse: true }))
      const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : Option.none()
      expect(error).toEqual(Option.some(new OrderRefused({ reason: `order ${id} refused` })))
      expect(Option.getOrThrow(error)).toBeInstanceOf(OrderRefused)
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("executes once per execution id: a repeat answers the same result without running again", () =>
    Effect.gen(function* () {
      const id = uniqueId("repeat")
      const first = yield* OrderWorkflow.execute({ id })
      const second = yield* OrderWorkflow.execute({ id })
      expect(second).toEqual(first)
      const executionId = yield* OrderWorkflow.executionId({ id })
      expect(activityRuns.get(`${executionId}/charge`)).toBe(1)
      const submissions = yield* executionClient(executionId).submissions()
      expect(submissions.map((submission) => submission.agentId)).toEqual(["workflow/Order"])
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("retries a failing activity with Activity.retry, each attempt a journaled step", () =>
    Effect.gen(function* () {
      const id = uniqueId("flaky")
      const attempt = yield* FlakyWorkflow.execute({ id, failures: 2 })
      expect(attempt).toBe(3)
      const executionId = yield* FlakyWorkflow.executionId({ id, failures: 2 })
      expect(activityRuns.get(`${executionId}/flaky`)).toBe(3)
      const history = yield* executionClient(executionId).history()
      const steps = history.records.flatMap((record) =>
        record.entry._tag === "StepCompleted" ? [record.entry.name] : [],
      )
      expect(steps).toEqual(["activity/flaky/1", "activity/flaky/2", "activity/flaky/3"])
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("fails with the last typed error once the retries are spent", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(FlakyWorkflow.execute({ id: uniqueId("spent"), failures: 10 }))
      const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : Option.none()
      expect(error).toEqual(Option.some("attempt 6 failed"))
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live(
    "retries an annotated activity by the step retry policy: one step, its failed attempts journaled",
    () =>
      Effect.gen(function* () {
        const executionId = yield* PatientWorkflow.execute(
          { id: uniqueId("patient"), failures: 2 },
          { discard: true },
        )
        yield* deliverUntil(executionId, polled(PatientWorkflow, executionId, "Complete"))
        expect(completedExit(yield* PatientWorkflow.poll(executionId))).toEqual(Exit.succeed(3))
        const history = yield* executionClient(executionId).history()
        const entries = history.records.map((record) => record.entry)
        expect(entries.filter((entry) => entry._tag === "StepAttemptFailed")).toHaveLength(2)
        expect(entries.filter((entry) => entry._tag === "StepCompleted")).toMatchObject([
          { name: "activity/patient/1", attempts: 3 },
        ])
      }).pipe(Effect.provide(clientEngine)),
  )

  it.live("fails with the activity's last typed error once the policy's attempts are spent", () =>
    Effect.gen(function* () {
      const executionId = yield* PatientWorkflow.execute(
        { id: uniqueId("spent"), failures: 9 },
        { discard: true },
      )
      yield* deliverUntil(executionId, polled(PatientWorkflow, executionId, "Complete"))
      expect(completedExit(yield* PatientWorkflow.poll(executionId))).toEqual(Exit.fail("run 3 failed"))
      expect(activityRuns.get(`${executionId}/patient`)).toBe(3)
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("fails an execution whose workflow has no handler registered in the Object", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(UnhandledWorkflow.execute({ id: uniqueId("unhandled") }))
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
      expect(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "").toContain("Unhandled is not registered")
    }).pipe(Effect.provide(clientEngine)),
  )

  it("gives a workflow's agent a digest over its Schemas and version", () => {
    // Workflows of its own: defining a version makes it the one parents start as a child, and
    // the test Objects of every file in this isolate start `OrderWorkflow` children.
    const orderWith = (note: boolean) =>
      Workflow.make("Order", {
        payload: {
          id: Schema.String,
          refuse: Schema.optionalKey(Schema.Boolean),
          ...(note ? { note: Schema.String } : {}),
        },
        success: Schema.Struct({ charged: Schema.Number, shipped: Schema.String }),
        error: OrderRefused,
        idempotencyKey: ({ id }) => id,
      })
    const order = orderWith(false)
    const base = ThreadWorkflowEngine.agent(order)
    expect(base.digest).toBe(ThreadWorkflowEngine.agent(OrderWorkflow).digest)
    expect(ThreadWorkflowEngine.agent(order)).toBe(base)
    expect(ThreadWorkflowEngine.agent(order, { version: "2" }).digest).not.toBe(base.digest)
    const widened = orderWith(true)
    expect(ThreadWorkflowEngine.agent(widened).id).toBe(base.id)
    expect(ThreadWorkflowEngine.agent(widened).digest).not.toBe(base.digest)
  })
})
