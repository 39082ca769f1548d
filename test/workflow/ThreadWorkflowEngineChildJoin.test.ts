/**
 * A child execution and a Worker's execute of the same execution id are one execution: one
 * Submission in the child's Thread, its activities run once, whoever comes first; a parent joins
 * an execution a Worker started once it has settled, and is suspended (until a resume) while it
 * runs, as in the in-memory engine.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { DurableDeferred } from "effect/workflow"
import {
  activityRuns,
  Approval,
  ApprovalWorkflow,
  FireThenJoinWorkflow,
  GuardianWorkflow,
  OrderWorkflow,
  ParentWorkflow,
} from "../worker/workflowObject.ts"
import {
  clientEngine,
  completedExit,
  deliverAlarm,
  deliverUntil,
  executionClient,
  polled,
  uniqueId,
} from "./support.ts"

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

  it.live(
    "a parent executing a child a Worker started that still runs is suspended: a resume joins its result",
    () =>
      Effect.gen(function* () {
        const id = uniqueId("joinrunning")
        const childId = yield* ApprovalWorkflow.execute({ id: `guarded-${id}` }, { discard: true })
        yield* deliverUntil(childId, polled(ApprovalWorkflow, childId, "Suspended"))
        const parentId = yield* GuardianWorkflow.execute({ id }, { discard: true })
        // As in the in-memory engine: the parent cannot hear that execution's end, so it is
        // suspended, not failed.
        yield* deliverUntil(parentId, polled(GuardianWorkflow, parentId, "Suspended"), 50)
        for (let delivery = 0; delivery < 3; delivery++) yield* deliverAlarm(parentId)
        expect(yield* polled(GuardianWorkflow, parentId, "Suspended")).toBe(true)
        // A resume while the child still runs suspends it again.
        yield* GuardianWorkflow.resume(parentId)
        for (let delivery = 0; delivery < 3; delivery++) yield* deliverAlarm(parentId)
        expect(yield* polled(GuardianWorkflow, parentId, "Suspended")).toBe(true)
        const token = DurableDeferred.tokenFromExecutionId(Approval, {
          workflow: ApprovalWorkflow,
          executionId: childId,
        })
        yield* DurableDeferred.succeed(Approval, { token, value: "yes" })
        yield* deliverUntil(childId, polled(ApprovalWorkflow, childId, "Complete"))
        // Once it has settled, a resume joins its result: nothing runs twice.
        yield* GuardianWorkflow.resume(parentId)
        yield* deliverUntil(parentId, polled(GuardianWorkflow, parentId, "Complete"), 50)
        expect(completedExit(yield* GuardianWorkflow.poll(parentId))).toEqual(Exit.succeed("decided: yes"))
        expect((yield* executionClient(childId).submissions()).length).toBe(1)
        expect(activityRuns.get(`${childId}/record`)).toBe(1)
        // Each pass started it anew: the first, the resume while it ran, the one that joined.
        const { records } = yield* executionClient(parentId).history()
        expect(records.filter(({ entry }) => entry._tag === "ChildStarted").length).toBe(3)
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
