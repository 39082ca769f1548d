/**
 * The delivery driver: the `ThreadMessageDelivery` hook that drains this Object's outbox from
 * the maintenance pass's auxiliary scope.
 *
 * A wave reads the due messages (by the outbox's due index) and delivers at most `concurrency`
 * of them at a time through `RoutedPort`, each bounded by its own timeout and admitted only
 * if that timeout fits before the event's dispatch horizon. Before a delivery returns its
 * outcome is durable: the reply recorded and the message acknowledged, or one more attempt
 * and its retry time (capped exponential backoff). So the pass joins the driver without a
 * timer of its own, and `pendingDeadline` (the earliest sendable message) keeps an alarm for
 * what is left; an Object with nothing to send has none. While native work runs it sends again
 * only when nudged: an Attempt about to wait for the answer to what it just enqueued asks for it.
 *
 * Every write goes through the mutation gate and none is held across a call to another
 * Object. Recording a reply that changes native work (a refused child, a settlement marker's
 * acknowledgement) advances the generation; a retry or a plain acknowledgement does not.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, DateTime, Effect } from "effect"
import type { Scope } from "effect"
import { answers, type DeliveryOutcome, type OutboxMessage } from "../../core/internal/outbox/model.ts"
import type { DurableWorkerFailure } from "../../core/DurableAgentRuntime.ts"
import type { MessageOutbox } from "../../core/MessageOutbox.ts"
import type { RuntimeFailpoint } from "../../core/RuntimeFailpoint.ts"
import type { RoutedPort } from "../../RoutedPort.ts"
import { alarmErrorFromCause, type DurableAlarmError } from "../maintenance/errors.ts"
import type { ThreadMutationGate } from "../maintenance/gate.ts"
import type { ThreadMessageDeliveryService } from "../maintenance/hooks.ts"
import { type PortFailure, PortUnavailable } from "../port/portErrors.ts"

/** The sender's side of deliveries: what the runtime records for each outcome. @internal */
export interface DeliveryRecorder {
  /** Whether recording `outcome` changes native work, so it must advance the generation. */
  readonly invalidatesRecovery: (row: OutboxMessage, outcome: DeliveryOutcome) => boolean
  /** Whether a message that can never be delivered ends (recorded as such) rather than waits. */
  readonly undeliverableIsFinal: (row: OutboxMessage) => boolean
  /** Records the outcome and acknowledges the message. */
  readonly record: (row: OutboxMessage, outcome: DeliveryOutcome) => Effect.Effect<void, DurableWorkerFailure>
}

/** @internal */
export interface DeliverySettings {
  readonly attemptTimeoutMillis: number
  readonly retryBaseMillis: number
  readonly retryCapMillis: number
  /** Deliveries in flight at once. */
  readonly concurrency: number
  /** Messages read per wave. */
  readonly waveSize: number
}

/** The delay before attempt `attempts + 1`, after `attempts` failures. @internal */
export const retryDelay = (settings: DeliverySettings, failures: number): number =>
  Math.min(settings.retryCapMillis, settings.retryBaseMillis * 2 ** Math.min(failures, 30))

/** A failure that the same message can never get past. */
const isPermanent = (failure: PortFailure) =>
  failure._tag === "PortUnreachable" ||
  (failure._tag === "PortProtocolError" && failure.reason === "malformed-request")

const describeFailure = (failure: PortFailure) =>
  failure._tag === "PortProtocolError" ? `${failure.reason}: ${failure.message}` : failure.message

/** @internal */
export const makeMessageDelivery = (deps: {
  readonly outbox: MessageOutbox["Service"]
  readonly port: RoutedPort["Service"]
  readonly gate: ThreadMutationGate["Service"]
  readonly recorder: DeliveryRecorder
  readonly settings: DeliverySettings
  /** The runtime's failpoints: `delivery:after-reply` sits between a reply and its record. */
  readonly hit?: RuntimeFailpoint["Service"]["hit"]
  /**
   * Returns when an Attempt of this incarnation asks for what it just enqueued to be sent while
   * native work still runs (a child's start it is about to wait for); never, without it.
   */
  readonly nudged?: Effect.Effect<void>
}): ThreadMessageDeliveryService => {
  const { outbox, port, gate, recorder, settings } = deps
  const afterReply = (deps.hit ?? (() => Effect.void))("delivery:after-reply").pipe(
    Effect.mapError((error) => alarmErrorFromCause("record message delivery", error)),
  )

  const storage = <A, E extends { readonly message: string }>(
    operation: string,
    effect: Effect.Effect<A, E>,
  ) => Effect.mapError(effect, (error) => alarmErrorFromCause(operation, error))

  const record = (row: OutboxMessage, outcome: DeliveryOutcome) =>
    storage(
      "record message delivery",
      gate.withMutation(recorder.record(row, outcome), {
        invalidatesRecovery: recorder.invalidatesRecovery(row, outcome),
      }),
    )

  const retry = (row: OutboxMessage, error: string) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const nextAttemptAt = now + retryDelay(settings, row.attempts)
      yield* Effect.logWarning("Message delivery failed; it is retried at a later alarm", {
        messageId: row.messageId,
        attempts: row.attempts + 1,
        nextAttemptAt,
        error,
      })
      yield* storage(
        "schedule message retry",
        gate.withMutation(outbox.retry(row.messageId, { nextAttemptAt, error }), {
          invalidatesRecovery: false,
        }),
      )
    })

  const deliver = (row: OutboxMessage) =>
    port.call(row.target, { messageId: row.messageId, request: row.message }).pipe(
      Effect.timeoutOrElse({
        duration: settings.attemptTimeoutMillis,
        orElse: () =>
          Effect.fail(
            new PortUnavailable({ message: `no answer within ${settings.attemptTimeoutMillis} ms` }),
          ),
      }),
      Effect.matchEffect({
        onSuccess: (reply) =>
          answers(row.message, reply)
            ? Effect.andThen(afterReply, record(row, { _tag: "Replied", reply }))
            : retry(row, `the receiver answered ${row.message._tag} with ${reply._tag}`),
        onFailure: (failure) => {
          const error = describeFailure(failure)
          if (!isPermanent(failure)) return retry(row, error)
          const final = recorder.undeliverableIsFinal(row)
          return Effect.andThen(
            Effect.logError(
              final
                ? "Message can never be delivered; its failure is recorded"
                : "Message cannot be delivered until the receiver's code or binding changes",
              { messageId: row.messageId, error },
            ),
            final ? record(row, { _tag: "Undeliverable", message: error }) : retry(row, error),
          )
        },
      }),
    )

  /** One wave: the due messages whose attempt fits before the horizon. */
  const wave = (dispatchUntil: DateTime.Utc): Effect.Effect<void, DurableAlarmError> =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const due = yield* storage("read due messages", outbox.due(now, settings.waveSize))
      const horizon = DateTime.toEpochMillis(dispatchUntil)
      yield* Effect.forEach(
        due,
        (row) =>
          Effect.flatMap(Clock.currentTimeMillis, (at) =>
            at + settings.attemptTimeoutMillis > horizon ? Effect.void : deliver(row),
          ),
        { concurrency: settings.concurrency, discard: true },
      )
    })

  /** Until native work ends, a wave at each nudge. */
  const untilFinished = (sourceFinished: Effect.Effect<void>, dispatchUntil: DateTime.Utc) => {
    const nudged = deps.nudged
    if (nudged === undefined) return sourceFinished
    const finished = Effect.as(sourceFinished, true)
    const next = Effect.raceFirst(finished, Effect.as(nudged, false))
    const loop: Effect.Effect<void, DurableAlarmError> = Effect.flatMap(next, (done) =>
      done ? Effect.void : Effect.andThen(wave(dispatchUntil), loop),
    )
    return loop
  }

  return {
    // A wave at once, one at each nudge during native work, and one more for what native work
    // enqueued during this event.
    drainUntil: (sourceFinished: Effect.Effect<void>, dispatchUntil: DateTime.Utc) =>
      wave(dispatchUntil).pipe(
        Effect.andThen(untilFinished(sourceFinished, dispatchUntil)),
        Effect.andThen(wave(dispatchUntil)),
        withSpanFast("ThreadMessageDelivery.drainUntil"),
      ) as Effect.Effect<void, DurableAlarmError, Scope.Scope>,
    pendingDeadline: storage("read message deadline", outbox.nextDue),
  }
}
