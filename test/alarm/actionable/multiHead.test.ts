/**
 * Several heads per alarm event (`maxHeadsPerEvent` above 1): after recovery, one event serves
 * further runnable heads in round-robin lane order while its budget allows, each Submission at
 * most once; stable and binding waits are passed over; the finish still acknowledges only the
 * generation the event began with, and a failure still ends the event with its backoff.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { makeRuns, reviewed, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName, rawState } from "../harness.ts"
import {
  converge,
  deliver,
  deliverAcross,
  deliverOk,
  failingSecondAttempt,
  generationsOf,
  longFirstStep,
  reportOf,
  rowOf,
  submit,
} from "./fixtures.ts"
import { runtimeSwitchboard } from "../../support/switchboard.ts"
import { type Incarnation, incarnation } from "../../support/incarnation.ts"

const cursorOf = (ctx: DurableObjectState) => Effect.map(rawState(ctx), (raw) => raw?.["lastServedThreadId"])

/** The Threads of the Submissions settled so far, in the order of the Object's history. */
const settlementOrder = (inc: Incarnation) =>
  Effect.map(inc.history.feed({ after: 0, limit: 1_000 }), (page) =>
    page.entries
      .filter((entry) => entry.record.entry._tag === "SubmissionSettled")
      .map((entry) => String(entry.record.threadId)),
  )

describe("several heads per event", () => {
  it.effect("serves further heads in round-robin lane order, recovery first", () =>
    inObject(objectName("multi-order"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)], config: { maxHeadsPerEvent: 4 } })
        for (const key of ["1", "2"])
          for (const lane of ["lane-a", "lane-b", "lane-c"])
            yield* submit(inc, lane, "three-steps", `${lane}-${key}`, { n: 1 })
        // An accepted abort of a follower: recovery settles it before the first claim.
        const aborted = yield* submit(inc, "lane-c", "three-steps", "lane-c-3", { n: 1 })
        yield* inc.maintenance.withMutation(inc.runtime.abort(aborted.submissionId))

        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 1, 4, 2, "rearmed"])
        expect(yield* settlementOrder(inc)).toEqual(["lane-c", "lane-a", "lane-b", "lane-c", "lane-a"])
        expect((yield* rowOf(inc, aborted.submissionId)).settlement?.outcome).toBe("aborted")
        // The finish wrote the lane of its last Attempt and the count in one record.
        expect(yield* rawState(ctx)).toMatchObject({ lastServedThreadId: "lane-a", nonterminal: 2 })

        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 2, 0, "cleared"])
        expect(yield* cursorOf(ctx)).toBe("lane-c")
        expect(yield* runsOf(runs)).toEqual({ one: 6, two: 6, three: 6 })
      }),
    ),
  )

  it.effect("serves a cold lane behind a hot lane's backlog in the same event at the defaults", () =>
    inObject(objectName("multi-default"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)] })
        for (let n = 0; n < 20; n++) yield* submit(inc, "lane-hot", "three-steps", `hot-${n}`, { n })
        yield* submit(inc, "lane-cold", "three-steps", "cold", { n: 0 })

        // With nothing configured one event drains both lanes, the cold one among its first two heads.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 21, 0, "cleared"])
        const order = yield* settlementOrder(inc)
        expect(order.indexOf("lane-cold")).toBeLessThanOrEqual(1)
        expect(order.filter((lane) => lane === "lane-hot")).toHaveLength(20)
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect("passes over a stable wait without holding back another lane", () =>
    inObject(objectName("multi-wait"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, {
          agents: [reviewed(runs), threeSteps(runs)],
          config: { maxHeadsPerEvent: 8 },
        })
        const parked = yield* submit(inc, "lane-a", "reviewed", "a", { n: 1 })
        yield* submit(inc, "lane-a", "three-steps", "a-follower", { n: 1 })
        yield* submit(inc, "lane-b", "three-steps", "b1", { n: 1 })
        yield* submit(inc, "lane-b", "three-steps", "b2", { n: 2 })

        // The head of lane-a parks; lane-b is served twice; the follower behind the wait is not.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 2, 2, "cleared"])
        expect((yield* rowOf(inc, parked.submissionId)).state).toBe("suspended")
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect("starts no further head once its time budget is spent", () =>
    inObject(objectName("multi-budget"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const started = yield* Deferred.make<void>()
        const inc = yield* incarnation(ctx, {
          agents: [longFirstStep(runs, 1_500, started), threeSteps(runs)],
          config: { maxHeadsPerEvent: 4 },
        })
        yield* submit(inc, "lane-a", "long-first-step", "a", { n: 1 })
        yield* submit(inc, "lane-b", "three-steps", "b", { n: 1 })

        // The first head takes longer than the budget: lane-b waits for the next event.
        const report = yield* deliverAcross(ctx, inc.maintenance, started, "1500 millis")
        expect(reportOf(report)).toEqual(["actionable", 0, 1, 1, "rearmed"])
        expect(yield* runsOf(runs)).toEqual({ long: 1, short: 1 })
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 0, "cleared"])
      }),
    ),
  )

  it.effect("acknowledges only the generation it began with when a submit races a further head", () =>
    inObject(objectName("multi-race"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const board = yield* runtimeSwitchboard()
        const held = yield* board.pause("claim:after-claim", { nth: 2 })
        const inc = yield* incarnation(ctx, {
          agents: [threeSteps(runs)],
          runtime: board.handler,
          config: { maxHeadsPerEvent: 4 },
        })
        yield* submit(inc, "lane-a", "three-steps", "a", { n: 1 })
        yield* submit(inc, "lane-b", "three-steps", "b", { n: 1 })
        const before = yield* generationsOf(ctx)

        const pass = yield* Effect.forkChild(deliverOk(ctx, inc.maintenance))
        yield* held.reached
        const late = yield* submit(inc, "lane-c", "three-steps", "c", { n: 1 })
        yield* held.release
        // Lane-c's head was admitted after the event began; it may or may not be served now,
        // but its generation is not acknowledged by this event.
        yield* Fiber.join(pass)
        const after = yield* generationsOf(ctx)
        expect(after.dirty).toBe(before.dirty + 1n)
        expect(after.processed).toBeLessThan(after.dirty)
        expect(yield* alarmOf(ctx)).not.toBeNull()

        yield* converge(ctx, inc.maintenance)
        expect((yield* rowOf(inc, late.submissionId)).state).toBe("settled")
        const final = yield* generationsOf(ctx)
        expect(final.processed).toBe(final.dirty)
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect("ends a failed event with its backoff and the failing head's lane as the cursor", () =>
    inObject(objectName("multi-failure"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const inc = yield* failingSecondAttempt(ctx, { maxHeadsPerEvent: 4 })
        const a = yield* submit(inc, "lane-a", "three-steps", "a", { n: 1 })
        const b = yield* submit(inc, "lane-b", "three-steps", "b", { n: 1 })
        const c = yield* submit(inc, "lane-c", "three-steps", "c", { n: 1 })

        expect((yield* deliver(ctx, inc.maintenance))._tag).toBe("Failure")
        expect((yield* rowOf(inc, a.submissionId)).state).toBe("settled")
        expect((yield* rowOf(inc, b.submissionId)).state).toBe("ready")
        expect(yield* rawState(ctx)).toMatchObject({ lastServedThreadId: "lane-b", retry: { stalls: 1 } })

        // After the backoff the next event starts after the failing lane.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 2, 0, "cleared"])
        expect(yield* settlementOrder(inc)).toEqual(["lane-a", "lane-c", "lane-b"])
        expect((yield* rowOf(inc, c.submissionId)).state).toBe("settled")
      }),
    ),
  )
})
