/**
 * The handlers of a `ThreadObject`'s Thread calls (submit, the actions on a Submission, status,
 * history, settlement), each over its decoded request. Mutations go through the shared
 * mutation gate (generation and alarm commit before the body); reads never touch maintenance
 * state. An addressed Submission must belong to the addressed Thread, or it is not found.
 */
import { Clock, Effect, Option } from "effect"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import { DurableRuntimeConfig } from "../../core/DurableRuntimeConfig.ts"
import { EarlyEventAgents, EarlyEventRefused } from "../../core/internal/ledger/early.ts"
import { utf8ByteLength } from "../../core/internal/ledger/rules.ts"
import { SubmissionLedger } from "../../core/SubmissionLedger.ts"
import { ThreadHistory } from "../../core/ThreadHistory.ts"
import { refuseOnDamage } from "../maintenance/errors.ts"
import { ThreadMaintenance } from "../maintenance/maintenance.ts"
import type { Authorization } from "./authorization.ts"
import { InvalidRequest } from "./callErrors.ts"
import type { CallName } from "./calls.ts"
import {
  admittedCalls,
  type CallHandler,
  type CallHandlers,
  type DispatchedCalls,
  dispatchCalls,
} from "./dispatch.ts"
import { readCounters } from "./metrics.ts"
import { operatorHandlers } from "./operatorHandlers.ts"
import { pageHandlers } from "./pageHandlers.ts"
import { withinAnswer } from "./pageViews.ts"
import { scheduleHandlers } from "./scheduleHandlers.ts"
import { readMaintenanceView } from "./operatorReads.ts"
import { HistoryPageView, inspection, submissionStatus, ThreadStatus } from "./statusViews.ts"
import { type Address, addressed } from "./addressed.ts"

/**
 * Refuses an operator's value (a note, a resolution's result) larger than a stored value may be
 * (`maxStoredValueBytes`, as for a step result or an event), before anything is written.
 */
const storable = (entryPoint: CallName, what: string, value: unknown) =>
  Effect.gen(function* () {
    if (value === undefined) return
    const limit = (yield* DurableRuntimeConfig).maxStoredValueBytes
    const bytes = utf8ByteLength(JSON.stringify(value))
    if (bytes > limit)
      return yield* new InvalidRequest({
        entryPoint,
        message: `${what} is ${bytes} bytes; the limit (maxStoredValueBytes) is ${limit}`,
      })
  })

/**
 * Runs `body` for an addressed Submission inside the mutation gate, after `check`, which refuses
 * a request before anything is written (not even a generation or an alarm).
 */
const gated =
  <A extends Address, E, C = never, R = never>(
    body: (runtime: DurableAgentRuntime["Service"], request: A) => Effect.Effect<void, E>,
    check: (request: A) => Effect.Effect<void, C, R> = () => Effect.void,
  ) =>
  (request: A) =>
    Effect.gen(function* () {
      yield* addressed(request)
      yield* check(request)
      const runtime = yield* DurableAgentRuntime
      const maintenance = yield* ThreadMaintenance
      yield* refuseOnDamage(maintenance.withMutation(body(runtime, request)))
    })

type ThreadCall =
  | "submit"
  | "sendEvent"
  | "sendEventByKey"
  | "abort"
  | "retry"
  | "resolveApproval"
  | "resolveUnknown"
  | "submissionStatus"
  | "threadStatus"
  | "history"
  | "completedStep"
  | "awaitSettlement"
  | "inspectMaintenance"

/** @internal */
export const threadHandlers: { readonly [K in ThreadCall]: CallHandler<K> } = {
  submit: (request) =>
    Effect.gen(function* () {
      const runtime = yield* DurableAgentRuntime
      const maintenance = yield* ThreadMaintenance
      // Every admission limit is checked before the gate: a refused input writes nothing, not
      // even a generation or an alarm.
      const prepared = yield* runtime.prepare(request)
      // A delayed Submission is work for later: the gate lowers the due bound to its time and
      // ensures the alarm by then, opening no generation. One on a busy lane is served when it
      // becomes the head: a pass parks it until then.
      const now = yield* Clock.currentTimeMillis
      const delayed = request.notBefore !== undefined && request.notBefore > now
      return yield* refuseOnDamage(
        maintenance.withMutation(
          runtime.admit(prepared),
          delayed ? { invalidatesRecovery: false, dueAt: request.notBefore } : undefined,
        ),
      )
    }),
  sendEvent: (request) =>
    Effect.gen(function* () {
      yield* addressed(request)
      const runtime = yield* DurableAgentRuntime
      const maintenance = yield* ThreadMaintenance
      const event = {
        submissionId: request.submissionId,
        event: request.event,
        eventId: request.eventId,
        payload: request.payload,
      }
      // Refusals and repeats answer before the gate: they write nothing, not even a generation.
      const preview = yield* runtime.previewEvent(event)
      if (preview._tag === "Replayed") return preview.receipt
      // Only an event that ends a wait creates work for the pass; if the Submission parked on
      // it after the preview, the first run writes nothing and the second opens a generation.
      const record = (wakes: boolean) =>
        refuseOnDamage(
          maintenance.withMutation(runtime.receiveEvent(event, { mayWake: wakes }), {
            invalidatesRecovery: wakes,
          }),
        )
      const first = yield* record(preview.wakes)
      if (first._tag === "Received") return first.receipt
      const second = yield* record(true)
      if (second._tag === "Received") return second.receipt
      return yield* Effect.die(new Error("an event that may wake was not recorded"))
    }),
  // Kept (outside the gate: it is no work for the pass until the admission records it), or,
  // once the Submission is admitted, sent as any event: the store decides in one transaction.
  sendEventByKey: (request) =>
    Effect.gen(function* () {
      // Kept for an agent whose admission takes none, it would stay for good.
      if (!(yield* EarlyEventAgents).takes(request.agentId))
        return yield* new InvalidRequest({
          entryPoint: "sendEventByKey",
          message: `agent ${request.agentId} is not a workflow's: its admission takes no event sent before it`,
        })
      const limit = (yield* DurableRuntimeConfig).maxStoredValueBytes
      const payload = JSON.stringify(request.payload)
      const bytes = utf8ByteLength(payload)
      if (bytes > limit)
        return yield* new EarlyEventRefused({
          threadId: request.threadId,
          idempotencyKey: request.idempotencyKey,
          event: request.event,
          reason: "payload-bytes",
          message: `the payload is ${bytes} bytes; the limit is ${limit}`,
        })
      const outcome = yield* (yield* SubmissionLedger).keepEarly({
        threadId: request.threadId,
        idempotencyKey: request.idempotencyKey,
        agentId: request.agentId,
        event: request.event,
        eventId: request.eventId,
        payload,
        now: yield* Clock.currentTimeMillis,
      })
      if (outcome._tag === "Kept") return { _tag: "Kept", replayed: outcome.replayed } as const
      const receipt = yield* threadHandlers.sendEvent({
        threadId: request.threadId,
        submissionId: outcome.row.submissionId,
        agentId: request.agentId,
        event: request.event,
        eventId: request.eventId,
        payload: request.payload,
      })
      return { _tag: "Sent", receipt } as const
    }),
  abort: gated((runtime, request) => runtime.abort(request.submissionId)),
  retry: gated((runtime, request) => runtime.retry(request.submissionId)),
  resolveApproval: gated(
    (runtime, request) =>
      runtime.resolveApproval(
        request.submissionId,
        request.decision,
        request.step === undefined ? undefined : { step: request.step },
      ),
    (request) => storable("resolveApproval", "the note", request.decision.note),
  ),
  resolveUnknown: gated(
    (runtime, request) =>
      runtime.resolveUnknown(
        request.submissionId,
        request.resolution,
        request.step === undefined ? undefined : { step: request.step },
      ),
    ({ resolution }) =>
      resolution._tag === "Succeeded"
        ? storable("resolveUnknown", "the resolution's value", resolution.value)
        : storable("resolveUnknown", "the resolution's message", resolution.message),
  ),
  submissionStatus: (request) => Effect.map(addressed(request), submissionStatus),
  threadStatus: ({ threadId }) =>
    Effect.gen(function* () {
      const ledger = yield* SubmissionLedger
      const head = yield* ledger.head(threadId)
      return ThreadStatus.make({
        threadId,
        nonterminal: yield* ledger.countNonterminal(threadId),
        ...(Option.isSome(head) ? { head: submissionStatus(head.value) } : {}),
      })
    }),
  history: (request) =>
    Effect.gen(function* () {
      const history = yield* ThreadHistory
      const page = yield* history.page(request.threadId, {
        ...(request.after === undefined ? {} : { after: request.after }),
        limit: request.limit ?? 100,
      })
      // Large records (inputs, step results) answer a short page that goes on after its last.
      const records = withinAnswer(page.records, (record) => record.entry)
      const next = records.length < page.records.length ? records.at(-1)?.sequence : page.next
      return HistoryPageView.make({ records, ...(next === undefined ? {} : { next }) })
    }),
  completedStep: (request) =>
    Effect.gen(function* () {
      const row = yield* addressed(request)
      const records = yield* (yield* ThreadHistory).forSubmission(row.submissionId)
      return (
        records.findLast(({ entry }) => entry._tag === "StepCompleted" && entry.step === request.step) ?? null
      )
    }),
  awaitSettlement: (request) =>
    Effect.gen(function* () {
      yield* addressed(request)
      const runtime = yield* DurableAgentRuntime
      return yield* runtime.awaitSettlement(request.submissionId, { timeoutMillis: request.timeoutMillis })
    }),
  inspectMaintenance: () =>
    Effect.gen(function* () {
      const view = yield* readMaintenanceView
      return inspection(view, yield* readCounters)
    }),
}

/** Every call's handler. */
const objectHandlers: CallHandlers = {
  ...threadHandlers,
  ...operatorHandlers,
  ...pageHandlers,
  ...scheduleHandlers,
}

/** @internal Every call of a `ThreadObject`, dispatched over its handlers. */
export const objectCalls = (authorization: Authorization | undefined): DispatchedCalls =>
  dispatchCalls(objectHandlers, authorization)

/** @internal Every call of a `ThreadObject` over its handlers, for requests already admitted. */
export const objectAdmittedCalls = () => admittedCalls(objectHandlers)
