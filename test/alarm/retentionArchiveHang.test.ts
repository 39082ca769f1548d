/**
 * An archive that does not answer within retention's allowance: the lane is interrupted at its
 * cutoff, which counts as a failed archive (nothing removed, the next try after the backoff), so
 * the alarm does not come back at once for the same batch on every event.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation, type Incarnation } from "../support/incarnation.ts"
import { alarmOf, dayAhead, inObject, objectName } from "./harness.ts"

const entry = objectCalls(undefined)
const submit = (inc: Incarnation, key: string) =>
  entry
    .submit({ threadId: "lane", agentId: "echo", idempotencyKey: key, input: { text: key } })
    .pipe(Effect.provideContext(inc.context))

const windowAfter = (instant: number) => Math.ceil(instant / 10_000) * 10_000

describe("an archive that hangs", () => {
  it.effect("is tried again after the backoff, not at once on every alarm", () =>
    inObject(objectName("retention-archive-hang"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        let calls = 0
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: {
            retention: { settledForMillis: 60_000, windowMillis: 10_000, dispatchTimeoutMillis: 2_000 },
          },
          archive: { archive: () => Effect.suspend(() => ((calls += 1), Effect.never)) },
        })
        const a = yield* submit(inc, "a")
        for (let round = 0; round < 20 && (yield* inc.ledger.countAllNonterminal) > 0; round++)
          yield* inc.maintenance.pass
        const due = windowAfter(start + 60_000)
        yield* TestClock.setTime(due)
        const pass = yield* Effect.forkChild(inc.maintenance.pass)
        // Virtual time moves only once the pass waits on it: step it while the pass runs.
        for (let step = 0; step < 200 && pass.pollUnsafe() === undefined; step++) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
          yield* TestClock.adjust(100)
        }
        const report = yield* Fiber.join(pass)
        expect(report.phase).toBe("caught-up")
        expect(calls).toBe(1)
        expect(Option.isSome(yield* inc.ledger.lookup(a.submissionId))).toBe(true)
        // Not due again at once: the hang waits for the backoff as a failure does.
        const now = yield* Clock.currentTimeMillis
        const next = Option.getOrThrow(yield* inc.maintenance.retention.lane.pendingDeadline)
        expect(next).toBeGreaterThan(now)
        expect(yield* alarmOf(ctx)).toBeGreaterThan(now)
      }),
    ),
  )

  it.effect("that throws instead of failing is a failed archive, not a failed pass", () =>
    inObject(objectName("retention-archive-throws"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention: { settledForMillis: 60_000, windowMillis: 10_000 } },
          archive: {
            archive: () => {
              throw new Error("no bucket bound")
            },
          },
        })
        const a = yield* submit(inc, "a")
        for (let round = 0; round < 20 && (yield* inc.ledger.countAllNonterminal) > 0; round++)
          yield* inc.maintenance.pass
        const due = windowAfter(start + 60_000)
        yield* TestClock.setTime(due)
        expect((yield* inc.maintenance.pass).phase).toBe("caught-up")
        expect(Option.isSome(yield* inc.ledger.lookup(a.submissionId))).toBe(true)
        expect(yield* inc.maintenance.retention.lane.pendingDeadline).toEqual(Option.some(due + 1_000))
      }),
    ),
  )
})
