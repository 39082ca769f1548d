/**
 * The smallest retention the configuration accepts: an idle Object whose only rows are kept
 * (`keepPerThread`) is woken for them at most once per window, never at the alarm floor.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation } from "../support/incarnation.ts"
import { alarmOf, dayAhead, inObject, objectName } from "./harness.ts"

const entry = objectCalls(undefined)

describe("the smallest retention", () => {
  it.effect("wakes an idle Object keeping its newest Submission at most once per window", () =>
    inObject(objectName("retention-smallest"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention: { settledForMillis: 1, windowMillis: 1_000, keepPerThread: 1 } },
        })
        yield* entry
          .submit({ threadId: "lane", agentId: "echo", idempotencyKey: "a", input: { text: "a" } })
          .pipe(Effect.provideContext(inc.context))
        for (let round = 0; round < 5; round++) yield* inc.maintenance.pass
        const alarms = new Set<number>()
        for (let round = 0; round < 40; round++) {
          yield* TestClock.adjust(100)
          yield* inc.maintenance.pass
          const alarm = yield* alarmOf(ctx)
          // A pass that defers the kept row arms an alarm just after it while it writes.
          if (alarm !== null) alarms.add(Math.ceil(alarm / 1_000))
        }
        // Four seconds: at most one wake per second.
        expect(alarms.size).toBeLessThanOrEqual(5)
      }),
    ),
  )
})
