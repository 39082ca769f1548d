/**
 * Storage under a steady load with retention on: after the first retention period, what the
 * Object stores stops growing, but for the one row (`effect_agent_thread_tails`) that each
 * Thread whose Submissions were all removed keeps, as docs/operating.md says.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation, type Incarnation } from "../support/incarnation.ts"
import { dayAhead, inObject, objectName } from "./harness.ts"

const entry = objectCalls(undefined)
const submit = (inc: Incarnation, threadId: string, key: string) =>
  entry
    .submit({ threadId, agentId: "echo", idempotencyKey: key, input: { text: key } })
    .pipe(Effect.provideContext(inc.context))

/** Rows of every table of the Object. */
const rowCounts = (ctx: DurableObjectState) =>
  Effect.sync(() => {
    const tables = ctx.storage.sql
      .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%'")
      .toArray()
      .map((row) => String(row.name))
    return Object.fromEntries(
      tables.map((name) => [
        name,
        Number(ctx.storage.sql.exec(`SELECT count(*) AS n FROM "${name}"`).one().n),
      ]),
    )
  })

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0)

const steadyLoad = (label: string, threadOf: (tick: number, n: number) => string) =>
  inObject(objectName(label), (ctx) =>
    Effect.gen(function* () {
      yield* dayAhead
      const inc = yield* incarnation(ctx, {
        agents: [echo],
        config: { retention: { settledForMillis: 10_000, windowMillis: 1_000 } },
      })
      const samples: Array<Record<string, number>> = []
      for (let tick = 0; tick < 60; tick++) {
        for (let n = 0; n < 3; n++) yield* submit(inc, threadOf(tick, n), `k-${tick}-${n}`)
        for (let round = 0; round < 20 && (yield* inc.ledger.countAllNonterminal) > 0; round++)
          yield* inc.maintenance.pass
        yield* TestClock.adjust(1_000)
        yield* inc.maintenance.pass
        if (tick === 29 || tick === 59) samples.push(yield* rowCounts(ctx))
      }
      // What retention removed leaves gaps verify expects, and nothing else.
      const report = yield* entry
        .verify({ threadId: threadOf(59, 0) })
        .pipe(Effect.provideContext(inc.context))
      expect(report.violations).toEqual([])
      return samples
    }),
  )

describe("storage under a steady load with retention", () => {
  it.effect("stops growing after one retention period, through one Thread", () =>
    Effect.gen(function* () {
      const [middle, end] = yield* steadyLoad("steady-one", () => "lane")
      expect(total(end!)).toBeLessThanOrEqual(total(middle!))
    }),
  )

  it.effect("keeps one row per Thread it emptied, through a Thread per conversation", () =>
    Effect.gen(function* () {
      const [middle, end] = yield* steadyLoad("steady-many", (tick, n) => `conversation-${tick}-${n}`)
      const { effect_agent_thread_tails: middleTails, ...middleRest } = middle!
      const { effect_agent_thread_tails: endTails, ...endRest } = end!
      expect(total(endRest)).toBeLessThanOrEqual(total(middleRest))
      // Where each emptied Thread's sequences continue stays: one row per Thread ever emptied.
      expect(endTails! - middleTails!).toBe(30 * 3)
    }),
  )
})
