/**
 * The SQLite outbox's shortcut for an empty outbox (its reads run no statement once one found
 * nothing to send) against a message enqueued while such a read is in flight: a pass reads the
 * next send time while an Attempt or a call enqueues beside it, and a fiber may yield between a
 * statement and its continuation. The message enqueued meanwhile is still found and sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { MessageOutbox } from "../../src/core/MessageOutbox.ts"
import { layerWithLedger } from "../../src/core/ThreadHistory.ts"
import { outboxStatements } from "../../src/core/internal/outbox/sql.ts"
import { abortMessage } from "./MessageOutboxConformance.ts"
import { holdAfter } from "./heldStatement.ts"
import { inObject } from "./SubmissionLedgerHarness.ts"

describe("SQLite outbox read while a message is enqueued", () => {
  it.effect("a message enqueued while a read of the next send time is in flight is still sent", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        const held = yield* holdAfter(storage, outboxStatements.nextDue, { armed: false })
        const sql = held.sql
        yield* Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          // One message sent and acknowledged: the outbox no longer knows it is empty.
          yield* outbox.enqueue([abortMessage("first")], 1_000)
          yield* outbox.acknowledge("first", 1_500)
          yield* held.arm
          const read = yield* Effect.forkChild(outbox.nextDue)
          yield* held.reached
          yield* outbox.enqueue([abortMessage("second")], 1_000)
          yield* held.release
          // The read in flight may answer either way; the ones after it see the message.
          yield* Fiber.join(read)
          expect(Option.isSome(yield* outbox.nextDue)).toBe(true)
          expect((yield* outbox.due(2_000, 10)).map((row) => row.messageId)).toEqual(["second"])
        }).pipe(
          Effect.provide(
            MessageOutbox.layer.pipe(Layer.provideMerge(layerWithLedger), Layer.provideMerge(sql)),
          ),
        )
      }),
    ),
  )
})
