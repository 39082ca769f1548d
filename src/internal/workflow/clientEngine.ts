/**
 * The engine of a Worker: every operation reaches the execution's Thread, in the Object named by
 * the execution id, through the Thread's typed client. `execute` admits the execution (its id is
 * the idempotency key, so a repeat returns the same Submission) and waits a bounded time for its
 * settlement; a still running execution answers `Suspended` and `Workflow.execute` asks again on
 * its `suspendedRetrySchedule`.
 */
import { Effect, Exit, Option, Schema } from "effect"
import { type Workflow, WorkflowEngine } from "effect/workflow"
import { Workflow as WorkflowModule } from "effect/workflow"
import type { Settlement } from "../../core/SubmissionLedger.ts"
import type { EventRefused } from "../../core/AgentEvent.ts"
import { invokeOf } from "../client/invokers.ts"
import type { ThreadClient } from "../../ThreadClient.ts"
import {
  ActivityRecord,
  deferredEvent,
  deferredEventId,
  encodeDeferredExit,
  RESUME_EVENT,
  suspendedResult,
  workflowAgentId,
} from "./codec.ts"
import type { EarlyEventRefused } from "./earlyEventCall.ts"
import { executionAgent } from "./execution.ts"

/** How long one `execute` call waits on the Object for the settlement. @internal */
export const EXECUTE_WAIT_MILLIS = 30_000

const insideOnly = (operation: string) =>
  Effect.die(new Error(`WorkflowEngine.${operation} runs inside a workflow, in its ThreadObject`))

/** The exit a settlement stands for, its output decoded with the workflow's Schemas. */
const settlementExit = (workflow: Workflow.Any, settlement: Settlement) =>
  Effect.gen(function* () {
    switch (settlement.outcome) {
      case "completed":
        return yield* Effect.orDie(
          Schema.decodeUnknownEffect(executionAgent(workflow).output)(settlement.output),
        )
      case "failed":
        return Exit.die(new Error(settlement.error ?? "the execution failed"))
      case "aborted":
        return Exit.interrupt()
    }
  })

/** The engine of a Worker over `clientOf` (the Thread client of an execution id). @internal */
export const makeClientEngine = (
  clientOf: (executionId: string) => ThreadClient,
): WorkflowEngine.WorkflowEngine["Service"] => WorkflowEngine.makeUnsafe(clientEncoded(clientOf))

/** The calls of a Worker's engine, over values already encoded. @internal */
export const clientEncoded = (clientOf: (executionId: string) => ThreadClient): WorkflowEngine.Encoded => {
  /**
   * The execution's Submission: admitted under the execution id, or, for a child workflow, under
   * the key its parent's start chose, as the one Submission of the workflow in its Thread.
   */
  const find = (workflowName: string, executionId: string) =>
    Effect.gen(function* () {
      const client = clientOf(executionId)
      const direct = yield* Effect.orDie(client.findSubmission(executionId))
      if (direct !== null) return direct
      const agentId = workflowAgentId(workflowName)
      const page = yield* Effect.orDie(client.submissions({ limit: 10 }))
      return page.find((submission) => submission.agentId === agentId) ?? null
    })

  /**
   * The suspension of an execution that waits for a resume: an activity that suspended it (a
   * failure under `SuspendOnFailure`) is its call just before the wait (`step`), and its record
   * carries the cause, read directly. A suspension the workflow's own code caused has none.
   */
  const suspension = (executionId: string, submissionId: string, step: number) =>
    Effect.gen(function* () {
      if (step < 0) return new WorkflowModule.Suspended({})
      const found = yield* Effect.orDie(clientOf(executionId).completedStep(submissionId, step))
      if (found === null || found.entry._tag !== "StepCompleted" || !found.entry.name.startsWith("activity/"))
        return new WorkflowModule.Suspended({})
      const record = Schema.decodeUnknownOption(ActivityRecord)(found.entry.result)
      return Option.isSome(record) && record.value._tag === "Suspended"
        ? suspendedResult(record.value)
        : new WorkflowModule.Suspended({})
    })

  const execute = ((workflow: Workflow.Any, options: Parameters<WorkflowEngine.Encoded["execute"]>[1]) =>
    Effect.gen(function* () {
      const agent = clientOf(options.executionId).agent(executionAgent(workflow))
      // The execution id names the execution: a payload other than the first one's joins it.
      const submissionId = yield* agent
        .submit(
          { executionId: options.executionId, payload: options.payload },
          { idempotencyKey: options.executionId },
        )
        .pipe(
          Effect.map((receipt) => receipt.submissionId),
          Effect.catchTag("IdempotencyConflict", (conflict) =>
            Effect.flatMap(find(workflow._tag, options.executionId), (existing) =>
              existing === null ? Effect.die(conflict) : Effect.succeed(existing.submissionId),
            ),
          ),
          Effect.orDie,
        )
      if (options.discard) return undefined
      const settled = yield* clientOf(options.executionId)
        .awaitSettlement(submissionId, EXECUTE_WAIT_MILLIS)
        .pipe(
          Effect.map(Option.some),
          Effect.catchTag("SettlementTimeout", () => Effect.succeedNone),
          Effect.orDie,
        )
      if (Option.isNone(settled)) return new WorkflowModule.Suspended({})
      return new WorkflowModule.Complete({ exit: yield* settlementExit(workflow, settled.value) })
    })) as WorkflowEngine.Encoded["execute"]

  const poll: WorkflowEngine.Encoded["poll"] = (workflow, executionId) =>
    Effect.gen(function* () {
      const status = yield* find(workflow._tag, executionId)
      if (status === null) return Option.none()
      if (status.settlement !== undefined) {
        return Option.some(
          new WorkflowModule.Complete({ exit: yield* settlementExit(workflow, status.settlement) }),
        )
      }
      // Parked on a clock, a deferred or a resume: nothing runs until one arrives.
      if (status.state === "waiting") return Option.some(new WorkflowModule.Suspended({}))
      if (status.state !== "suspended") return Option.none()
      const { reason } = yield* Effect.orDie(clientOf(executionId).explain(status.submissionId))
      return Option.some(
        reason._tag === "WaitingForEvent" && reason.event === RESUME_EVENT
          ? yield* suspension(executionId, status.submissionId, reason.step - 1)
          : new WorkflowModule.Suspended({}),
      )
    })

  const interrupt: WorkflowEngine.Encoded["interrupt"] = (workflow, executionId) =>
    Effect.gen(function* () {
      const status = yield* find(workflow._tag, executionId)
      if (status === null || status.settlement !== undefined) return
      // An abort settles the execution `aborted` and aborts its unsettled children first.
      yield* Effect.orDie(clientOf(executionId).abort(status.submissionId))
    })

  /** Settled or joined meanwhile: nothing waits for it any more. Any other refusal dies. */
  const refusedEvent = (event: string, executionId: string) => (refused: EventRefused | EarlyEventRefused) =>
    refused._tag === "EventRefused" && (refused.reason === "settled" || refused.reason === "joined")
      ? Effect.void
      : Effect.die(
          new Error(
            `${event} of execution ${executionId} was refused (${refused.reason}): ${refused.message}`,
          ),
        )

  /**
   * An event for an execution that may not have started: the Object sends it to the execution
   * admitted under its id, or keeps it until the execution is admitted, deciding in one
   * transaction, so a completion racing the start is recorded once.
   */
  const sendOrKeep = (
    workflowName: string,
    executionId: string,
    event: string,
    payload: Schema.Json,
    eventId: string,
  ) =>
    Effect.gen(function* () {
      const client = clientOf(executionId)
      const invoke = invokeOf(client)
      // A client not made by `ThreadClient.make` has no call runner: nothing can keep it.
      if (invoke === undefined) return yield* Effect.die(new Error(`no execution ${executionId} was started`))
      yield* invoke("sendEventByKey", {
        threadId: client.threadId,
        idempotencyKey: executionId,
        agentId: workflowAgentId(workflowName),
        event,
        eventId,
        payload,
      }).pipe(
        Effect.catchTags({
          EventRefused: refusedEvent(event, executionId),
          EarlyEventRefused: refusedEvent(event, executionId),
        }),
        Effect.orDie,
      )
    })

  const send = (
    workflowName: string,
    executionId: string,
    event: string,
    payload: Schema.Json,
    eventId: string,
    options: { readonly keepEarly: boolean } = { keepEarly: false },
  ) =>
    Effect.gen(function* () {
      const status = yield* find(workflowName, executionId)
      if (status === null) {
        if (options.keepEarly) return yield* sendOrKeep(workflowName, executionId, event, payload, eventId)
        return yield* Effect.die(new Error(`no execution ${executionId} was started`))
      }
      if (status.settlement !== undefined) return
      yield* clientOf(executionId)
        .sendEvent(status.submissionId, event, payload, { eventId })
        .pipe(
          // Any refusal but settled or joined (a payload too large to store, or malformed) would
          // leave the execution waiting forever.
          Effect.catchTag("EventRefused", refusedEvent(event, executionId)),
          Effect.orDie,
        )
    })

  return {
    register: () => insideOnly("register"),
    execute,
    poll,
    interrupt,
    interruptUnsafe: interrupt,
    // A resume resumes a suspension that waits for it now, as in the in-memory engine: one sent
    // at another time (while the execution runs or waits for a clock or a deferred, before it
    // started, after it settled) does nothing. Kept, it would resume a later failure's
    // suspension that nobody looked at. Its event id names the wait it resumes (its call
    // position): a resume sent twice while that wait lasts is one event, not a second one kept
    // for the next suspension. One read after the execution ran on and was suspended again
    // resumes that new suspension: a resume names no suspension.
    resume: (workflow, executionId) =>
      Effect.gen(function* () {
        const status = yield* find(workflow._tag, executionId)
        if (status === null || status.settlement !== undefined) return
        const { reason } = yield* Effect.orDie(clientOf(executionId).explain(status.submissionId))
        if (reason._tag !== "WaitingForEvent" || reason.event !== RESUME_EVENT) return
        yield* send(workflow._tag, executionId, RESUME_EVENT, null, `${RESUME_EVENT}@${reason.step}`)
      }),
    activityExecute: () => insideOnly("activityExecute"),
    deferredResult: () => insideOnly("deferredResult"),
    // The deferred's name is the event id: a second completion changes nothing. One for an
    // execution not started yet is kept for it, as in the in-memory engine.
    deferredDone: ({ workflowName, executionId, deferredName, exit }) =>
      Effect.gen(function* () {
        const event = yield* deferredEvent(deferredName)
        const eventId = yield* deferredEventId(deferredName)
        yield* send(workflowName, executionId, event, encodeDeferredExit(exit), eventId, { keepEarly: true })
      }),
    scheduleClock: () => insideOnly("scheduleClock"),
  }
}
