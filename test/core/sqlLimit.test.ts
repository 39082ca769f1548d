import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { rowStatements } from "../../src/core/internal/history/sqlRows.ts"
import { pageStatements } from "../../src/core/internal/ledger/sqlPages.ts"
import { retentionStatements } from "../../src/core/internal/ledger/sqlRetention.ts"
import { statements } from "../../src/core/internal/ledger/sqlStatements.ts"
import { outboxStatements } from "../../src/core/internal/outbox/sql.ts"
import { scheduleStatements } from "../../src/core/internal/schedule/sql.ts"
import { rowLimit } from "../../src/core/internal/sqlLimit.ts"
import { inObject, type StatementText, textOf } from "./SubmissionLedgerHarness.ts"

/** What SQLite answers for `LIMIT` given one way: the rows, or the refusal's message. */
const answer = (storage: DurableObjectStorage, text: string, ...params: Array<number>) => {
  try {
    return storage.sql
      .exec<{ n: number }>(text, ...params)
      .toArray()
      .map((row) => row.n)
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

describe("row limits written into a statement", () => {
  it.effect("limit as the same value bound would, refusals included", () =>
    inObject((storage) =>
      Effect.sync(() => {
        storage.sql.exec("CREATE TABLE numbers (n INTEGER PRIMARY KEY)")
        for (let n = 1; n <= 5; n++) storage.sql.exec("INSERT INTO numbers (n) VALUES (?)", n)
        const select = "SELECT n FROM numbers ORDER BY n LIMIT"
        for (const rows of [0, 2, 5, 9, -1, 2.5, -0.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY]) {
          const written = answer(storage, `${select} ${rowLimit(rows)}`)
          // For NaN and the infinities `rowLimit` writes NULL, which SQLite refuses as it refuses
          // any limit that is not an integer.
          const bound = Number.isFinite(rows)
            ? answer(storage, `${select} ?`, rows)
            : answer(storage, `${select} NULL`)
          expect(written, String(rows)).toEqual(bound)
        }
        expect(answer(storage, `${select} ${rowLimit(2)}`)).toEqual([1, 2])
        expect(answer(storage, `${select} ${rowLimit(-1)}`)).toEqual([1, 2, 3, 4, 5])
        expect(answer(storage, `${select} ${rowLimit(2.5)}`)).toEqual(expect.stringContaining("mismatch"))
      }),
    ),
  )

  it("leaves no statement of the library with a bound LIMIT, which SQLite prepares again at every run", () => {
    const all = [
      statements,
      rowStatements,
      pageStatements,
      retentionStatements,
      scheduleStatements,
      outboxStatements,
    ].flatMap((group) =>
      Object.values<StatementText | Record<string, string>>(group).flatMap((statement) =>
        typeof statement === "object" ? Object.values(statement) : [textOf(statement)],
      ),
    )
    expect(all.length).toBeGreaterThan(40)
    const limited = all.filter((text) => /\bLIMIT\b/i.test(text))
    expect(limited.length).toBeGreaterThan(10)
    expect(limited.filter((text) => /\bLIMIT\s+\?/i.test(text))).toEqual([])
  })
})
