import { describe, expect, it } from "@effect/vitest"
import { SqliteClient } from "@effect/sql-sqlite-do"
import { Effect, Layer } from "effect"
import { historyTable } from "../../src/core/internal/sqlHistory.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
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
          storage.sql.exec(`UPDATE ${historyTable} SET entry = '{"_tag":"Nonsense"}'`)
          const error = yield* Effect.flip(history.forSubmission(row.submissionId))
          expect(error._tag).toBe("ThreadStoreError")
          expect(error.operation).toBe("ThreadHistory.forSubmission")
          storage.sql.exec(`UPDATE ${historyTable} SET entry = 'not json'`)
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
          Layer.provide(SqliteClient.layer({ storage })),
        )
        const error = yield* Effect.flip(Effect.provide(Effect.void, layer))
        expect(error._tag).toBe("ThreadStoreError")
        expect(error.message).toContain("SubmissionLedger.layerMemory")
      }),
    ),
  )
})
