/**
 * Retention beside a parked Submission of the same Thread: what settled before it is removed
 * while it waits for its approval (and the Submission queued behind it waits too); approved
 * afterwards, it resumes from its journal, runs no step twice, and the one behind it runs.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { echo, makeRuns, reviewed, runsOf } from "../core/runtimeAgents.ts"
import { incarnation, type Incarnation } from "../support/incarnation.ts"
import { dayAhead, inObject, objectName } from "./harness.ts"

const entry = objectCalls(undefined)
const passes = (inc: Incarnation, rounds = 10) =>
  Effect.gen(function* () {
    for (let round = 0; round < rounds; round++) yield* inc.maintenance.pass
  })

describe("retention beside a parked Submission", () => {
  it.effect("removes what settled before it, and it resumes once approved", () =>
    inObject(objectName("retention-parked"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, {
          agents: [echo, reviewed(runs)],
          config: { retention: { settledForMillis: 60_000, windowMillis: 1_000 } },
        })
        const on = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provideContext(effect, inc.context)
        const submit = (agentId: string, key: string, input: unknown) =>
          on(entry.submit({ threadId: "lane", agentId, idempotencyKey: key, input }))
        const early = yield* submit("echo", "early", { text: "early" })
        yield* passes(inc)
        const parked = yield* submit("reviewed", "review", { n: 1 })
        const behind = yield* submit("echo", "behind", { text: "behind" })
        yield* passes(inc)
        const state = (id: string) =>
          Effect.map(inc.ledger.lookup(id as never), (row) => Option.getOrUndefined(row)?.state)
        expect(yield* state(early.submissionId)).toBe("settled")
        expect(yield* state(parked.submissionId)).toBe("suspended")

        // Long past the retention window: the early one goes, the parked and queued ones stay.
        yield* TestClock.setTime(start + 10 * 60_000)
        yield* passes(inc, 3)
        expect(yield* state(early.submissionId)).toBeUndefined()
        expect(yield* state(parked.submissionId)).toBe("suspended")
        expect(yield* state(behind.submissionId)).toBe("ready")

        yield* on(
          entry.resolveApproval({
            threadId: "lane",
            submissionId: parked.submissionId,
            decision: { approved: true, note: "ok" },
          }),
        )
        yield* passes(inc)
        expect(Option.getOrThrow(yield* inc.ledger.lookup(parked.submissionId)).settlement).toMatchObject({
          outcome: "completed",
          output: "draft-1 published (ok)",
        })
        expect(yield* state(behind.submissionId)).toBe("settled")
        expect(yield* runsOf(runs)).toEqual({ draft: 1, publish: 1 })
        const report = yield* on(entry.verify({ threadId: "lane" }))
        expect(report.violations).toEqual([])
      }),
    ),
  )
})
