/**
 * Events that arrive for a Submission before it is admitted (a workflow's deferred completed
 * before its execution starts), kept by the ledger under the key the Submission will be admitted
 * under and taken by its admission, in the admission's transaction, as the `EventReceived`
 * records an ordinary event writes. The rules both ledgers share: the bounds, the view an
 * operator reads, which agents' admissions take them.
 */
import { Context, Schema } from "effect"
import { AgentId, IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import type { HistoryEntry } from "../history/model.ts"
import type { SubmissionSnapshot } from "./model.ts"

/** Events an Object keeps for Submissions not yet admitted, at most. */
export const MAX_EARLY_EVENTS = 64

/** Bytes of payloads an Object keeps for Submissions not yet admitted, at most. */
export const MAX_EARLY_BYTES = 1_048_576

/** An event to keep for the Submission admitted (later) under `idempotencyKey`. */
export interface EarlyEvent {
  readonly threadId: ThreadId
  readonly idempotencyKey: IdempotencyKey
  /** Only an admission of this agent takes it. */
  readonly agentId: AgentId
  readonly event: string
  /** A second event of an id already kept under the key changes nothing. */
  readonly eventId: string
  /** The payload as JSON text. */
  readonly payload: string
  readonly now: number
}

/** One kept event, as a row of the SQLite ledger's table. @internal */
export interface EarlyRow {
  readonly threadId: ThreadId
  readonly idempotencyKey: IdempotencyKey
  readonly eventId: string
  readonly agentId: string
  readonly event: string
  readonly payload: string
  readonly bytes: number
  readonly keptAt: number
}

/** What `keepEarly` did: found the Submission admitted under the key, or kept the event. */
export type EarlyKeep =
  | { readonly _tag: "Admitted"; readonly row: SubmissionSnapshot }
  | { readonly _tag: "Kept"; readonly replayed: boolean }

/** Why an event could not be kept for a Submission not yet admitted. */
export const EarlyEventRefusalReason = Schema.Literals(["early-count", "early-bytes", "payload-bytes"])

/**
 * An event for a Submission not yet admitted that the Object will not keep: the Object keeps at
 * most `MAX_EARLY_EVENTS` of them (`early-count`) and `MAX_EARLY_BYTES` of payloads
 * (`early-bytes`), and no payload over `maxStoredValueBytes` (`payload-bytes`).
 */
export class EarlyEventRefused extends Schema.TaggedError<EarlyEventRefused>()("EarlyEventRefused", {
  threadId: ThreadId,
  idempotencyKey: IdempotencyKey,
  event: Schema.String,
  reason: EarlyEventRefusalReason,
  message: Schema.String,
}) {}

/** The events kept under one key for one agent. */
export const EarlyKey = Schema.Struct({
  threadId: ThreadId,
  idempotencyKey: IdempotencyKey,
  agentId: AgentId,
  /** The id the Submission will be admitted as: `forget` of it removes these events. */
  submissionId: SubmissionId,
  events: Schema.Int,
  bytes: Schema.Int,
  /** When the first of them was kept (epoch ms). */
  firstKeptAt: Schema.Finite,
})
export type EarlyKey = typeof EarlyKey.Type

/** What an Object keeps for Submissions not yet admitted, against its bounds. */
export const EarlyEvents = Schema.Struct({
  events: Schema.Int,
  bytes: Schema.Int,
  maxEvents: Schema.Int,
  maxBytes: Schema.Int,
  /** By Thread, key and agent, in the order SQLite stores their text. */
  keys: Schema.Array(EarlyKey),
})
export type EarlyEvents = typeof EarlyEvents.Type

/** What an Object keeps, from its keys, against its bounds. @internal */
export const earlyView = (keys: ReadonlyArray<EarlyKey>): EarlyEvents => ({
  events: keys.reduce((sum, key) => sum + key.events, 0),
  bytes: keys.reduce((sum, key) => sum + key.bytes, 0),
  maxEvents: MAX_EARLY_EVENTS,
  maxBytes: MAX_EARLY_BYTES,
  keys,
})

/** The refusal of one more event of `bytes` beside `kept` events of `stored` bytes. @internal */
export const earlyRefusal = (
  event: EarlyEvent,
  kept: { readonly events: number; readonly bytes: number },
  bytes: number,
): EarlyEventRefused | undefined => {
  const refuse = (reason: EarlyEventRefused["reason"], message: string) =>
    new EarlyEventRefused({
      threadId: event.threadId,
      idempotencyKey: event.idempotencyKey,
      event: event.event,
      reason,
      message,
    })
  if (kept.events >= MAX_EARLY_EVENTS)
    return refuse(
      "early-count",
      `this Object already keeps ${kept.events} events for executions not yet started; the limit (MAX_EARLY_EVENTS) is ${MAX_EARLY_EVENTS}`,
    )
  if (kept.bytes + bytes > MAX_EARLY_BYTES)
    return refuse(
      "early-bytes",
      `this Object keeps ${kept.bytes} bytes of events for executions not yet started; ${bytes} more would pass the limit (MAX_EARLY_BYTES) of ${MAX_EARLY_BYTES}`,
    )
  return undefined
}

/** A kept event as the record its admission writes. @internal */
export const receivedEntry = (row: {
  readonly event: string
  readonly eventId: string
  readonly payload: Schema.Json
}): HistoryEntry => ({ _tag: "EventReceived", event: row.event, eventId: row.eventId, payload: row.payload })

/** The view of nothing kept. @internal */
export const noEarlyEvents: EarlyEvents = {
  events: 0,
  bytes: 0,
  maxEvents: MAX_EARLY_EVENTS,
  maxBytes: MAX_EARLY_BYTES,
  keys: [],
}

/**
 * Whose admissions take kept events. Every agent's by default; the Object names its workflows'
 * agents only, so any other admission runs no statement for them.
 * @internal
 */
export interface EarlyEventAgentsService {
  readonly takes: (agentId: AgentId) => boolean
}

/** @internal */
export class EarlyEventAgents extends Context.Reference<EarlyEventAgentsService>(
  "@effect-agent/platform-cloudflare/EarlyEventAgents",
  { defaultValue: () => ({ takes: () => true }) },
) {}

/** Whether the admission of `admitted` takes kept events: a join reads none (it is its host's input). @internal */
export const takesEarly = (agents: EarlyEventAgentsService, admitted: SubmissionSnapshot): boolean =>
  admitted.state !== "joining" && agents.takes(admitted.agentId)
