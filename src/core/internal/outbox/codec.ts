/** Encoding of outbox rows, shared by both outboxes so each returns what survives storage. @internal */
import { Effect, Schema } from "effect"
import {
  MessageOutboxError,
  ObjectAddress,
  OutboxMessage,
  ThreadMessage,
  ThreadMessageReply,
} from "./model.ts"
import type { NewMessage } from "./model.ts"

const encodeMessageJson = Schema.encodeEffect(Schema.fromJsonString(ThreadMessage))
const encodeTargetJson = Schema.encodeEffect(Schema.fromJsonString(ObjectAddress))
const decodeRow = Schema.decodeUnknownEffect(OutboxMessage)
const replyJson = Schema.fromJsonString(ThreadMessageReply)

/** A reply as stored JSON. @internal */
export const encodeReply = (operation: string, reply: ThreadMessageReply) =>
  Schema.encodeEffect(replyJson)(reply).pipe(
    Effect.mapError(outboxError(operation, "the answer does not encode")),
  )

/** A stored reply; one that does not decode is an error. @internal */
export const decodeReply = (operation: string, json: unknown) =>
  Schema.decodeUnknownEffect(replyJson)(json).pipe(
    Effect.mapError(outboxError(operation, "a remembered answer does not decode")),
  )

/** Longest failure text kept on a row. */
const MAX_ERROR_LENGTH = 300

/** @internal */
export const outboxError = (operation: string, message: string) => (cause: unknown) =>
  new MessageOutboxError({ operation, message, cause })

/** A message and its target as stored JSON. @internal */
export const encodeNew = (operation: string, message: NewMessage) =>
  Effect.gen(function* () {
    const fail = outboxError(operation, `message ${message.messageId} does not encode`)
    return {
      messageJson: yield* Effect.mapError(encodeMessageJson(message.message), fail),
      targetJson: yield* Effect.mapError(encodeTargetJson(message.target), fail),
    }
  })

/** Decodes a stored row; a row that does not decode is an error, never skipped. @internal */
export const decodeStored = (operation: string, row: Readonly<Record<string, unknown>>) =>
  Effect.gen(function* () {
    const parse = (column: string) =>
      Effect.try({
        try: () => JSON.parse(String(row[column])) as unknown,
        catch: outboxError(operation, `outbox ${column} of ${String(row["message_id"])} is not JSON`),
      })
    const nullable = (value: unknown) => (value === null || value === undefined ? {} : undefined)
    const optional = <K extends string>(key: K, value: unknown) =>
      nullable(value) ?? ({ [key]: value } as Record<K, unknown>)
    return yield* decodeRow({
      messageId: row["message_id"],
      target: yield* parse("target"),
      message: yield* parse("message"),
      attempts: row["attempts"],
      nextAttemptAt: row["next_attempt_at"],
      createdAt: row["created_at"],
      ...optional("dependsOn", row["depends_on"]),
      ...optional("acknowledgedAt", row["acknowledged_at"]),
      ...optional("lastError", row["last_error"]),
    }).pipe(
      Effect.mapError((cause) =>
        outboxError(
          operation,
          `outbox message ${String(row["message_id"])} does not decode: ${cause.message}`,
        )(cause),
      ),
    )
  })

/** The failure text a row keeps: one short line. @internal */
export const errorText = (error: string): string => {
  const line = error.replace(/\s+/g, " ").trim()
  return line.length > MAX_ERROR_LENGTH ? `${line.slice(0, MAX_ERROR_LENGTH)}…` : line
}

/** Refuses an instant that is not a finite number before it reaches storage. @internal */
export const requireFinite = (operation: string, values: Readonly<Record<string, number>>) => {
  for (const [name, value] of Object.entries(values)) {
    if (!Number.isFinite(value))
      return Effect.fail(
        new MessageOutboxError({ operation, message: `${name} must be a finite number, got ${value}` }),
      )
  }
  return Effect.void
}
