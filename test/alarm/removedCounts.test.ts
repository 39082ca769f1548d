/**
 * The count of a Thread's removed Submissions (forgotten or by retention), which its settled
 * count leaves out: a removal adds to it in its own transaction, at one row written per Thread
 * per batch (its tails row), and an Object that removed Submissions before the count existed
 * counts them once when it upgrades.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ThreadId, type SubmissionId } from "../../src/core/Identifiers.ts"
import { MIGRATIONS_TABLE } from "../../src/core/internal/migrations.ts"
import { storeMigrations, THREAD_TAILS_TABLE } from "../../src/core/internal/schema.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation, type Incarnation } from "../support/incarnation.ts"
import { submit } from "./actionable/fixtures.ts"
import { meterSql } from "./fixtures.ts"
import { dayAhead, inObject, objectName } from "./harness.ts"

/** Submits `keys` to `thread` and runs passes until nothing is nonterminal. */
const settle = (inc: Incarnation, thread: string, keys: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const ids: Array<SubmissionId> = []
    for (const key of keys) ids.push((yield* submit(inc, thread, echo.id, key, { text: key })).submissionId)
    for (let round = 0; round < 50 && (yield* inc.ledger.countAllNonterminal) > 0; round++) {
      yield* inc.maintenance.pass
    }
    expect(yield* inc.ledger.countAllNonterminal).toBe(0)
    return ids
  })

const items = (inc: Incarnation, ids: ReadonlyArray<SubmissionId>) =>
  Effect.forEach(ids, (id) =>
    Effect.map(inc.ledger.lookup(id), (row) => {
      if (row._tag === "None") throw new Error(`no row ${id}`)
      return { submissionId: id, receiptId: row.value.receiptId }
    }),
  )

const countsOf = (inc: Incarnation, thread: string) =>
  Effect.map(inc.ledger.laneCounts(ThreadId.make(thread)), ({ admitted, removed }) => ({ admitted, removed }))

describe("removed counts", () => {
  it.effect("add one row written per Thread per removal batch", () =>
    inObject(objectName("removed-cost"), (ctx) =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* dayAhead
          const inc = yield* incarnation(ctx, { agents: [echo] })
          const [a1, a2, a3, a4] = yield* settle(inc, "a", ["a1", "a2", "a3", "a4"])
          const [b1, b2] = yield* settle(inc, "b", ["b1", "b2"])
          const meter = yield* meterSql(ctx)
          const removing = (ids: ReadonlyArray<SubmissionId>) =>
            Effect.gen(function* () {
              const batch = yield* items(inc, ids)
              meter.reset()
              yield* inc.ledger.removeSettled(batch)
              return meter.rowsWritten
            })
          const written = {
            // One older Submission of a Thread (a forget of it): the Thread's newest row stays.
            older: yield* removing([a1!]),
            // The Thread's newest: its ends were kept in the same tails row before.
            newest: yield* removing([a4!]),
            // A retention batch over two Threads.
            batch: yield* removing([a2!, b1!, b2!]),
          }
          // Without the count: 4, 4 and 11. A batch that takes a Thread's newest row wrote its tails
          // row already; the count adds a row only where a batch keeps that row.
          expect(written).toEqual({ older: 5, newest: 4, batch: 12 })
          expect(yield* countsOf(inc, "a")).toEqual({ admitted: 4, removed: 3 })
          expect(yield* countsOf(inc, "b")).toEqual({ admitted: 2, removed: 2 })
          expect(a3).toBeDefined()
        }),
      ),
    ),
  )

  it.effect("counts once, on upgrade, the Submissions an Object removed before it counted them", () =>
    inObject(objectName("removed-upgrade"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const before = yield* incarnation(ctx, { agents: [echo] })
        const [a1, , a3] = yield* settle(before, "a", ["a1", "a2", "a3"])
        const [b1] = yield* settle(before, "b", ["b1"])
        yield* settle(before, "c", ["c1"])
        yield* before.ledger.removeSettled(yield* items(before, [a1!, a3!, b1!]))
        // As the release before stored it: no count, a tails row only where the newest row went.
        const sql = ctx.storage.sql
        sql.exec(`ALTER TABLE ${THREAD_TAILS_TABLE} DROP COLUMN removed`)
        sql.exec(`DELETE FROM ${THREAD_TAILS_TABLE} WHERE lane_tail = 0`)
        sql.exec(`DELETE FROM ${MIGRATIONS_TABLE} WHERE name = 'thread-store/012-removed-counts'`)
        const after = yield* incarnation(ctx, { agents: [echo] })
        expect(yield* countsOf(after, "a")).toEqual({ admitted: 3, removed: 2 })
        expect(yield* countsOf(after, "b")).toEqual({ admitted: 1, removed: 1 })
        expect(yield* countsOf(after, "c")).toEqual({ admitted: 1, removed: 0 })
      }),
    ),
  )

  it.effect("reads only its mark on upgrade when the Object never removed anything", () =>
    inObject(objectName("removed-never"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const inc = yield* incarnation(ctx, { agents: [echo] })
        yield* settle(
          inc,
          "a",
          Array.from({ length: 20 }, (_, i) => `a${i}`),
        )
        yield* settle(inc, "b", ["b1"])
        const counting = storeMigrations.find(
          (migration) => migration.name === "thread-store/012-removed-counts",
        )
        const backfill = counting?.statements[1] ?? ""
        expect(backfill).toContain("INSERT INTO")
        const cursor = ctx.storage.sql.exec(backfill)
        cursor.toArray()
        // One row read (the mark's seek), whatever the Object holds.
        expect({ read: cursor.rowsRead, written: cursor.rowsWritten }).toEqual({ read: 1, written: 0 })
      }),
    ),
  )
})
