/**
 * Deferred completions sent before their execution starts (a webhook that computed the token
 * with `DurableDeferred.tokenFromPayload`): kept in the execution's Object and recorded once,
 * with the execution's admission, as Effect's in-memory engine keeps them; bounded per Object.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { DurableDeferred } from "effect/workflow"
import { encodeDeferredExit, WORKFLOW_THREAD_ID, workflowAgentId } from "../../src/internal/workflow/codec.ts"
import { MAX_EARLY_BYTES, MAX_EARLY_EVENTS } from "../../src/core/SubmissionLedger.ts"
import { invokeOf } from "../../src/internal/client/invokers.ts"
import { activityRuns, Approval, ApprovalWorkflow, NotifierWorkflow } from "../worker/workflowObject.ts"
import { clientEngine, deliverUntil, executionClient, polled, uniqueId } from "./support.ts"

const completeExit = <A, E>(
  result: Option.Option<{ readonly _tag: string; readonly exit?: Exit.Exit<A, E> }>,
) => (Option.isSome(result) && result.value._tag === "Complete" ? result.value.exit : undefined)

/** The `EventReceived` records of the execution's Thread. */
const eventsReceived = (executionId: string) =>
  Effect.map(executionClient(executionId).history({ limit: 500 }), (page) =>
    page.records.filter((record) => record.entry._tag === "EventReceived"),
  )

/** The Object call a Worker's engine sends an early completion through, on the execution's Object. */
const sendByKey = (executionId: string, eventId: string, payload: unknown = null) =>
  Effect.suspend(() => {
    const invoke = invokeOf(executionClient(executionId))!
    return invoke("sendEventByKey", {
      threadId: WORKFLOW_THREAD_ID,
      idempotencyKey: executionId,
      agentId: workflowAgentId(ApprovalWorkflow._tag),
      event: `workflow/deferred/${eventId}`,
      eventId,
      payload: payload as never,
    })
  })

/** The message of the defect an exit died with, if it died. */
const defectMessage = (exit: Exit.Exit<unknown, unknown>) => {
  if (Exit.isSuccess(exit) || !Cause.hasDies(exit.cause)) return undefined
  const defect = Cause.squash(exit.cause)
  return defect instanceof Error ? defect.message : String(defect)
}

describe("ThreadWorkflowEngine early completions", () => {
  it.live("a deferred completed before its execution starts is seen once when it runs", () =>
    Effect.gen(function* () {
      const payload = { id: uniqueId("early") }
      const token = yield* DurableDeferred.tokenFromPayload(Approval, { workflow: ApprovalWorkflow, payload })
      yield* DurableDeferred.succeed(Approval, { token, value: "early yes" })
      const executionId = yield* ApprovalWorkflow.execute(payload, { discard: true })
      yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Complete"))
      expect(completeExit(yield* ApprovalWorkflow.poll(executionId))).toEqual(
        Exit.succeed("decided: early yes"),
      )
      expect(activityRuns.get(`${executionId}/record`)).toBe(1)
      const received = yield* eventsReceived(executionId)
      expect(received.map((record) => record.entry)).toEqual([
        {
          _tag: "EventReceived",
          event: "workflow/deferred/approval",
          eventId: "approval",
          payload: expect.anything(),
        },
      ])
      // A repeat after the start is the same event: replayed, nothing recorded.
      yield* DurableDeferred.succeed(Approval, { token, value: "late no" })
      const repeat = yield* sendByKey(executionId, "approval")
      expect(repeat).toMatchObject({ _tag: "Sent", receipt: { replayed: true } })
      expect(yield* eventsReceived(executionId)).toHaveLength(1)
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a second completion before the start changes nothing", () =>
    Effect.gen(function* () {
      const payload = { id: uniqueId("early-twice") }
      const token = yield* DurableDeferred.tokenFromPayload(Approval, { workflow: ApprovalWorkflow, payload })
      yield* DurableDeferred.succeed(Approval, { token, value: "first" })
      yield* DurableDeferred.fail(Approval, { token, error: "second" })
      const executionId = yield* ApprovalWorkflow.execute(payload, { discard: true })
      yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Complete"))
      expect(completeExit(yield* ApprovalWorkflow.poll(executionId))).toEqual(Exit.succeed("decided: first"))
      expect(yield* eventsReceived(executionId)).toHaveLength(1)
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a completion racing the execution's start is recorded once, whichever comes first", () =>
    Effect.gen(function* () {
      for (let round = 0; round < 8; round++) {
        const payload = { id: uniqueId(`early-race-${round}`) }
        const executionId = yield* ApprovalWorkflow.executionId(payload)
        const value = encodeDeferredExit(Exit.succeed(`raced ${round}`))
        // The engine's own call (a Worker's `DurableDeferred.done` after it found no execution)
        // and the start, at once: the Object decides, in one transaction each, which one records it.
        yield* Effect.all(
          [sendByKey(executionId, "approval", value), ApprovalWorkflow.execute(payload, { discard: true })],
          { concurrency: "unbounded" },
        )
        yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Complete"))
        expect(completeExit(yield* ApprovalWorkflow.poll(executionId))).toEqual(
          Exit.succeed(`decided: raced ${round}`),
        )
        expect(yield* eventsReceived(executionId)).toHaveLength(1)
      }
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("once the execution is admitted the Object sends the event to it instead of keeping it", () =>
    Effect.gen(function* () {
      const executionId = yield* ApprovalWorkflow.execute({ id: uniqueId("early-after") }, { discard: true })
      const sent = yield* sendByKey(executionId, "approval", encodeDeferredExit(Exit.succeed("direct")))
      expect(sent).toMatchObject({ _tag: "Sent", receipt: { replayed: false } })
      yield* deliverUntil(executionId, polled(ApprovalWorkflow, executionId, "Complete"))
      expect(completeExit(yield* ApprovalWorkflow.poll(executionId))).toEqual(Exit.succeed("decided: direct"))
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live(
    "an execution that never starts keeps a bounded count of completions, refused by name past it",
    () =>
      Effect.gen(function* () {
        const executionId = uniqueId("never-count")
        for (let i = 0; i < MAX_EARLY_EVENTS; i++) {
          expect(yield* sendByKey(executionId, `d-${i}`)).toEqual({ _tag: "Kept", replayed: false })
        }
        const over = yield* Effect.flip(sendByKey(executionId, "one-more"))
        expect(over).toMatchObject({ _tag: "EarlyEventRefused", reason: "early-count" })
        expect(over.message).toContain("MAX_EARLY_EVENTS")
        // A repeat of a kept one is still answered; the engine's caller sees the limit by name.
        expect(yield* sendByKey(executionId, "d-0")).toEqual({ _tag: "Kept", replayed: true })
        const deferred = DurableDeferred.make("one-more-deferred")
        const token = DurableDeferred.tokenFromExecutionId(deferred, {
          workflow: ApprovalWorkflow,
          executionId,
        })
        const died = yield* Effect.exit(DurableDeferred.succeed(deferred, { token, value: undefined }))
        expect(defectMessage(died)).toContain("early-count")
      }).pipe(Effect.provide(clientEngine)),
  )

  it.live("an execution that never starts keeps bounded bytes, and no payload over a stored value", () =>
    Effect.gen(function* () {
      const executionId = uniqueId("never-bytes")
      const big = "b".repeat(120_000)
      const fits = Math.floor(MAX_EARLY_BYTES / (big.length + 2))
      for (let i = 0; i < fits; i++) {
        expect(yield* sendByKey(executionId, `big-${i}`, big)).toEqual({ _tag: "Kept", replayed: false })
      }
      const over = yield* Effect.flip(sendByKey(executionId, "big-more", big))
      expect(over).toMatchObject({ _tag: "EarlyEventRefused", reason: "early-bytes" })
      const huge = yield* Effect.flip(sendByKey(uniqueId("never-huge"), "huge", "h".repeat(200_000)))
      expect(huge).toMatchObject({ _tag: "EarlyEventRefused", reason: "payload-bytes" })
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("a workflow completes another execution's deferred from inside its run, started or not yet", () =>
    Effect.gen(function* () {
      for (const targetFirst of [true, false]) {
        const target = { id: uniqueId("notified") }
        const targetId = yield* ApprovalWorkflow.executionId(target)
        if (targetFirst) {
          yield* ApprovalWorkflow.execute(target, { discard: true })
          yield* deliverUntil(targetId, polled(ApprovalWorkflow, targetId, "Suspended"))
        }
        const notifierId = yield* NotifierWorkflow.execute(
          { id: uniqueId("notifier"), target: target.id },
          { discard: true },
        )
        yield* deliverUntil(notifierId, polled(NotifierWorkflow, notifierId, "Complete"))
        expect(completeExit(yield* NotifierWorkflow.poll(notifierId))).toEqual(Exit.succeed("notified"))
        if (!targetFirst) yield* ApprovalWorkflow.execute(target, { discard: true })
        yield* deliverUntil(targetId, polled(ApprovalWorkflow, targetId, "Complete"))
        expect(completeExit(yield* ApprovalWorkflow.poll(targetId))).toEqual(
          Exit.succeed("decided: from a notifier"),
        )
        expect(yield* eventsReceived(targetId)).toHaveLength(1)
      }
    }).pipe(Effect.provide(clientEngine)),
  )
})
