/**
 * What a workflow waits for, on the Object's storage and alarm: a durable clock is a timer the
 * alarm resumes, a deferred an event sent from the Worker, a suspension a wait for `resume`; an
 * interrupt aborts the parked execution. Each wait parks the Submission between deliveries.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { DurableDeferred, WorkflowEngine } from "effect/workflow"
import { makeClientEngine } from "../../src/internal/workflow/clientEngine.ts"
import {
  activityRuns,
  Approval,
  ApprovalWorkflow,
  GuardianWorkflow,
  NapWorkflow,
  OrderWorkflow,
  ParentWorkflow,
  ResumableWorkflow,
} from "../worker/workflowObject.ts"
import { clientEngine, deliverAlarm, deliverUntil, executionClient, polled, uniqueId } from "./support.ts"

const completeExit = <A, E>(
  result: Option.Option<{ readonly _tag: string; readonly exit?: Exit.Exit<A, E> }>,
) => (Option.isSome(result) && result.value._tag === "Complete" ? result.value.exit : undefined)

describe("ThreadWorkflowEngine waits", () => {
  it.live(
    "sleeps on a durable clock: the execution parks on a timer and resumes no earlier than its due time",
    () =>
      Effect.gen(function* () {
        const startedAt = Date.now()
        const executionId = yield* NapWorkflow.execute(
          { id: uniqueId("nap"), millis: 400 },
          { discard: true },
        )
        yield* deliverUntil(executionId, polled(NapWorkflow, executionId, "Suspended"))
        const status = yield* executionClient(executionId).findSubmission(executionId)
        const explained = yield* executionClient(executionId).explain(status!.submissionId)
        expect(explained.reason).toMatchObject({ _tag: "Sleeping", name: "clock/nap" })
        expect(activityRuns.get(`${executionId}/after`)).toBeUndefined()
        yield* deliverUntil(executionId, polled(NapWorkflow, executionId, "Complete"))
        expect(Date.now() - startedAt).toBeGreaterThanOrEqual(400)
        expect(completeExit(yield* NapWorkflow.poll(executionId))).toEqual(Exit.succeed("rested"))
        // The replay after the timer answers the first activity from the journal.
        expect(activityRuns.get(`${executionId}/before`)).toBe(1)
        expect(activityRuns.get(`${executionId}/after`)).toBe(1)
      }).pipe(Effect.provide(clientEngine)),
  )

  it.live("waits for a deferred completed from the Worker, parked with no timer owed", () =>
    Effect.gen(function* () {
      const executionId = yield* ApprovalWorkflow.execute({ id: uniqueId("approve") }, { discard: true })
      yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Suspended"))
      const client = executionClient(executionId)
      const status = yield* client.findSubmission(executionId)
      expect((yield* client.explain(status!.submissionId)).reason).toMatchObject({
        _tag: "WaitingForEvent",
        event: "workflow/deferred/approval",
      })
      expect((yield* client.obligations).obligations).toEqual([])
      const token = DurableDeferred.tokenFromExecutionId(Approval, {
        workflow: ApprovalWorkflow,
        executionId,
      })
      yield* DurableDeferred.succeed(Approval, { token, value: "yes" })
      // A second completion of the same deferred changes nothing.
      yield* DurableDeferred.succeed(Approval, { token, value: "no" })
      yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Complete"))
      expect(completeExit(yield* ApprovalWorkflow.poll(executionId))).toEqual(Exit.succeed("decided: yes"))
      expect(activityRuns.get(`${executionId}/record`)).toBe(1)
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("fails with a deferred's typed error", () =>
    Effect.gen(function* () {
      const executionId = yield* ApprovalWorkflow.execute({ id: uniqueId("deny") }, { discard: true })
      const token = DurableDeferred.tokenFromExecutionId(Approval, {
        workflow: ApprovalWorkflow,
        executionId,
      })
      yield* DurableDeferred.fail(Approval, { token, error: "denied" })
      yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Complete"))
      expect(completeExit(yield* ApprovalWorkflow.poll(executionId))).toEqual(Exit.fail("denied"))
      expect(activityRuns.get(`${executionId}/record`)).toBeUndefined()
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("interrupts a parked execution: it completes interrupted and runs nothing more", () =>
    Effect.gen(function* () {
      const executionId = yield* ApprovalWorkflow.execute({ id: uniqueId("interrupt") }, { discard: true })
      yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Suspended"))
      yield* ApprovalWorkflow.interrupt(executionId)
      yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Complete"))
      const exit = completeExit(yield* ApprovalWorkflow.poll(executionId))
      expect(exit !== undefined && Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
      const status = yield* executionClient(executionId).findSubmission(executionId)
      expect(status?.settlement?.outcome).toBe("aborted")
      expect(activityRuns.get(`${executionId}/record`)).toBeUndefined()
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("keeps a suspended execution parked until it is resumed, then runs the failed activity again", () =>
    Effect.gen(function* () {
      const executionId = yield* ResumableWorkflow.execute({ id: uniqueId("resume") }, { discard: true })
      yield* deliverUntil(executionId, polled(ResumableWorkflow, executionId, "Suspended"))
      expect(activityRuns.get(`${executionId}/fragile`)).toBe(1)
      for (let delivery = 0; delivery < 3; delivery++) yield* deliverAlarm(executionId)
      expect(yield* polled(ResumableWorkflow, executionId, "Suspended")).toBe(true)
      expect(activityRuns.get(`${executionId}/fragile`)).toBe(1)
      // The poll carries the failure that suspended it, as the in-memory engine's does.
      const suspended = yield* ResumableWorkflow.poll(executionId)
      const cause =
        Option.isSome(suspended) && suspended.value._tag === "Suspended" ? suspended.value : undefined
      expect(cause?.failed).toBe(true)
      expect(cause?.cause === undefined ? undefined : Cause.squash(cause.cause)).toBe("first run fails")
      yield* ResumableWorkflow.resume(executionId)
      yield* deliverUntil(executionId, polled(ResumableWorkflow, executionId, "Complete"))
      expect(completeExit(yield* ResumableWorkflow.poll(executionId))).toEqual(Exit.succeed("ran 2 times"))
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("polls a suspended execution's failure by one direct read, not by paging its history", () =>
    Effect.gen(function* () {
      const executionId = yield* ResumableWorkflow.execute({ id: uniqueId("direct") }, { discard: true })
      yield* deliverUntil(executionId, polled(ResumableWorkflow, executionId, "Suspended"))
      for (let delivery = 0; delivery < 3; delivery++) yield* deliverAlarm(executionId)
      // A Worker's engine whose clients count the history pages they read.
      let pages = 0
      const counting = Layer.sync(WorkflowEngine.WorkflowEngine)(() =>
        makeClientEngine((id) => {
          const client = executionClient(id)
          return {
            ...client,
            history: (page) =>
              Effect.tap(
                client.history(page),
                Effect.sync(() => {
                  pages++
                }),
              ),
          }
        }),
      )
      const suspended = yield* Effect.provide(ResumableWorkflow.poll(executionId), counting)
      const result =
        Option.isSome(suspended) && suspended.value._tag === "Suspended" ? suspended.value : undefined
      expect(result?.failed).toBe(true)
      expect(result?.cause === undefined ? undefined : Cause.squash(result.cause)).toBe("first run fails")
      expect(pages).toBe(0)
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("runs a child workflow as a child Submission in the child's own Object", () =>
    Effect.gen(function* () {
      const id = uniqueId("parent")
      expect(yield* ParentWorkflow.execute({ id })).toBe(`child shipped parcel-child-of-${id}`)
      const childId = yield* OrderWorkflow.executionId({ id: `child-of-${id}` })
      const children = yield* executionClient(childId).submissions()
      expect(children.map((child) => [child.agentId, child.settlement?.outcome])).toEqual([
        ["workflow/Order", "completed"],
      ])
      expect(activityRuns.get(`${childId}/charge`)).toBe(1)
    }).pipe(Effect.provide(clientEngine)),
  )
})

describe("ThreadWorkflowEngine interrupts", () => {
  it.live("interrupting a parent aborts its unsettled child too", () =>
    Effect.gen(function* () {
      const id = uniqueId("guardian")
      const executionId = yield* GuardianWorkflow.execute({ id }, { discard: true })
      const childId = yield* ApprovalWorkflow.executionId({ id: `guarded-${id}` })
      yield* deliverUntil(executionId, polled(GuardianWorkflow, executionId, "Suspended"))
      yield* deliverUntil(childId, polled(ApprovalWorkflow, childId, "Suspended"))
      yield* GuardianWorkflow.interrupt(executionId)
      yield* deliverUntil(executionId, polled(GuardianWorkflow, executionId, "Complete"))
      yield* deliverUntil(childId, polled(ApprovalWorkflow, childId, "Complete"))
      const child = yield* executionClient(childId).submissions()
      expect(child.map((submission) => submission.settlement?.outcome)).toEqual(["aborted"])
      const exit = completeExit(yield* GuardianWorkflow.poll(executionId))
      expect(exit !== undefined && Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
    }).pipe(Effect.provide(clientEngine)),
  )
  it.live(
    "a child interrupted on its own ends its awaiting parent interrupted, as in the in-memory engine",
    () =>
      Effect.gen(function* () {
        const id = uniqueId("orphan")
        const executionId = yield* GuardianWorkflow.execute({ id }, { discard: true })
        const childId = yield* ApprovalWorkflow.executionId({ id: `guarded-${id}` })
        yield* deliverUntil(executionId, polled(GuardianWorkflow, executionId, "Suspended"))
        yield* deliverUntil(childId, polled(ApprovalWorkflow, childId, "Suspended"))
        yield* ApprovalWorkflow.interrupt(childId)
        yield* deliverUntil(childId, polled(ApprovalWorkflow, childId, "Complete"))
        yield* deliverUntil(executionId, polled(GuardianWorkflow, executionId, "Complete"))
        // The child's interrupt is the parent's result: not a failure of the parent's own.
        const exit = completeExit(yield* GuardianWorkflow.poll(executionId))
        expect(exit !== undefined && Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
        // A Worker's execute of the parent ends interrupted, as the in-memory engine's does.
        const joined = yield* Effect.exit(GuardianWorkflow.execute({ id }))
        expect(Exit.isFailure(joined) && Cause.hasInterruptsOnly(joined.cause)).toBe(true)
      }).pipe(Effect.provide(clientEngine)),
  )
})
