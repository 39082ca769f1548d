/**
 * Events an agent's program waits for (`AgentContext.waitForEvent`), sent from outside with
 * `ThreadClient.sendEvent`. An event declared on the agent (`define({ events })`) is decoded with
 * its Schema when it is sent, so a bad payload is refused before anything is written, and the
 * per-agent client (`client.agent(definition).sendEvent`) is typed by it. An event the agent does
 * not declare is accepted as JSON and decoded by the wait that takes it.
 *
 * An event is kept durably in its Submission's history when it arrives, also before the program
 * waits for it, and the first wait for its name takes it, in the order events arrived; each
 * event is taken once, and a repeated `eventId` is recorded once.
 */
import { type Effect, Schema } from "effect"
import type { JsonCodec } from "./AgentRegistration.ts"
import { SubmissionId } from "./Identifiers.ts"
import { EVENT_ID_LENGTH, EVENT_NAME_LENGTH, eventTextProblem } from "./internal/eventNames.ts"

/** An event named `Name` whose payload is an `A`, stored as the JSON its Schema encodes. */
export interface AgentEvent<Name extends string, A> {
  readonly _tag: "AgentEvent"
  readonly name: Name
  readonly payload: JsonCodec<A>
}

export declare namespace AgentEvent {
  /** Any event. */
  export type Any = AgentEvent<string, any>
  /** The payload type of an event. */
  export type Payload<E> = E extends AgentEvent<string, infer A> ? A : never
}

/**
 * Declares an event: its name (1 to 128 characters, no control character, no lone surrogate)
 * and its payload's Schema. A name outside the rule throws a `TypeError` naming it.
 */
export const make = <const Name extends string, A>(
  name: Name,
  payload: JsonCodec<A>,
): AgentEvent<Name, A> => {
  const problem = eventTextProblem("an event name", name)
  if (problem !== undefined) throw new TypeError(problem)
  return { _tag: "AgentEvent", name, payload }
}

/**
 * The longest event name. Every event name (sent, waited for or declared) has 1 to this many
 * UTF-16 code units, no control character (U+0000..U+001F, U+007F..U+009F) and no lone
 * surrogate; a new send that breaks the rule is refused with `InvalidRequest`, a new wait is a
 * defect naming it. Events and waits recorded before are replayed as they are.
 */
export const MAX_EVENT_NAME_LENGTH = EVENT_NAME_LENGTH

/** The longest event id; an id follows the rule of names (`MAX_EVENT_NAME_LENGTH`) otherwise. */
export const MAX_EVENT_ID_LENGTH = EVENT_ID_LENGTH

/** How long a wait for an event may last at most, in milliseconds (one year). */
export const MAX_EVENT_TIMEOUT_MILLIS = 31_536_000_000

/** Options of a wait for an event. */
export interface WaitOptions {
  /**
   * Gives up after this many milliseconds (1 to one year) from the moment the wait first ran,
   * failing with `EventTimeout`. The timeout is final: an event that arrives later is kept for
   * the next wait for it.
   */
  readonly timeoutMillis?: number
}

/** No event arrived before the wait's timeout; journaled, so every replay takes this branch. */
export class EventTimeout extends Schema.TaggedError<EventTimeout>()("EventTimeout", {
  event: Schema.String,
  /** The call position of the wait. */
  step: Schema.Int,
  /** The wait's due time (epoch ms). */
  timedOutAt: Schema.Finite,
  message: Schema.String,
}) {}

/**
 * The event taken by a wait for an undeclared event does not decode with the wait's Schema.
 * The event is consumed: the next wait takes the next one.
 */
export class EventPayloadInvalid extends Schema.TaggedError<EventPayloadInvalid>()("EventPayloadInvalid", {
  event: Schema.String,
  eventId: Schema.String,
  /** The call position of the wait. */
  step: Schema.Int,
  message: Schema.String,
}) {}

/**
 * What a program can wait for: an event its agent declares (typed by its Schema, decoded when it
 * was sent), or any name with the Schema to decode its payload with at the wait.
 */
export interface WaitForEventFunction<Ev extends AgentEvent.Any> {
  <E extends Ev>(event: E): Effect.Effect<AgentEvent.Payload<E>>
  <E extends Ev>(event: E, options: WaitOptions): Effect.Effect<AgentEvent.Payload<E>, EventTimeout>
  <A>(name: string, payload: JsonCodec<A>): Effect.Effect<A, EventPayloadInvalid>
  <A>(
    name: string,
    payload: JsonCodec<A>,
    options: WaitOptions,
  ): Effect.Effect<A, EventTimeout | EventPayloadInvalid>
}

/** What `sendEvent` answers. */
export class EventReceipt extends Schema.Class<EventReceipt>(
  "@effect-agent/platform-cloudflare/AgentEvent/EventReceipt",
)({
  submissionId: SubmissionId,
  eventId: Schema.String,
  /** The id was recorded before (in any state, settled included): nothing was written now. */
  replayed: Schema.Boolean,
  /** This event ended a wait for it: the Submission runs again. */
  resumed: Schema.Boolean,
}) {}

/**
 * Why an event was refused; nothing was written.
 * - `malformed-payload`: the payload does not decode with the declared event's Schema.
 * - `payload-bytes`: the payload is over `maxStoredValueBytes`.
 * - `settled`: the Submission settled, is settling or is being aborted: no wait can take the event.
 * - `joined`: a joined Submission runs no program of its own.
 * - `id-conflict`: the `eventId` was recorded for an event of another name (a repeat of the same
 *   name, whatever its payload, is answered `replayed`).
 */
export const EventRefusalReason = Schema.Literals([
  "malformed-payload",
  "payload-bytes",
  "settled",
  "joined",
  "id-conflict",
])
export type EventRefusalReason = typeof EventRefusalReason.Type

/** An event the Submission cannot take; nothing was written. */
export class EventRefused extends Schema.TaggedError<EventRefused>()("EventRefused", {
  submissionId: SubmissionId,
  event: Schema.String,
  reason: EventRefusalReason,
  message: Schema.String,
}) {}
