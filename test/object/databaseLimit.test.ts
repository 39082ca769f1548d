import { describe, expect, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { TestClock } from "effect/testing"
import { DurableAgentRuntime } from "../../src/core/DurableAgentRuntime.ts"
import { echo } from "../core/runtimeAgents.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { alarmOf, dayAhead, inObject, objectName, rawState } from "../alarm/harness.ts"
import { incarnation } from "../support/incarnation.ts"

const entry = objectCalls(undefined)
const request = (idempotencyKey: string) => ({
  threadId: "lane",
  agentId: "echo",
  idempotencyKey,
  input: { text: idempotencyKey },
})

describe("the database size limit", () => {
  it.effect("refuses new work once the database reaches maxDatabaseBytes, writing nothing", () =>
    inObject(objectName("database-full"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const roomy = yield* incarnation(ctx, { agents: [echo] })
        const accepted = yield* entry.submit(request("a")).pipe(Effect.provideContext(roomy.context))
        const size = ctx.storage.sql.databaseSize
        expect(size).toBeGreaterThan(0)

        const full = yield* incarnation(ctx, {
          agents: [echo],
          config: { limits: { maxDatabaseBytes: size } },
        })
        const before = { record: yield* rawState(ctx), alarm: yield* alarmOf(ctx) }
        const refused = yield* Effect.flip(
          entry.submit(request("b")).pipe(Effect.provideContext(full.context)),
        )
        expect(refused).toMatchObject({ _tag: "AdmissionRefused", reason: "database-bytes" })
        expect(refused.message).toContain(`${size}`)
        // Nothing was written: no row, no generation, no alarm.
        expect(yield* roomy.ledger.countNonterminal(accepted.threadId)).toBe(1)
        expect({ record: yield* rawState(ctx), alarm: yield* alarmOf(ctx) }).toEqual(before)
        // A replayed key adds nothing, so it is still answered.
        const replayed = yield* entry.submit(request("a")).pipe(Effect.provideContext(full.context))
        expect(replayed).toMatchObject({ submissionId: accepted.submissionId, replayed: true })
        // One byte more of room and new work is admitted again.
        const roomier = yield* incarnation(ctx, {
          agents: [echo],
          config: { limits: { maxDatabaseBytes: ctx.storage.sql.databaseSize + 1 } },
        })
        expect(yield* entry.submit(request("b")).pipe(Effect.provideContext(roomier.context))).toMatchObject({
          replayed: false,
        })
      }),
    ),
  )

  it.effect("refuses a child admission once the database is full, and admits it with room", () =>
    inObject(objectName("database-full-child"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const size = ctx.storage.sql.databaseSize
        const admit = (idempotencyKey: string, maxDatabaseBytes: number) =>
          Effect.gen(function* () {
            const inc = yield* incarnation(ctx, { agents: [echo], config: { limits: { maxDatabaseBytes } } })
            return yield* Context.get(inc.context, DurableAgentRuntime)
              .receive(
                {
                  _tag: "AdmitChild",
                  threadId: "kids",
                  idempotencyKey,
                  agentId: "echo",
                  agentDigest: echo.digest,
                  input: { text: idempotencyKey },
                  parent: {
                    address: { namespace: "THREADS", objectId: "e".repeat(64) },
                    threadId: "parents",
                    submissionId: `parent-${idempotencyKey}`,
                    step: 0,
                  },
                } as never,
                `message-${idempotencyKey}`,
              )
              .pipe(Effect.provideContext(inc.context))
          })
        expect(yield* admit("a", Math.max(1, size))).toMatchObject({
          _tag: "ChildRefused",
          reason: "database-bytes",
        })
        const roomy = yield* incarnation(ctx, { agents: [echo] })
        expect(yield* roomy.ledger.countNonterminal("kids" as never)).toBe(0)
        expect(yield* admit("b", ctx.storage.sql.databaseSize + 1_000_000)).toMatchObject({
          _tag: "ChildAdmitted",
          replayed: false,
        })
        expect(yield* roomy.ledger.countNonterminal("kids" as never)).toBe(1)
      }),
    ),
  )

  // workerd reports the database's size net of the pages a deletion freed (no vacuum needed):
  // the limit's check reads it directly, so room freed by retention admits work again.
  it.effect("stops refusing once retention has removed enough settled work", () =>
    inObject(objectName("database-pruned"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const retention = { settledForMillis: 1_000, windowMillis: 1_000 }
        const roomy = yield* incarnation(ctx, { agents: [echo], config: { retention } })
        const padding = "x".repeat(16_000)
        const filler = (key: string) => ({ ...request(key), input: { text: padding } })
        for (let i = 0; i < 120; i++) {
          yield* entry.submit(filler(`fill-${i}`)).pipe(Effect.provideContext(roomy.context))
        }
        for (let round = 0; round < 400 && (yield* roomy.ledger.countAllNonterminal) > 0; round++) {
          yield* roomy.maintenance.pass
        }
        expect(yield* roomy.ledger.countAllNonterminal).toBe(0)
        const full = ctx.storage.sql.databaseSize
        const limited = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention, limits: { maxDatabaseBytes: full } },
        })
        const refused = yield* Effect.flip(
          entry.submit(request("late")).pipe(Effect.provideContext(limited.context)),
        )
        expect(refused).toMatchObject({ _tag: "AdmissionRefused", reason: "database-bytes" })

        yield* TestClock.setTime(start + 10_000)
        for (let round = 0; round < 20 && (yield* limited.ledger.threadIds).length > 0; round++) {
          yield* limited.maintenance.pass
        }
        expect(yield* limited.ledger.threadIds).toEqual([])
        expect(ctx.storage.sql.databaseSize).toBeLessThan(full / 2)
        expect(
          yield* entry.submit(request("late")).pipe(Effect.provideContext(limited.context)),
        ).toMatchObject({
          replayed: false,
        })
      }),
    ),
  )
})
