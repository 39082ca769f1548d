/**
 * The typed view of one agent on a Thread's client: its input is encoded with the agent's
 * input Schema in the Worker, before it is sent, and a settlement's output is decoded with its
 * output Schema, so both ends of a call carry the agent's types (as `effect/workflow`'s
 * `Workflow.execute` does). A value the Schema refuses is a typed error, never a defect.
 */
import { Effect, Schema } from "effect"
import type { AgentEvent } from "../../core/AgentEvent.ts"
import type { JsonCodec } from "../../core/AgentRegistration.ts"
import type { Receipt } from "../../core/DurableAgentRuntime.ts"
import type { Settlement } from "../../core/SubmissionLedger.ts"
import type { CallName, CallRequestEncoded, CallSuccess } from "../object/calls.ts"
import { InvalidRequest } from "../object/callErrors.ts"
import type { ThreadClientError } from "../object/rpc.ts"

/** The input did not encode with the agent's input Schema; nothing was sent. */
export class InvalidAgentInput extends Schema.TaggedError<InvalidAgentInput>()("InvalidAgentInput", {
  agentId: Schema.String,
  message: Schema.String,
}) {}

/**
 * The settled output did not decode with the agent's output Schema: the Submission settled
 * under another contract (an older version of the agent).
 */
export class InvalidAgentOutput extends Schema.TaggedError<InvalidAgentOutput>()("InvalidAgentOutput", {
  agentId: Schema.String,
  submissionId: Schema.String,
  message: Schema.String,
}) {}

/**
 * What the typed view needs of an agent: its id, its Schemas and the events it declares (an
 * `AgentDefinition` has them).
 */
export interface AgentContract<I, O, Ev extends AgentEvent.Any = never> {
  readonly id: string
  readonly input: JsonCodec<I>
  readonly output: JsonCodec<O>
  readonly events?: ReadonlyArray<Ev>
}

/** Options of `sendEvent`. */
export interface SendEventOptions {
  /**
   * The event's identity (1 to 256 characters): a repeat of a recorded id changes nothing and
   * answers `replayed`. By default a UUID drawn when `sendEvent(...)` is called, so retrying
   * the returned Effect sends the same event.
   */
  readonly eventId?: string
}

/** Options of `submit`. */
export interface SubmitOptions {
  /** Admission is idempotent by this key (1 to 256 characters, not starting with `schedule:`). */
  readonly idempotencyKey: string
  readonly mode?: SubmitMode
  /**
   * Runs no earlier than this instant (epoch milliseconds, by the Object's clock): admitted at
   * once (its receipt, its key), it keeps its place in its Thread's lane and holds the lane until
   * it has run. A `join` cannot wait (`JoinRefused`, `delayed`); `join-or-queue` queues it.
   */
  readonly notBefore?: number
}

/**
 * When a schedule's occurrences happen: a cron expression (Effect's `Cron`: five fields, or six
 * with seconds) in `timeZone` (an IANA name, UTC by default), or every `everyMillis` (1 second
 * to 1 year) from the moment it is scheduled. `missed` decides what a pass does after downtime:
 * `latest` (the default) runs the latest missed occurrence once, `skip` runs none that is more
 * than a minute late and waits for the next one. `overlap` decides what an occurrence does that
 * falls due while the schedule's previous one has not settled: `queue` (the default) admits it
 * behind that one, `skip` passes over it (the schedule's `lastRefusal`, reason `overlap`).
 */
export type ScheduleOptions = {
  /** The schedule's name in its Object; scheduling the same id again replaces it. */
  readonly scheduleId: string
  readonly missed?: "latest" | "skip"
  readonly overlap?: "queue" | "skip"
} & (
  | { readonly cron: string; readonly timeZone?: string; readonly everyMillis?: never }
  | { readonly everyMillis: number; readonly cron?: never; readonly timeZone?: never }
)

/** A settlement whose output, when it completed, is the agent's decoded output. */
export type AgentSettlement<O> =
  | (Omit<Settlement, "outcome" | "output"> & { readonly outcome: "completed"; readonly output: O })
  | (Omit<Settlement, "outcome" | "output"> & { readonly outcome: "failed" | "aborted" })

/** How a submission is admitted: queued (the default), joined to the running head, or either. */
export type SubmitMode = "queue" | "join" | "join-or-queue"

/** The calls of one agent on one Thread, typed by its Schemas. */
export interface AgentClient<I, O, Ev extends AgentEvent.Any = never> {
  readonly agentId: string
  /** Admits `input` for this agent; the same idempotency key returns the original receipt. */
  readonly submit: (
    input: I,
    options: SubmitOptions,
  ) => Effect.Effect<Receipt, ThreadClientError<"submit"> | InvalidAgentInput>
  /**
   * Schedules this agent with `input` on this Thread: every occurrence admits one Submission,
   * keyed `schedule:<scheduleId>:<occurrence ms>`, so no occurrence is admitted twice. A cron
   * or interval that cannot be used is refused with `InvalidSchedule`; an input the agent's
   * Schema refuses with `InvalidAgentInput` (here) or `AdmissionRefused` (in the Object).
   */
  readonly schedule: (
    input: I,
    options: ScheduleOptions,
  ) => Effect.Effect<CallSuccess<"schedule">, ThreadClientError<"schedule"> | InvalidAgentInput>
  /**
   * Waits up to `timeoutMillis` (at most 60 s per call) for the settlement of one of this
   * agent's Submissions (another agent's is not found), its output decoded.
   */
  readonly awaitSettlement: (
    submissionId: string,
    timeoutMillis: number,
  ) => Effect.Effect<AgentSettlement<O>, ThreadClientError<"awaitSettlement"> | InvalidAgentOutput>
  /**
   * Sends one of the agent's declared events to one of its Submissions: the payload is encoded
   * with the event's Schema here (`InvalidRequest` if it does not encode) and decoded again in
   * the Object. See `ThreadClient.sendEvent`.
   */
  readonly sendEvent: <E extends Ev>(
    submissionId: string,
    event: E,
    payload: AgentEvent.Payload<E>,
    options?: SendEventOptions,
  ) => Effect.Effect<CallSuccess<"sendEvent">, ThreadClientError<"sendEvent">>
}

/** @internal How the view reaches the Object: a call of the table by name. */
export type Invoke = <K extends CallName>(
  name: K,
  request: CallRequestEncoded<K>,
) => Effect.Effect<CallSuccess<K>, ThreadClientError<K>>

/** @internal */
export const makeAgentClient = <I, O, Ev extends AgentEvent.Any>(
  invoke: Invoke,
  threadId: string,
  agent: AgentContract<I, O, Ev>,
): AgentClient<I, O, Ev> => {
  const encodeInput = Schema.encodeEffect(agent.input)
  const decodeOutput = Schema.decodeUnknownEffect(agent.output)
  return {
    agentId: agent.id,
    submit: (input, options) =>
      encodeInput(input).pipe(
        Effect.mapError((error) => new InvalidAgentInput({ agentId: agent.id, message: error.message })),
        Effect.flatMap((encoded) =>
          invoke("submit", { threadId, agentId: agent.id, input: encoded, ...options }),
        ),
      ),
    schedule: (input, options) =>
      encodeInput(input).pipe(
        Effect.mapError((error) => new InvalidAgentInput({ agentId: agent.id, message: error.message })),
        Effect.flatMap((encoded) =>
          invoke("schedule", { threadId, agentId: agent.id, input: encoded, ...options }),
        ),
      ),
    awaitSettlement: (submissionId, timeoutMillis) =>
      Effect.gen(function* () {
        const settlement = yield* invoke("awaitSettlement", {
          threadId,
          submissionId,
          timeoutMillis,
          agentId: agent.id,
        })
        const { output, outcome, ...rest } = settlement
        if (outcome !== "completed") return { ...rest, outcome }
        const decoded = yield* decodeOutput(output).pipe(
          Effect.mapError(
            (error) => new InvalidAgentOutput({ agentId: agent.id, submissionId, message: error.message }),
          ),
        )
        return { ...rest, outcome, output: decoded }
      }),
    sendEvent: (submissionId, event, payload, options) => {
      const eventId = options?.eventId ?? crypto.randomUUID()
      return Schema.encodeEffect(event.payload)(payload).pipe(
        Effect.mapError(
          (error) =>
            new InvalidRequest({
              entryPoint: "sendEvent",
              message: `the payload of event "${event.name}" does not encode: ${error.message}`,
            }),
        ),
        Effect.flatMap((encoded) =>
          invoke("sendEvent", {
            threadId,
            submissionId,
            event: event.name,
            eventId,
            payload: encoded,
            agentId: agent.id,
          }),
        ),
      )
    },
  }
}
