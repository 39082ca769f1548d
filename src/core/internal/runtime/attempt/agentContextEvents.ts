/**
 * The calls of an `AgentContext` that wait for the outside world: `waitForEvent` and
 * `requestApproval`, each with an optional timeout. Like every wait, no fiber waits: the
 * Attempt ends in a park (stable without a timeout, timed with one) and a later Attempt replays
 * to the call.
 *
 * An event wait at call position `k` takes, in order: its journaled consumption
 * (`EventConsumed{k}`) or timeout (`EventWaitTimedOut{k}`); else the earliest event of its name
 * no wait took (staged `EventConsumed`: the history is append-only, so recomputing "earliest
 * not taken" after a lost staged record finds the same event); else, when the row's wait at `k`
 * is due, the timeout, appended at once so a later event cannot change the branch a replay
 * takes; else a park, whose transaction checks for an event that arrived since the journal was
 * read.
 */
import { Clock, Effect, Schema } from "effect"
import {
  type AgentEvent,
  EventPayloadInvalid,
  EventTimeout,
  MAX_EVENT_TIMEOUT_MILLIS,
  type WaitOptions,
} from "../../../AgentEvent.ts"
import { MAX_APPROVAL_TIMEOUT_MILLIS } from "../../../AgentContext.ts"
import type { JsonCodec } from "../../../AgentRegistration.ts"
import type { WaitRecord } from "../../ledger/model.ts"
import { ApprovalDecision, ApprovalTimeout } from "../shared/model.ts"
import { eventsNamed, firstUnconsumed, type Journal } from "../shared/journal.ts"
import { loadJournal } from "../shared/runtimeEnv.ts"
import { boundary, guard, halt, journalMismatch, unstorable } from "./attemptState.ts"
import type { ContextCalls } from "./contextCalls.ts"

type Received = Journal["events"][number]

/** A timeout option checked: `undefined` for none; a defect when it is out of range. */
const timeoutOf = (what: string, options: WaitOptions | undefined, maximum: number) =>
  Effect.suspend(() => {
    const millis = options?.timeoutMillis
    if (millis === undefined) return Effect.succeed(undefined)
    return Number.isFinite(millis) && millis >= 1 && millis <= maximum
      ? Effect.succeed(millis)
      : Effect.die(new RangeError(`${what}: timeoutMillis must be 1 to ${maximum}, got ${millis}`))
  })

/** Builds the waits for events and approvals over what the context's calls share. @internal */
export const makeEventCalls = (calls: ContextCalls) => {
  const { attempt, append, hit, recorded, next, wait } = calls
  const { submissionId } = attempt.claim
  /** The journal events are read from: the Attempt's, then a fresh read when it lacks one. */
  let events = calls.journal
  /** Events this Attempt took whose `EventConsumed` is staged, not yet journaled. */
  const taken = new Set<string>()

  const waitAt = (position: number): WaitRecord | undefined =>
    wait !== undefined && "step" in wait && wait.step === position ? wait : undefined

  /** The payload of a taken event, decoded with the wait's Schema. */
  const decodeTaken = <A>(codec: JsonCodec<A>, received: Received, step: number, declared: boolean) =>
    Schema.decodeUnknownEffect(codec)(received.payload).pipe(
      Effect.catch((cause) =>
        // A declared event was decoded with the same Schema when it was sent (the digest pins it).
        declared
          ? journalMismatch(
              attempt,
              `event ${received.eventId} "${received.event}" does not decode: ${cause.message}`,
            )
          : Effect.fail(
              new EventPayloadInvalid({
                event: received.event,
                eventId: received.eventId,
                step,
                message: `event "${received.event}" (${received.eventId}) does not decode: ${cause.message}`,
              }),
            ),
      ),
    )

  /** The earliest event of `name` not taken: from the journal read so far, then a fresh read. */
  const available = (name: string) =>
    Effect.gen(function* () {
      const known = firstUnconsumed(events, name, taken)
      if (known !== undefined) return known
      // It may have arrived after this Attempt read its journal (or the first Attempt read none).
      events = yield* guard(attempt, loadJournal(attempt.env, submissionId))
      return firstUnconsumed(events, name, taken)
    })

  const waitFor = <A>(
    name: string,
    codec: JsonCodec<A>,
    options: WaitOptions | undefined,
    declared: boolean,
  ): Effect.Effect<A, EventTimeout | EventPayloadInvalid> =>
    Effect.gen(function* () {
      const timeoutMillis = yield* timeoutOf(`waitForEvent "${name}"`, options, MAX_EVENT_TIMEOUT_MILLIS)
      const position = next()
      const found = yield* recorded(position, "event wait", name)
      const timedOut = (dueAt: number) =>
        new EventTimeout({
          event: name,
          step: position,
          timedOutAt: dueAt,
          message: `no event "${name}" arrived before ${new Date(dueAt).toISOString()}`,
        })
      if (found?.eventTimedOut !== undefined) return yield* timedOut(found.eventTimedOut.dueAt)
      const consumed = found?.eventConsumed
      if (consumed !== undefined) {
        // Received before it was taken: in any journal that holds the consumption.
        const received = events.events.find((event) => event.eventId === consumed.eventId)
        if (received === undefined)
          return yield* journalMismatch(
            attempt,
            `call ${position} took event ${consumed.eventId}, never received`,
          )
        return yield* decodeTaken(codec, received, position, declared)
      }
      const parked = waitAt(position)
      if (parked !== undefined && (parked._tag !== "Event" || parked.event !== name)) {
        return yield* journalMismatch(
          attempt,
          `call ${position} parked as ${parked._tag}, but the program asked for event wait "${name}"`,
        )
      }
      const received = yield* available(name)
      if (received !== undefined) {
        if (parked === undefined) yield* boundary(attempt)
        taken.add(received.eventId)
        // Evidence with the next record: a lost one is recomputed the same (see the header).
        attempt.staged = [
          ...attempt.staged,
          { _tag: "EventConsumed", step: position, event: name, eventId: received.eventId },
        ]
        return yield* decodeTaken(codec, received, position, declared)
      }
      const now = yield* Clock.currentTimeMillis
      const awaiting = {
        event: name,
        seen: eventsNamed(events, name),
        ...(events.through === undefined ? {} : { after: events.through }),
      }
      if (parked?._tag === "Event") {
        if (parked.dueAt !== undefined && parked.dueAt <= now) {
          yield* append({ _tag: "EventWaitTimedOut", step: position, event: name, dueAt: parked.dueAt })
          yield* hit("event:after-timeout-append")
          return yield* timedOut(parked.dueAt)
        }
        // Woken before its time, or without its event: the same wait again.
        return yield* park(parked, awaiting)
      }
      // A later wait parked since: this one ended, and its end is in the journal.
      if (wait !== undefined && "step" in wait && wait.step > position)
        return yield* journalMismatch(attempt, `call ${position} waited for "${name}", which never ended`)
      yield* boundary(attempt)
      return yield* park(
        {
          _tag: "Event",
          step: position,
          event: name,
          ...(timeoutMillis === undefined ? {} : { dueAt: now + timeoutMillis }),
          since: now,
        },
        awaiting,
      )
    })

  /** Ends the Attempt in the wait: timed when it has a due time, stable otherwise. */
  const park = (
    parked: Extract<WaitRecord, { readonly _tag: "Event" }>,
    awaiting: { readonly event: string; readonly seen: number; readonly after?: number },
  ) =>
    parked.dueAt === undefined
      ? halt(attempt, { _tag: "Suspend", awaiting, wait: parked })
      : halt(attempt, { _tag: "Wait", park: { wait: parked, dueAt: parked.dueAt, entries: [], awaiting } })

  const waitForEvent = (
    eventOrName: AgentEvent.Any | string,
    schemaOrOptions?: JsonCodec<unknown> | WaitOptions,
    options?: WaitOptions,
  ) =>
    typeof eventOrName === "string"
      ? waitFor(eventOrName, schemaOrOptions as JsonCodec<unknown>, options, false)
      : waitFor(eventOrName.name, eventOrName.payload, schemaOrOptions as WaitOptions | undefined, true)

  const requestApproval = (
    payload: Schema.Json,
    options?: { readonly timeoutMillis?: number },
  ): Effect.Effect<ApprovalDecision, ApprovalTimeout> =>
    Effect.gen(function* () {
      const timeoutMillis = yield* timeoutOf("requestApproval", options, MAX_APPROVAL_TIMEOUT_MILLIS)
      const position = next()
      const found = yield* recorded(position, "approval request", undefined)
      const closed = (dueAt: number) =>
        new ApprovalTimeout({
          step: position,
          timedOutAt: dueAt,
          message: `no decision on the approval request at call ${position} before ${new Date(dueAt).toISOString()}`,
        })
      const requested = found?.approvalRequested
      if (requested === undefined) {
        // Its record keeps the payload: one too large for it could never be written.
        const unfit = unstorable(attempt, `the payload of the approval request at call ${position}`, payload)
        if (unfit !== undefined) return yield* Effect.die(new RangeError(`requestApproval: ${unfit}`))
        yield* boundary(attempt)
        const now = yield* Clock.currentTimeMillis
        const dueAt = timeoutMillis === undefined ? undefined : now + timeoutMillis
        yield* append({
          _tag: "ApprovalRequested",
          step: position,
          payload,
          ...(dueAt === undefined ? {} : { dueAt }),
        })
        yield* hit("approval:after-request-append")
        return yield* suspendFor(position, dueAt, now)
      }
      const decision = found?.approvalResolved
      if (decision !== undefined) {
        if (!decision.approved) {
          return yield* halt(attempt, {
            _tag: "Denied",
            ...(decision.note === undefined ? {} : { note: decision.note }),
          })
        }
        return new ApprovalDecision({
          approved: true,
          ...(decision.note === undefined ? {} : { note: decision.note }),
        })
      }
      if (found?.approvalTimedOut !== undefined) return yield* closed(found.approvalTimedOut.dueAt)
      const now = yield* Clock.currentTimeMillis
      // The due time is journaled with the request: a replay never moves it.
      if (requested.dueAt !== undefined && requested.dueAt <= now) {
        yield* append({ _tag: "ApprovalTimedOut", step: position, dueAt: requested.dueAt })
        yield* hit("approval:after-timeout-append")
        return yield* closed(requested.dueAt)
      }
      const parked = waitAt(position)
      return yield* suspendFor(position, requested.dueAt, parked?._tag === "Approval" ? parked.since : now)
    })

  /** Parks on the approval request at `step`: stable, or timed until `dueAt`. */
  const suspendFor = (step: number, dueAt: number | undefined, since: number) =>
    dueAt === undefined
      ? halt(attempt, { _tag: "Suspend" })
      : halt(attempt, {
          _tag: "Wait",
          park: { wait: { _tag: "Approval", step, dueAt, since }, dueAt, entries: [] },
        })

  return { waitForEvent, requestApproval }
}
