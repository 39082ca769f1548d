/**
 * What an operator sees and removes of the completions an Object keeps for executions not yet
 * started: `threadPage` lists them against the Object's bounds, by execution id, with the id
 * `forget` takes; `forget` of that id removes them, and `forget` of a settled execution removes
 * what is still kept under its id.
 */
import { describe, expect, it } from "@effect/vitest"
import { env } from "cloudflare:test"
import { Effect, Exit } from "effect"
import { MAX_EARLY_BYTES, MAX_EARLY_EVENTS } from "../../src/core/SubmissionLedger.ts"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { invokeOf } from "../../src/internal/client/invokers.ts"
import { encodeDeferredExit, WORKFLOW_THREAD_ID, workflowAgentId } from "../../src/internal/workflow/codec.ts"
import { ApprovalWorkflow, NotifierWorkflow } from "../worker/workflowObject.ts"
import { clientEngine, deliverUntil, executionClient, polled, uniqueId } from "./support.ts"

/** Keeps (or sends) a completion under `executionId` for `workflow`'s agent. */
const sendByKey = (
  executionId: string,
  eventId: string,
  payload: unknown,
  workflow: string = ApprovalWorkflow._tag,
) =>
  Effect.suspend(() => {
    const invoke = invokeOf(executionClient(executionId))!
    return invoke("sendEventByKey", {
      threadId: WORKFLOW_THREAD_ID,
      idempotencyKey: executionId,
      agentId: workflowAgentId(workflow),
      event: `workflow/deferred/${eventId}`,
      eventId,
      payload: payload as never,
    })
  })

describe("ThreadWorkflowEngine early completions for operators", () => {
  it.live("a completion for an agent whose admission takes none is refused, not kept for good", () =>
    Effect.gen(function* () {
      const executionId = uniqueId("not-a-workflow")
      const invoke = invokeOf(executionClient(executionId))!
      const refused = yield* Effect.flip(
        invoke("sendEventByKey", {
          threadId: WORKFLOW_THREAD_ID,
          idempotencyKey: executionId,
          agentId: "echo",
          event: "workflow/deferred/a",
          eventId: "a",
          payload: null,
        }),
      )
      expect(refused).toMatchObject({ _tag: "InvalidRequest", entryPoint: "sendEventByKey" })
      expect(refused.message).toContain("echo")
      expect((yield* executionClient(executionId).threadPage()).early).toBeUndefined()
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("threadPage shows what an execution not yet started keeps: count, bytes, its id", () =>
    Effect.gen(function* () {
      const executionId = uniqueId("shown")
      const client = executionClient(executionId)
      expect((yield* client.threadPage()).early).toBeUndefined()
      yield* sendByKey(executionId, "a", "one")
      yield* sendByKey(executionId, "b", { two: 2 })
      const page = yield* client.threadPage()
      const bytes = JSON.stringify("one").length + JSON.stringify({ two: 2 }).length
      expect(page.threads).toEqual([])
      expect(page.early).toEqual({
        events: 2,
        bytes,
        maxEvents: MAX_EARLY_EVENTS,
        maxBytes: MAX_EARLY_BYTES,
        keys: [
          {
            threadId: WORKFLOW_THREAD_ID,
            idempotencyKey: executionId,
            agentId: workflowAgentId(ApprovalWorkflow._tag),
            submissionId: expect.stringMatching(/^sub-/),
            events: 2,
            bytes,
            firstKeptAt: expect.any(Number),
          },
        ],
      })
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("forget of the id an execution not yet started will have removes what it keeps", () =>
    Effect.gen(function* () {
      const executionId = uniqueId("forgotten")
      const client = executionClient(executionId)
      yield* sendByKey(executionId, "approval", encodeDeferredExit(Exit.succeed("stale")))
      const id = (yield* client.threadPage()).early?.keys[0]?.submissionId
      expect(id).toBeDefined()
      // Another Thread's forget of the id removes nothing.
      yield* ThreadClient.make(env.THREADS_WORKFLOW, "another", { objectName: executionId }).forget(id!)
      expect((yield* client.threadPage()).early?.events).toBe(1)
      yield* client.forget(id!)
      expect((yield* client.threadPage()).early).toBeUndefined()
      // Kept anew (not a repeat), and the execution that starts sees that one only.
      expect(yield* sendByKey(executionId, "approval", encodeDeferredExit(Exit.succeed("fresh")))).toEqual({
        _tag: "Kept",
        replayed: false,
      })
    }).pipe(Effect.provide(clientEngine)),
  )

  it.live("forget of a settled execution removes what is still kept under its id", () =>
    Effect.gen(function* () {
      const payload = { id: uniqueId("settled") }
      const id = yield* ApprovalWorkflow.executionId(payload)
      const client = executionClient(id)
      // Kept under the id for another workflow: the Approval execution's admission leaves it.
      yield* sendByKey(id, "other", "for another workflow", NotifierWorkflow._tag)
      expect(yield* ApprovalWorkflow.execute(payload, { discard: true })).toBe(id)
      yield* sendByKey(id, "approval", encodeDeferredExit(Exit.succeed("yes")))
      yield* deliverUntil(id, polled(ApprovalWorkflow, id, "Complete"))
      expect((yield* client.threadPage()).early?.events).toBe(1)
      const status = yield* client.findSubmission(id)
      yield* client.forget(status!.submissionId)
      expect(yield* client.findSubmission(id)).toBeNull()
      // Removed with it: the same completion is kept anew, not answered as a repeat.
      expect(yield* sendByKey(id, "other", "for another workflow", NotifierWorkflow._tag)).toEqual({
        _tag: "Kept",
        replayed: false,
      })
    }).pipe(Effect.provide(clientEngine)),
  )
})
