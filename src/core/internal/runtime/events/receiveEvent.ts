/**
 * Events sent to a Submission: checked, then recorded as an input record (`EventReceived`) of
 * the Submission, at most once per `eventId`. The id is checked in the Submission's index of
 * event ids (`ThreadHistory.eventReceived`), never by reading its journal, so an event costs the
 * same whatever the journal's length. A Submission parked on a wait for the event's name
 * is resumed (`ready`, as a child's settlement resumes its parent) in the transaction that
 * records it; otherwise the event is appended and kept until a wait takes it (see
 * `recordInput`).
 *
 * Only a wake creates work for the maintenance pass, so a host asks `previewEvent` first and
 * opens its mutation without advancing the generation when there is nothing to wake; if the
 * Submission parked on the event meanwhile, `receiveEvent` with `mayWake: false` answers
 * `WakeNeeded` without writing, and the host runs it again with the generation.
 */
import { spanned } from "../../spanned.ts"
import { Effect, Option, Schema } from "effect"
import { EventReceipt, EventRefused, type EventRefusalReason } from "../../../AgentEvent.ts"
import { declaredEvent, type DurableBindingFailure } from "../../../AgentRegistration.ts"
import type { SubmissionId, ThreadId } from "../../../Identifiers.ts"
import { SubmissionNotFound, type SubmissionSnapshot } from "../../ledger/model.ts"
import { isParked, unownedFence, utf8ByteLength } from "../../ledger/rules.ts"
import type { DurableWorkerFailure } from "../shared/model.ts"
import type { RuntimeEnv } from "../shared/runtimeEnv.ts"
import { appendInput, recordInput } from "../shared/inputRecords.ts"

const OPERATION = "DurableAgentRuntime.receiveEvent"

/** An event for one Submission, its payload in its encoded (JSON) form. */
export interface EventRequest {
  readonly submissionId: SubmissionId
  readonly event: string
  readonly eventId: string
  readonly payload: Schema.Json
}

/** What recording an event would do now: answer a replay, or record it (waking its wait). */
export type EventPreview =
  | { readonly _tag: "Replayed"; readonly receipt: EventReceipt }
  | { readonly _tag: "Record"; readonly wakes: boolean }

/** How `receiveEvent` ended: recorded (or replayed), or not written because it would wake. */
export type EventDelivery =
  { readonly _tag: "Received"; readonly receipt: EventReceipt } | { readonly _tag: "WakeNeeded" }

/** Why an event could not be checked or recorded. */
export type EventFailure = EventRefused | SubmissionNotFound | DurableBindingFailure | DurableWorkerFailure

const receipt = (request: EventRequest, replayed: boolean, resumed: boolean) =>
  new EventReceipt({ submissionId: request.submissionId, eventId: request.eventId, replayed, resumed })

/** Whether the row is parked on a wait for `event`, so the event ends that wait. */
const waitsFor = (row: SubmissionSnapshot, event: string): boolean =>
  (row.state === "suspended" || row.state === "waiting") &&
  isParked(row) &&
  ((row.wait?._tag === "Event" && row.wait.event === event) ||
    (row.wait?._tag === "Workflow" && row.wait.events.includes(event)))

/**
 * The name of the event that took the request's id in its Submission, if one did: one seek of
 * the Submission's event ids, whatever its journal's length.
 */
const takenBy = (env: RuntimeEnv, request: EventRequest) => (row: SubmissionSnapshot) =>
  env.history.eventReceived(row.submissionId, request.eventId)

/** The decision on the row as read and the event that took the id, if one did. */
const decide = (
  env: RuntimeEnv,
  row: SubmissionSnapshot,
  taken: Option.Option<string>,
  request: EventRequest,
): Effect.Effect<EventPreview, EventRefused | DurableBindingFailure> =>
  Effect.gen(function* () {
    const refuse = (reason: EventRefusalReason, message: string) =>
      Effect.fail(new EventRefused({ submissionId: row.submissionId, event: request.event, reason, message }))
    // A repeat answers as the first did, whatever happened since; an id taken by an event of
    // another name is a different event, refused rather than dropped as a repeat.
    if (Option.isSome(taken) && taken.value !== request.event)
      return yield* refuse(
        "id-conflict",
        `event id ${request.eventId} was taken by event "${taken.value}", not "${request.event}"`,
      )
    if (Option.isSome(taken)) return { _tag: "Replayed", receipt: receipt(request, true, false) } as const
    if (row.state === "terminalizing" || row.state === "settled")
      return yield* refuse("settled", `submission ${row.submissionId} settled: no wait can take the event`)
    // An accepted abort settles it `aborted` without running the program again.
    if (row.abortRequested)
      return yield* refuse(
        "settled",
        `submission ${row.submissionId} is being aborted: no wait can take the event`,
      )
    if (row.state === "joining" || row.state === "joined")
      return yield* refuse("joined", `submission ${row.submissionId} is joined input: it runs no program`)
    const bytes = utf8ByteLength(JSON.stringify(request.payload))
    const limit = env.settings.maxStoredValueBytes
    if (bytes > limit)
      return yield* refuse("payload-bytes", `the payload is ${bytes} bytes; the limit is ${limit}`)
    const agent = yield* env.registry.resolve(row.agentId, row.agentDigest)
    const declared = declaredEvent(agent, request.event)
    if (declared !== undefined) {
      const decoded = yield* Effect.result(Schema.decodeUnknownEffect(declared.payload)(request.payload))
      if (decoded._tag === "Failure")
        return yield* refuse(
          "malformed-payload",
          `the payload of event "${request.event}" does not decode: ${decoded.failure.message}`,
        )
    }
    return { _tag: "Record", wakes: waitsFor(row, request.event) } as const
  })

/** `previewEvent`: what `receiveEvent` would do now, without writing. @internal */
export const makePreviewEvent = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.previewEvent")(function* (request: EventRequest) {
    const row = yield* env.ledger.lookup(request.submissionId)
    if (Option.isNone(row)) return yield* notFound(request.submissionId)
    return yield* decide(env, row.value, yield* takenBy(env, request)(row.value), request)
  })

const notFound = (submissionId: SubmissionId) =>
  Effect.fail(
    new SubmissionNotFound({ submissionId, message: `no submission ${submissionId} in this ledger` }),
  )

/** `receiveEvent`. @internal */
export const makeReceiveEvent = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.receiveEvent")(function* (
    request: EventRequest,
    options?: { readonly mayWake?: boolean },
  ) {
    const mayWake = options?.mayWake ?? true
    // What was decided, and the Thread of a Submission this call wrote to.
    const { delivery, wrote } = yield* env.exclusive(
      recordInput<
        Option.Option<string>,
        { readonly delivery: EventDelivery; readonly wrote?: ThreadId },
        EventFailure
      >(
        env,
        OPERATION,
        request.submissionId,
        notFound(request.submissionId),
        takenBy(env, request),
        (row, taken, now) =>
          Effect.map(decide(env, row, taken, request), (decision) => {
            if (decision._tag === "Replayed")
              return {
                _tag: "Done",
                value: { delivery: { _tag: "Received", receipt: decision.receipt } },
              } as const
            if (decision.wakes && !mayWake)
              return { _tag: "Done", value: { delivery: { _tag: "WakeNeeded" } } } as const
            const entry = {
              _tag: "EventReceived",
              event: request.event,
              eventId: request.eventId,
              payload: request.payload,
            } as const
            return {
              _tag: "Write",
              value: {
                delivery: { _tag: "Received", receipt: receipt(request, false, decision.wakes) },
                wrote: row.threadId,
              },
              write: decision.wakes
                ? env.ledger.transition(unownedFence(row, now, env.incarnation), "ready", {
                    entries: [entry],
                    now,
                  })
                : appendInput(env, row, entry, now),
            } as const
          }),
      ),
    )
    if (wrote !== undefined) {
      yield* env.hit("event:after-receive")
      if (delivery._tag === "Received" && delivery.receipt.resumed) yield* env.wake.notify(wrote)
    }
    return delivery
  })
