/**
 * A child execution and a Worker's execute of the same execution id are one execution: one
 * Submission in the child's Thread, its activities run once, whoever comes first; a parent joins
 * an execution a Worker started once it has settled.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import {
  activityRuns,
  ApprovalWorkflow,
  FireThenJoinWorkflow,
  GuardianWorkflow,
  OrderWorkflow,
  ParentWorkflow,
} from "../worker/workflowObject.ts"
import { clientEngine, completedExit, deliverUntil, executionClient, polled, uniqueId } from "./support.ts"

describe("ThreadWorkflowEngine child executions", () => {
  it.live("a Worker executing a child a parent ran joins it: nothing runs twice", () =>
    Effect.gen(function* () {
      const id = uniqueId("joinchild")
      expect(yield* ParentWorkflow.execute({ id })).toBe(`child shipped parcel-child-of-${id}`)
      const childId = yield* OrderWorkflow.executionId({ id: `child-of-${id}` })
      const joined = yield* OrderWorkflow.execute({ id: `child-of-${id}` })
      expect(joined).toEqual({ charged: 42, shipped: `parcel-child-of-${id}` })
      expect((yield* executionClient(childId).submissions()).length).toBe(1)
      expect(activityRuns.get(`${childId}/charge`)).toBe(1)
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live(
    "a parent executing a child a Worker ran to its end first joins its result: nothing runs twice",
    () =>
      Effect.gen(function* () {
        const id = uniqueId("joinparent")
        const childId = yield* OrderWorkflow.executionId({ id: `child-of-${id}` })
        yield* OrderWorkflow.execute({ id: `child-of-${id}` })
        const parentId = yield* ParentWorkflow.execute({ id }, { discard: true })
        yield* deliverUntil(parentId, polled(ParentWorkflow, parentId, "Complete"), 50)
        expect(completedExit(yield* ParentWorkflow.poll(parentId))).toEqual(
          Exit.succeed(`child shipped parcel-child-of-${id}`),
        )
        expect((yield* executionClient(childId).submissions()).length).toBe(1)
        expect(activityRuns.get(`${childId}/charge`)).toBe(1)
      }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a parent executing a child a Worker started that still runs fails by name", () =>
    Effect.gen(function* () {
      const id = uniqueId("joinrunning")
      const childId = yield* ApprovalWorkflow.execute({ id: `guarded-${id}` }, { discard: true })
      yield* deliverUntil(childId, polled(ApprovalWorkflow, childId, "Suspended"))
      const parentId = yield* GuardianWorkflow.execute({ id }, { discard: true })
      yield* deliverUntil(parentId, polled(GuardianWorkflow, parentId, "Complete"), 50)
      const exit = completedExit(yield* GuardianWorkflow.poll(parentId))
      // The parent cannot adopt a running execution it did not start: it fails by name.
      expect(exit !== undefined && Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
      expect(String(exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : "")).toContain(
        "not started by this parent",
      )
      // The child runs on, its own execution.
      expect(Option.map(yield* ApprovalWorkflow.poll(childId), (result) => result._tag)).toEqual(
        Option.some("Suspended"),
      )
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a parent that started a child with discard and executes it again awaits its result", () =>
    Effect.gen(function* () {
      const id = uniqueId("firejoin")
      expect(yield* FireThenJoinWorkflow.execute({ id })).toBe(`joined parcel-fired-${id}`)
      const childId = yield* OrderWorkflow.executionId({ id: `fired-${id}` })
      expect((yield* executionClient(childId).submissions()).length).toBe(1)
      expect(activityRuns.get(`${childId}/charge`)).toBe(1)
    }).pipe(Effect.provide(clientEngine)),
  )
})
