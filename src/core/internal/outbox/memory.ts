/**
 * The in-memory outbox. It shares the in-memory ledger's store, so an append with messages
 * checks the fence, adds the records and inserts the messages in one synchronous block, and a
 * settlement with messages inserts them right after the ledger's own synchronous block.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option } from "effect"
import type { MessageOutbox } from "../../MessageOutbox.ts"
import { SubmissionLedger } from "../../SubmissionLedger.ts"
import { appendInBlock } from "../history/memory.ts"
import { type MemoryStore, memoryStoreOf, storedTextOrder } from "../ledger/memoryStore.ts"
import { decodeReply, decodeStored, encodeNew, encodeReply, errorText, requireFinite } from "./codec.ts"
import { MessageOutboxError, OutboxMessage, sentBy } from "./model.ts"
import type { NewMessage } from "./model.ts"

/** Due order: earliest first, then by id (as the SQLite index orders ties). */
const dueOrder = (a: OutboxMessage, b: OutboxMessage) =>
  a.nextAttemptAt - b.nextAttemptAt || storedTextOrder(a.messageId, b.messageId)

const sentRank = (messageId: string) =>
  messageId.startsWith("admit:") ? 0 : messageId.startsWith("abort:") ? 1 : 2

const isSendable = (store: MemoryStore, row: OutboxMessage) =>
  row.acknowledgedAt === undefined &&
  (row.dependsOn === undefined || store.outbox.get(row.dependsOn)?.acknowledgedAt !== undefined)

/** Builds the in-memory outbox over the in-memory ledger's store. @internal */
export const makeMemoryOutbox = Effect.gen(function* () {
  const ledger = yield* SubmissionLedger
  const store = memoryStoreOf(ledger)
  if (store === undefined) {
    return yield* new MessageOutboxError({
      operation: "MessageOutbox.layerMemory",
      message: "the in-memory outbox needs the in-memory ledger (SubmissionLedger.layerMemory)",
    })
  }

  /** The rows as storage would return them; built before the synchronous block that inserts them. */
  const prepare = (operation: string, messages: ReadonlyArray<NewMessage>, now: number) =>
    Effect.forEach(messages, (message) =>
      Effect.flatMap(encodeNew(operation, message), ({ messageJson, targetJson }) =>
        decodeStored(operation, {
          message_id: message.messageId,
          target: targetJson,
          message: messageJson,
          depends_on: message.dependsOn ?? null,
          attempts: 0,
          next_attempt_at: now,
          created_at: now,
        }),
      ),
    )

  const insertNow = (rows: ReadonlyArray<OutboxMessage>) => {
    for (const row of rows) if (!store.outbox.has(row.messageId)) store.outbox.set(row.messageId, row)
  }

  /** As the SQLite outbox reads them: its admissions, its aborts, its settlement, each range by id. */
  const sentMessages = (submissionId: string) =>
    [...store.outbox.values()]
      .filter((row) => sentBy(row.messageId, submissionId))
      .sort(
        (a, b) => sentRank(a.messageId) - sentRank(b.messageId) || storedTextOrder(a.messageId, b.messageId),
      )

  const update = (messageId: string, patch: (row: OutboxMessage) => OutboxMessage | undefined) =>
    Effect.sync(() => {
      const row = store.outbox.get(messageId)
      const next = row === undefined ? undefined : patch(row)
      if (next !== undefined) store.outbox.set(messageId, next)
    })

  const service: typeof MessageOutbox.Service = {
    appendWithMessages: spanned("MessageOutbox.appendWithMessages")(
      function* (submissionId, entries, fence, now, messages) {
        const operation = "MessageOutbox.appendWithMessages"
        const rows = yield* prepare(operation, messages, now)
        return yield* appendInBlock(store, operation, { submissionId, entries, fence, now }, () =>
          insertNow(rows),
        )
      },
    ),

    // The ledger's settlement is one synchronous block; nothing runs between it and the insert.
    settleWithMessages: spanned("MessageOutbox.settleWithMessages")(
      function* (fence, settlement, preceding, messages) {
        const rows = yield* prepare("MessageOutbox.settleWithMessages", messages, settlement.settledAt)
        return yield* Effect.uninterruptible(
          Effect.tap(ledger.settle(fence, settlement, preceding), () => Effect.sync(() => insertNow(rows))),
        )
      },
    ),

    enqueue: spanned("MessageOutbox.enqueue")(function* (messages, now) {
      const operation = "MessageOutbox.enqueue"
      yield* requireFinite(operation, { now })
      const rows = yield* prepare(operation, messages, now)
      yield* Effect.sync(() => insertNow(rows))
    }),

    due: spanned("MessageOutbox.due")(function* (now, limit) {
      yield* requireFinite("MessageOutbox.due", { now, limit })
      return yield* Effect.sync(() =>
        [...store.outbox.values()]
          .filter((row) => row.nextAttemptAt <= now && isSendable(store, row))
          .sort(dueOrder)
          .slice(0, limit),
      )
    }),

    nextDue: Effect.sync(() => {
      const first = [...store.outbox.values()].filter((row) => isSendable(store, row)).sort(dueOrder)[0]
      return first === undefined ? Option.none<number>() : Option.some(first.nextAttemptAt)
    }),

    retry: spanned("MessageOutbox.retry")(function* (messageId, failure) {
      yield* requireFinite("MessageOutbox.retry", { nextAttemptAt: failure.nextAttemptAt })
      yield* update(messageId, (row) =>
        row.acknowledgedAt !== undefined
          ? undefined
          : new OutboxMessage({
              ...row,
              attempts: row.attempts + 1,
              nextAttemptAt: failure.nextAttemptAt,
              lastError: errorText(failure.error),
            }),
      )
    }),

    acknowledge: spanned("MessageOutbox.acknowledge")(function* (messageId, now) {
      yield* requireFinite("MessageOutbox.acknowledge", { now })
      yield* update(messageId, (row) =>
        row.acknowledgedAt !== undefined ? undefined : new OutboxMessage({ ...row, acknowledgedAt: now }),
      )
    }),

    lookup: spanned("MessageOutbox.lookup")(function* (messageId) {
      return yield* Effect.sync(() => Option.fromUndefinedOr(store.outbox.get(messageId)))
    }),

    rememberAnswer: spanned("MessageOutbox.rememberAnswer")(function* (messageId, reply, now) {
      const operation = "MessageOutbox.rememberAnswer"
      yield* requireFinite(operation, { now })
      // What survives storage: the reply through its JSON encoding.
      const stored = yield* Effect.flatMap(encodeReply(operation, reply), (json) =>
        decodeReply(operation, json),
      )
      yield* Effect.sync(() => {
        if (!store.answers.has(messageId)) store.answers.set(messageId, stored)
      })
    }),

    answerOf: spanned("MessageOutbox.answerOf")(function* (messageId) {
      return yield* Effect.sync(() => Option.fromUndefinedOr(store.answers.get(messageId)))
    }),

    messagesOf: spanned("MessageOutbox.messagesOf")(function* (submissionId) {
      return yield* Effect.sync(() => sentMessages(submissionId))
    }),

    // One synchronous block: the check, the ledger's removal and the messages' go together.
    removeSettled: spanned("MessageOutbox.removeSettled")(function* (items) {
      const ready = yield* Effect.sync(() =>
        items.filter((item) =>
          sentMessages(item.submissionId).every((row) => row.acknowledgedAt !== undefined),
        ),
      )
      return yield* Effect.uninterruptible(
        Effect.tap(ledger.removeSettled(ready), (removed) =>
          Effect.sync(() => {
            for (const id of removed) for (const row of sentMessages(id)) store.outbox.delete(row.messageId)
          }),
        ),
      )
    }),
  }
  return service
})
