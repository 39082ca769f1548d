import { describe, expect, it } from "@effect/vitest"
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { Effect, Layer } from "effect"
import { MessageOutbox } from "../../src/core/MessageOutbox.ts"
import { outboxStatements, OUTBOX_TABLE } from "../../src/core/internal/outbox/sql.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { layerMemoryWithLedger, layerWithLedger } from "../../src/core/ThreadHistory.ts"
import { abortMessage, outboxConformance, type OutboxHarness } from "./MessageOutboxConformance.ts"
import { inObject } from "./SubmissionLedgerHarness.ts"

const sqlLayer = (storage: DurableObjectStorage) =>
  MessageOutbox.layer.pipe(Layer.provideMerge(layerWithLedger), Layer.provideMerge(sqlClientLayer(storage)))

const sqlHarness: OutboxHarness = {
  run: (body) => inObject((storage) => Effect.provide(body, sqlLayer(storage))),
}

const memoryHarness: OutboxHarness = {
  run: (body) =>
    Effect.provide(body, MessageOutbox.layerMemory.pipe(Layer.provideMerge(layerMemoryWithLedger))),
}

outboxConformance("SQLite in a Durable Object", sqlHarness)
outboxConformance("in memory", memoryHarness)

const planOf = (storage: DurableObjectStorage, text: string) => {
  const params = Array.from(text.matchAll(/\?/g), () => "x")
  return Array.from(storage.sql.exec(`EXPLAIN QUERY PLAN ${text}`, ...params).toArray(), (row) =>
    String(row.detail),
  ).join(" / ")
}

describe("MessageOutbox on SQLite", () => {
  it.effect("reads due messages and the next deadline through the index of unacknowledged rows", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          yield* MessageOutbox
          expect(planOf(storage, outboxStatements.due(32))).toContain(`${OUTBOX_TABLE}_due`)
          expect(planOf(storage, outboxStatements.nextDue)).toContain(`${OUTBOX_TABLE}_due`)
        }),
        sqlLayer(storage),
      ),
    ),
  )

  it.effect("bills two rows written per message: the keyed row and its due-index entry", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          yield* MessageOutbox
          const cursor = storage.sql.exec(
            `INSERT INTO ${OUTBOX_TABLE} (message_id, target, message, attempts, next_attempt_at, created_at)
             VALUES ('probe', '{}', '{}', 0, 1, 1)`,
          )
          expect(cursor.rowsWritten).toBe(2)
        }),
        sqlLayer(storage),
      ),
    ),
  )

  it.effect("fails with a MessageOutboxError for a stored row that does not decode", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          yield* outbox.enqueue([abortMessage("a")], 1_000)
          storage.sql.exec(`UPDATE ${OUTBOX_TABLE} SET message = '{"_tag":"Nonsense"}'`)
          const error = yield* Effect.flip(outbox.due(2_000, 10))
          expect(error._tag).toBe("MessageOutboxError")
          expect(error.message).toContain("does not decode")
          storage.sql.exec(`UPDATE ${OUTBOX_TABLE} SET target = 'not json'`)
          const lookup = yield* Effect.flip(outbox.lookup("a"))
          expect(lookup.message).toContain("not JSON")
        }),
        sqlLayer(storage),
      ),
    ),
  )

  it.effect("builds the in-memory outbox only over the in-memory ledger", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        const layer = MessageOutbox.layerMemory.pipe(
          Layer.provide(SubmissionLedger.layer),
          Layer.provide(sqlClientLayer(storage)),
        )
        const error = yield* Effect.flip(Effect.provide(Effect.void, layer))
        expect(error._tag).toBe("MessageOutboxError")
        expect(error.message).toContain("SubmissionLedger.layerMemory")
      }),
    ),
  )
})
