/**
 * Retention's index costs a row only when retention is on. With the default (keep everything) a
 * settlement leaves its row undated and out of the retention index; an Object that settled work
 * so and then opens with retention on dates those rows from their settlement once, and removes
 * them when they expire; an open writes only when the setting changed, so an Object that always
 * keeps everything never writes for retention. The retention reads name the index's condition,
 * so SQLite answers them from it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { retentionStatements } from "../../src/core/internal/ledger/sqlRetention.ts"
import { META_KEYS, META_TABLE, SUBMISSIONS_TABLE } from "../../src/core/internal/schema.ts"
import type { SubmissionId } from "../../src/core/Identifiers.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation, type Incarnation } from "../support/incarnation.ts"
import { submit } from "./actionable/fixtures.ts"
import { meterSql } from "./fixtures.ts"
import { dayAhead, inObject, objectName } from "./harness.ts"
import { textOf } from "../core/SubmissionLedgerHarness.ts"

const retention = { settledForMillis: 60_000, windowMillis: 10_000 }
const windowAfter = (instant: number) => Math.ceil(instant / 10_000) * 10_000

/** Submits `keys` to Thread `lane` and runs passes until nothing is nonterminal. */
const settle = (inc: Incarnation, keys: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const ids: Array<SubmissionId> = []
    for (const key of keys) ids.push((yield* submit(inc, "lane", echo.id, key, { text: key })).submissionId)
    for (let round = 0; round < 50 && (yield* inc.ledger.countAllNonterminal) > 0; round++) {
      yield* inc.maintenance.pass
    }
    expect(yield* inc.ledger.countAllNonterminal).toBe(0)
    return ids
  })

/** Entries of the retention index, read through it. */
const indexed = (ctx: DurableObjectState) =>
  Number(
    ctx.storage.sql
      .exec(
        `SELECT count(*) AS n FROM ${SUBMISSIONS_TABLE} INDEXED BY ${SUBMISSIONS_TABLE}_retention
          WHERE lane_status = 'closed' AND prune_after IS NOT NULL`,
      )
      .one().n,
  )

const pruneAfter = (ctx: DurableObjectState, id: SubmissionId) =>
  ctx.storage.sql.exec(`SELECT prune_after FROM ${SUBMISSIONS_TABLE} WHERE submission_id = ?`, id).one()
    .prune_after

/** Whether the ledger's mark that every settled row is dated is stored. */
const datedMark = (ctx: DurableObjectState) =>
  ctx.storage.sql.exec(`SELECT value FROM ${META_TABLE} WHERE key = ?`, META_KEYS.settledDated).toArray()
    .length > 0

const writes = (queries: ReadonlyArray<string>) =>
  queries.filter((query) => /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(query))

describe("retention's index when retention is used", () => {
  it.effect("leaves a settlement out of the retention index while everything is kept", () =>
    inObject(objectName("retention-undated"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const inc = yield* incarnation(ctx, { agents: [echo] })
        const [id] = yield* settle(inc, ["a"])
        expect(pruneAfter(ctx, id!)).toBeNull()
        expect(indexed(ctx)).toBe(0)
        expect(datedMark(ctx)).toBe(false)
        expect(Option.isSome(yield* inc.ledger.lookup(id!))).toBe(true)
      }),
    ),
  )

  it.effect("dates rows settled while everything was kept when retention comes on, and expires them", () =>
    inObject(objectName("retention-turned-on"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const keeping = yield* incarnation(ctx, { agents: [echo] })
        const ids = yield* settle(keeping, ["a", "b"])
        expect(indexed(ctx)).toBe(0)

        yield* TestClock.setTime(start + 5_000)
        const pruning = yield* incarnation(ctx, { agents: [echo], config: { retention } })
        // Dated from their settlement, not from the open.
        expect(indexed(ctx)).toBe(2)
        expect(datedMark(ctx)).toBe(true)
        expect(yield* pruning.ledger.retentionStart).toEqual(Option.some(pruneAfter(ctx, ids[0]!)))
        expect(Number(pruneAfter(ctx, ids[0]!))).toBeLessThanOrEqual(start)
        // A settlement with retention on enters the index at once.
        yield* settle(pruning, ["c"])
        expect(indexed(ctx)).toBe(3)

        const due = windowAfter(Number(pruneAfter(ctx, ids[0]!)) + 60_000)
        expect(yield* pruning.maintenance.retention.lane.pendingDeadline).toEqual(Option.some(due))
        yield* TestClock.setTime(due)
        yield* pruning.maintenance.pass
        for (const id of ids) expect(yield* pruning.ledger.lookup(id)).toEqual(Option.none())
        expect(yield* pruning.history.forSubmission(ids[0]!)).toEqual([])
      }),
    ),
  )

  it.effect("writes at open only when the retention setting changed", () =>
    inObject(objectName("retention-open-writes"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const meter = yield* meterSql(ctx)
        yield* settle(yield* incarnation(ctx, { agents: [echo] }), ["a"])
        /** The write statements and rows written of opening an incarnation. */
        const open = (options: { readonly config?: { readonly retention: typeof retention } }) =>
          Effect.gen(function* () {
            meter.reset()
            yield* incarnation(ctx, { agents: [echo], ...options })
            return { writes: writes(meter.queries), rows: meter.rowsWritten }
          })

        expect(yield* open({})).toEqual({ writes: [], rows: 0 })
        // Retention on: the undated row is dated (its row and its index entry), and the mark set.
        expect(yield* open({ config: { retention } })).toEqual({
          writes: [retentionStatements.dateUndated, retentionStatements.markDated],
          rows: 3,
        })
        expect(yield* open({ config: { retention } })).toEqual({ writes: [], rows: 0 })
        // Off again: its settlements will not date their rows, so the mark goes.
        expect(yield* open({})).toEqual({ writes: [retentionStatements.clearDated], rows: 1 })
        expect(yield* open({})).toEqual({ writes: [], rows: 0 })
      }),
    ),
  )

  it.effect("answers retention's reads from the retention index, in its order", () =>
    inObject(objectName("retention-plans"), (ctx) =>
      Effect.gen(function* () {
        yield* incarnation(ctx, { agents: [echo] })
        for (const key of ["start", "candidates"] as const) {
          const text = textOf(retentionStatements[key])
          const params = Array.from(text.matchAll(/\?/g), () => 0)
          const plan = ctx.storage.sql
            .exec(`EXPLAIN QUERY PLAN ${text}`, ...params)
            .toArray()
            .map((row) => String(row.detail))
            .join("\n")
          expect(plan, key).toContain(`INDEX ${SUBMISSIONS_TABLE}_retention`)
          expect(plan, key).not.toContain("TEMP B-TREE")
        }
      }),
    ),
  )
})
