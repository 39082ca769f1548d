import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { ThreadMaintenanceFailpointLocation } from "../../../src/Alarm.ts"
import { ApprovalDecision } from "../../../src/core/DurableAgentRuntime.ts"
import type { SubmissionId } from "../../../src/core/Identifiers.ts"
import { makeRuns, reviewed, type Runs, runsOf } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName } from "../harness.ts"
import { converge, deliverOk, generationsOf, rowOf, submit } from "./fixtures.ts"
import { maintenanceSwitchboard } from "../../support/switchboard.ts"
import { type Incarnation, incarnation } from "../../support/incarnation.ts"

const approve = (inc: Incarnation, submissionId: SubmissionId) =>
  inc.maintenance.withMutation(
    inc.runtime.resolveApproval(submissionId, new ApprovalDecision({ approved: true, note: "ok" })),
  )

/** A suspended, quiesced head in a fresh incarnation with maintenance failpoints. */
const suspendedHead = (ctx: DurableObjectState) =>
  Effect.gen(function* () {
    yield* dayAhead
    const runs = yield* makeRuns
    const failpoints = yield* maintenanceSwitchboard()
    const inc = yield* incarnation(ctx, { agents: [reviewed(runs)], maintenance: failpoints.handler })
    const head = yield* submit(inc, "lane", "reviewed", "head", { n: 1 })
    yield* converge(ctx, inc.maintenance)
    expect((yield* rowOf(inc, head.submissionId)).state).toBe("suspended")
    expect(yield* alarmOf(ctx)).toBeNull()
    return { runs, failpoints, inc, head }
  })

/** After the race: nothing acknowledged the mutation, and alarm delivery alone converges once. */
const expectPendingThenConverged = (
  ctx: DurableObjectState,
  world: {
    readonly runs: Runs
    readonly inc: Incarnation
    readonly head: { readonly submissionId: SubmissionId }
  },
) =>
  Effect.gen(function* () {
    const { runs, inc, head } = world
    const { dirty, processed } = yield* generationsOf(ctx)
    expect(dirty).toBeGreaterThan(processed)
    expect(yield* alarmOf(ctx)).not.toBeNull()
    yield* converge(ctx, inc.maintenance)
    expect((yield* rowOf(inc, head.submissionId)).settlement?.output).toBe("draft-1 published (ok)")
    expect(yield* runsOf(runs)).toEqual({ draft: 1, publish: 1 })
    expect(yield* alarmOf(ctx)).toBeNull()
  })

describe("a mutation racing the stable-wait acknowledgement", () => {
  it.effect("keeps its generation dirty and its alarm when it commits while the pass finishes", () =>
    inObject(objectName("race-finish"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const failpoints = yield* maintenanceSwitchboard()
        const inc = yield* incarnation(ctx, { agents: [reviewed(runs)], maintenance: failpoints.handler })
        const head = yield* submit(inc, "lane", "reviewed", "head", { n: 1 })
        const held = yield* failpoints.pause("maintenance:finish:before")
        const pass = yield* Effect.forkChild(deliverOk(ctx, inc.maintenance))
        yield* held.reached
        // The pass ran the head into its approval wait and scanned the residual set.
        expect((yield* rowOf(inc, head.submissionId)).state).toBe("suspended")
        yield* approve(inc, head.submissionId)
        yield* held.release
        const report = yield* Fiber.join(pass)
        expect(report.alarm).toBe("rearmed")
        yield* expectPendingThenConverged(ctx, { runs, inc, head })
      }),
    ),
  )
})

const passLocations: ReadonlyArray<ThreadMaintenanceFailpointLocation> = [
  "maintenance:begin:after",
  "maintenance:finish:before",
  "maintenance:finish:after",
]

describe("no acknowledgement while a mutation is in flight", () => {
  it.effect.each([
    "maintenance:mutation:armed",
    "maintenance:begin:after",
    "maintenance:mutation:finished",
    "maintenance:finish:before",
    "maintenance:finish:after",
  ] as const)("holds at %s", (location) =>
    inObject(objectName(`in-flight-${location}`), (ctx) =>
      Effect.gen(function* () {
        const world = yield* suspendedHead(ctx)
        const { inc, failpoints, head } = world
        // The approval is held after its prearm (or, at `mutation:finished`, after its body).
        const mutationHold = yield* failpoints.pause(
          location === "maintenance:mutation:finished" ? location : "maintenance:mutation:armed",
        )
        const mutation = yield* Effect.forkChild(approve(inc, head.submissionId))
        yield* mutationHold.reached

        if (passLocations.includes(location)) {
          // The pass starts while the mutation is active and holds at `location`; the
          // mutation's body completes before the pass observes durable state.
          const passHold = yield* failpoints.pause(location)
          const pass = yield* Effect.forkChild(deliverOk(ctx, inc.maintenance))
          yield* passHold.reached
          const bodyDone = yield* failpoints.observe("maintenance:mutation:finished")
          yield* mutationHold.release
          // At `begin:after` the pass holds the gate's snapshot: the mutation finishes its
          // body but leaves the gate only once the pass moves on. Elsewhere it leaves first.
          yield* location === "maintenance:begin:after" ? bodyDone : Fiber.join(mutation)
          yield* passHold.release
          yield* Fiber.join(pass)
          yield* Fiber.join(mutation)
        } else {
          // The whole pass runs while the mutation is held.
          yield* deliverOk(ctx, inc.maintenance)
          yield* mutationHold.release
          yield* Fiber.join(mutation)
        }
        yield* expectPendingThenConverged(ctx, world)
      }),
    ),
  )
})
