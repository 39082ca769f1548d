/**
 * The SQLite outbox's shortcut for an empty outbox (its reads run no statement once one found
 * nothing to send) against a message enqueued while such a read is in flight: a pass reads the
 * next send time while an Attempt or a call enqueues beside it, and a fiber may yield between a
 * statement and its continuation. The message enqueued meanwhile is still found and sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient } from "effect/sql/SqlClient"
import { MessageOutbox } from "../../src/core/MessageOutbox.ts"
import { layerWithLedger } from "../../src/core/ThreadHistory.ts"
import { DIRECT_ROWS, type DirectSqlClient, type RowsRunner } from "../../src/core/internal/directRows.ts"
import { outboxStatements } from "../../src/core/internal/outbox/sql.ts"
import { makeSqlClient } from "../../src/internal/object/sqlClient.ts"
import { abortMessage } from "./MessageOutboxConformance.ts"
import { inObject } from "./SubmissionLedgerHarness.ts"

describe("SQLite outbox read while a message is enqueued", () => {
  it.effect("a message enqueued while a read of the next send time is in flight is still sent", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        const reached = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        let hold = false
        // Once armed, the next-send-time read yields after its statement, once, until released.
        const sql = Layer.effect(
          SqlClient,
          Effect.map(makeSqlClient(storage), (client) => {
            const direct = (client as DirectSqlClient)[DIRECT_ROWS] as RowsRunner
            const runner: RowsRunner = (text, params) =>
              Effect.tap(direct(text, params), () =>
                text === outboxStatements.nextDue && hold
                  ? Effect.sync(() => (hold = false)).pipe(
                      Effect.andThen(Deferred.succeed(reached, undefined)),
                      Effect.andThen(Deferred.await(release)),
                    )
                  : Effect.void,
              ) as never
            return Object.assign(client, { [DIRECT_ROWS]: runner })
          }),
        ).pipe(Layer.provide(Reactivity.layer))
        yield* Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          // One message sent and acknowledged: the outbox no longer knows it is empty.
          yield* outbox.enqueue([abortMessage("first")], 1_000)
          yield* outbox.acknowledge("first", 1_500)
          hold = true
          const read = yield* Effect.forkChild(outbox.nextDue)
          yield* Deferred.await(reached)
          yield* outbox.enqueue([abortMessage("second")], 1_000)
          yield* Deferred.succeed(release, undefined)
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
