import { describe, expect, it } from "@effect/vitest"
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { HISTORY_TABLE } from "../../src/core/internal/schema.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { layerWithLedger, ThreadHistory } from "../../src/core/ThreadHistory.ts"
import { historyConformance } from "./ledgerConformance.ts"
import { admitNew, request, unowned } from "./SubmissionLedgerFixtures.ts"
import { inObject, memoryHarness, sqlHarness, sqlLayer } from "./SubmissionLedgerHarness.ts"

historyConformance("SQLite in a Durable Object", sqlHarness)
historyConformance("in memory", memoryHarness)

describe("ThreadHistory", () => {
  it.effect("fails with a ThreadStoreError for a stored record that does not decode", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          const row = yield* admitNew(request("t", "a"))
          yield* history.append(row.submissionId, { _tag: "InputApplied" }, unowned(row, 1_100), 1_100)
          storage.sql.exec(`UPDATE ${HISTORY_TABLE} SET entries = '[{"_tag":"Nonsense"}]'`)
          const error = yield* Effect.flip(history.forSubmission(row.submissionId))
          expect(error._tag).toBe("ThreadStoreError")
          expect(error.operation).toBe("ThreadHistory.forSubmission")
          storage.sql.exec(`UPDATE ${HISTORY_TABLE} SET entries = 'not json'`)
          const page = yield* Effect.flip(history.page(row.threadId, { limit: 5 }))
          expect(page.message).toContain("not JSON")
        }),
        sqlLayer(storage),
      ),
    ),
  )

  it.effect("builds the in-memory history only over the in-memory ledger", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        const layer = ThreadHistory.layerMemory.pipe(
          Layer.provide(SubmissionLedger.layer),
          Layer.provide(sqlClientLayer(storage)),
        )
        const error = yield* Effect.flip(Effect.provide(Effect.void, layer))
        expect(error._tag).toBe("ThreadStoreError")
        expect(error.message).toContain("SubmissionLedger.layerMemory")
      }),
    ),
  )

  it.effect(
    "keeps sequences gap-free when two instances append to one Thread, and after a rolled-back append",
    () =>
      inObject((storage) =>
        Effect.gen(function* () {
          // Two incarnations over one storage: each admission records its acceptance, then the
          // append follows it.
          const withClient = layerWithLedger.pipe(Layer.provideMerge(sqlClientLayer(storage)))
          const first = yield* Layer.build(withClient)
          const second = yield* Layer.build(Layer.fresh(withClient))
          const appendIn = (services: typeof first, key: string, now: number) =>
            Effect.provide(
              Effect.gen(function* () {
                const history = yield* ThreadHistory
                const row = yield* admitNew(request("t", key))
                return (yield* history.append(
                  row.submissionId,
                  { _tag: "InputApplied" },
                  unowned(row, now),
                  now,
                )).sequence
              }),
              services,
            )
          expect(yield* appendIn(first, "a", 1_100)).toBe(2)
          expect(yield* appendIn(first, "b", 1_200)).toBe(4)
          expect(yield* appendIn(second, "c", 1_300)).toBe(6)
          expect(yield* appendIn(first, "d", 1_400)).toBe(8)
          expect(yield* appendIn(second, "e", 1_500)).toBe(10)
          // An admission and an append inside a transaction that rolls back leave nothing.
          const rolledBack = Effect.provide(
            Effect.gen(function* () {
              const sql = yield* SqlClient
              yield* sql.withTransaction(
                Effect.gen(function* () {
                  expect(yield* appendIn(first, "f", 1_600)).toBe(12)
                  return yield* Effect.fail("roll back" as const)
                }),
              )
            }),
            first,
          )
          expect(yield* Effect.flip(rolledBack)).toBe("roll back")
          expect(yield* appendIn(first, "g", 1_700)).toBe(12)
          const stored = storage.sql
            .exec<{ sequence: number }>(
              `SELECT sequence FROM ${HISTORY_TABLE} WHERE thread_id = 't' ORDER BY sequence`,
            )
            .toArray()
            .map((row) => row.sequence)
          expect(stored).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
        }).pipe(Effect.scoped),
      ),
  )

  it.effect("continues after a row another writer stored behind its back", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          const a = yield* admitNew(request("t", "a"))
          yield* history.append(a.submissionId, { _tag: "InputApplied" }, unowned(a, 1_100), 1_100)
          // A writer outside this client (a restored backup, a hand repair) continues both ends:
          // a row of two records at the next position and sequence.
          const end = storage.sql
            .exec<{ position: number; sequence: number; records: number; admitted: number; settled: number }>(
              `SELECT position, sequence, records, admitted, settled FROM ${HISTORY_TABLE} ORDER BY position DESC LIMIT 1`,
            )
            .one()
          storage.sql.exec(
            `INSERT INTO ${HISTORY_TABLE} (position, thread_id, sequence, records, submission_id, recorded_at,
              entries, lane_tail, admitted, settled) VALUES (?, 't', ?, 2, ?, 1150, ?, 1, ?, ?)`,
            end.position + end.records,
            end.sequence + end.records,
            a.submissionId,
            '[{"_tag":"InputApplied"},{"_tag":"InputApplied"}]',
            end.admitted,
            end.settled,
          )
          const b = yield* admitNew(request("t", "b"))
          const appended = yield* history.append(
            b.submissionId,
            { _tag: "InputApplied" },
            unowned(b, 1_200),
            1_200,
          )
          const rows = storage.sql
            .exec<{ position: number; sequence: number; records: number; admitted: number }>(
              `SELECT position, sequence, records, admitted FROM ${HISTORY_TABLE} ORDER BY position`,
            )
            .toArray()
          // Every row starts where the one before it ends, in the feed and in the Thread.
          for (let i = 1; i < rows.length; i++) {
            expect(rows[i]!.position).toBe(rows[i - 1]!.position + rows[i - 1]!.records)
            expect(rows[i]!.sequence).toBe(rows[i - 1]!.sequence + rows[i - 1]!.records)
          }
          expect(rows.map((row) => row.sequence)).toEqual([1, 2, 3, 5, 6])
          expect(rows.at(-2)?.admitted).toBe(2)
          expect(appended.sequence).toBe(6)
        }),
        sqlLayer(storage),
      ),
    ),
  )
})
