/**
 * The Object call a Worker's engine sends a deferred's completion through when its execution
 * may not have started: the event for the Submission admitted under a key, sent to it if it is
 * there, else kept until it is admitted. Schemas only: the Worker's client imports them.
 */
import { Schema } from "effect"
import { EventReceipt } from "../../core/AgentEvent.ts"
import { EventText } from "../../core/internal/eventNames.ts"
import { AgentId, IdempotencyKey, ThreadId } from "../../core/Identifiers.ts"

/** @internal */
export const EarlyEventInput = Schema.Struct({
  threadId: ThreadId,
  /** The key the Submission is (or will be) admitted under: an execution id. */
  idempotencyKey: IdempotencyKey,
  /** The agent of that Submission: kept events reach only a Submission of this agent. */
  agentId: AgentId,
  event: EventText("an event name"),
  /** The event's identity: a repeat of an id already recorded or kept changes nothing. */
  eventId: EventText("an event id"),
  /** The payload in its encoded (JSON) form. */
  payload: Schema.Json,
})
/** @internal */
export type EarlyEventInput = typeof EarlyEventInput.Type

/**
 * What `sendEventByKey` did: sent the event to the admitted Submission (`Sent`, its receipt), or
 * kept it for the Submission's admission (`Kept`; `replayed` when that id was already kept).
 * @internal
 */
export const EarlyEventAnswer = Schema.Union([
  Schema.TaggedStruct("Sent", { receipt: EventReceipt }),
  Schema.TaggedStruct("Kept", { replayed: Schema.Boolean }),
])
/** @internal */
export type EarlyEventAnswer = typeof EarlyEventAnswer.Type

export { EarlyEventRefusalReason, EarlyEventRefused } from "../../core/internal/ledger/early.ts"
