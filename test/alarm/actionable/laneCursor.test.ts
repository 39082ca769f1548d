/**
 * The durable lane cursor names the lane of the last head Attempt, so that no head keeps its
 * lane first: not by yielding (the finish writes it), not by failing (the failure rearm writes
 * it), and not by killing its incarnation, which leaves neither. A fresh incarnation therefore
 * writes its first lane before its first Attempt; later events write it only with the commit
 * they make anyway.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BETA96_PACING } from "../../../src/CloudflareConfig.ts"
import { makeRuns, threeSteps } from "../../core/runtimeAgents.ts"
import { dayAhead, inObject, objectName, rawState } from "../harness.ts"
import { abandon, deliver, deliverOk, failingSecondAttempt, reportOf, rowOf, submit } from "./fixtures.ts"
import { freezeAt, runtimeSwitchboard } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"

const cursorOf = (ctx: DurableObjectState) => Effect.map(rawState(ctx), (raw) => raw?.["lastServedThreadId"])

describe("the lane cursor", () => {
  it.effect("is written before the first Attempt of an incarnation, and with the finish after", () =>
    inObject(objectName("cursor-writes"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const board = yield* runtimeSwitchboard()
        const seen: Array<unknown> = []
        const note = Effect.flatMap(cursorOf(ctx), (cursor) => Effect.sync(() => seen.push(cursor)))
        yield* board.once("claim:after-claim", note)
        yield* board.once("claim:after-claim", note)
        const inc = yield* incarnation(ctx, {
          agents: [threeSteps(runs)],
          runtime: board.handler,
          config: BETA96_PACING,
        })
        yield* submit(inc, "lane-a", "three-steps", "a", { n: 1 })
        yield* submit(inc, "lane-b", "three-steps", "b", { n: 1 })

        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 1, "rearmed"])
        expect(yield* cursorOf(ctx)).toBe("lane-a")
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 0, "cleared"])
        expect(yield* cursorOf(ctx)).toBe("lane-b")
        // During the first Attempt the cursor already named its lane; during the second, the
        // finish had yet to write it.
        expect(seen).toEqual(["lane-a", "lane-a"])
      }),
    ),
  )

  it.effect("moves past a head whose Attempt kills every incarnation after serving it twice", () =>
    inObject(objectName("cursor-kills"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const agents = [threeSteps(runs)]
        const firstKill = yield* freezeAt("claim:after-claim", 2)
        const first = yield* incarnation(ctx, { agents, runtime: firstKill.handler, config: BETA96_PACING })
        const a1 = yield* submit(first, "lane-a", "three-steps", "a1", { n: 1 })
        const a2 = yield* submit(first, "lane-a", "three-steps", "a2", { n: 2 })
        const poison = yield* submit(first, "lane-b", "three-steps", "b", { n: 1 })
        expect(reportOf(yield* deliverOk(ctx, first.maintenance))).toEqual(["actionable", 0, 1, 2, "rearmed"])
        expect((yield* rowOf(first, a1.submissionId)).state).toBe("settled")

        // The second event of the incarnation serves lane-b and dies in its Attempt, before
        // any commit names lane-b.
        yield* abandon(deliver(ctx, first.maintenance))
        yield* firstKill.reached
        expect(yield* cursorOf(ctx)).toBe("lane-a")

        // The next incarnation serves lane-b again, writing it first, and dies the same way.
        const secondKill = yield* freezeAt("claim:after-claim")
        const second = yield* incarnation(ctx, { agents, runtime: secondKill.handler, config: BETA96_PACING })
        yield* abandon(deliver(ctx, second.maintenance))
        yield* secondKill.reached
        expect(yield* cursorOf(ctx)).toBe("lane-b")
        expect((yield* rowOf(second, poison.submissionId)).producerEpoch).toBe(2)

        // The third serves lane-a's follower: lane-b no longer comes first.
        const third = yield* incarnation(ctx, { agents, config: BETA96_PACING })
        expect(reportOf(yield* deliverOk(ctx, third.maintenance))).toEqual(["actionable", 0, 1, 1, "rearmed"])
        expect((yield* rowOf(third, a2.submissionId)).state).toBe("settled")
        expect(yield* cursorOf(ctx)).toBe("lane-a")
      }),
    ),
  )

  it.effect("is the failing head's lane after a failed event", () =>
    inObject(objectName("cursor-fails"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const inc = yield* failingSecondAttempt(ctx, BETA96_PACING)
        yield* submit(inc, "lane-a", "three-steps", "a1", { n: 1 })
        yield* submit(inc, "lane-a", "three-steps", "a2", { n: 2 })
        const failing = yield* submit(inc, "lane-b", "three-steps", "b", { n: 1 })
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 2, "rearmed"])

        expect((yield* deliver(ctx, inc.maintenance))._tag).toBe("Failure")
        expect(yield* rawState(ctx)).toMatchObject({ lastServedThreadId: "lane-b", retry: { stalls: 1 } })
        // The event after the backoff serves lane-a first, then lane-b.
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 1, "rearmed"])
        expect((yield* rowOf(inc, failing.submissionId)).state).toBe("ready")
        expect(yield* cursorOf(ctx)).toBe("lane-a")
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 0, "cleared"])
      }),
    ),
  )
})
