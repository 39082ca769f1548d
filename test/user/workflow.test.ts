/**
 * An `effect/workflow` workflow as a new user writes it from the README: a flaky activity retried
 * with `Activity.retry`, a `DurableClock` sleep on the alarm, a `DurableDeferred` completed from
 * the Worker (early, during the sleep, or twice), an interrupt during the wait, and retention.
 */
import { env } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { DurableDeferred } from "effect/workflow"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"
import { ShipmentWorkflow, Signed, userRuns } from "../worker/userObject.ts"
import { deliverUntil, uniqueName } from "./support.ts"

const engine = ThreadWorkflowEngine.layerClient(env.THREADS_USER)
const polled = (executionId: string) => ShipmentWorkflow.poll(executionId)
const isComplete = (executionId: string) =>
  Effect.map(polled(executionId), (r) => Option.isSome(r) && r.value._tag === "Complete")
const tokenOf = (executionId: string) =>
  DurableDeferred.tokenFromExecutionId(Signed, { workflow: ShipmentWorkflow, executionId })

describe("a shipment workflow", () => {
  it.live(
    "a signature sent during the clock is kept; each activity's work is done once",
    () =>
      Effect.gen(function* () {
        const id = uniqueName("ship")
        const executionId = yield* ShipmentWorkflow.execute({ id }, { discard: true })
        // Sent at once: the execution is started, still packing or sleeping.
        yield* DurableDeferred.succeed(Signed, { token: tokenOf(executionId), value: "Ada" })
        yield* DurableDeferred.succeed(Signed, { token: tokenOf(executionId), value: "Bo" })
        yield* deliverUntil([executionId], isComplete(executionId), 200, "complete")
        const result = yield* polled(executionId)
        expect(Option.isSome(result) && result.value._tag === "Complete" && result.value.exit).toEqual(
          Exit.succeed("packed-2 signed by Ada"),
        )
        expect(userRuns.get(`${executionId}:pack`)).toBe(2)
        expect(userRuns.get(`${executionId}:close`)).toBe(1)
        // A Worker's execute of the settled id answers its result without running anything.
        expect(yield* ShipmentWorkflow.execute({ id })).toBe("packed-2 signed by Ada")
        expect(userRuns.get(`${executionId}:close`)).toBe(1)
      }).pipe(Effect.provide(engine)),
    30_000,
  )

  it.live(
    "an interrupt during the wait ends it interrupted; a late signature changes nothing",
    () =>
      Effect.gen(function* () {
        const executionId = yield* ShipmentWorkflow.execute({ id: uniqueName("ship-int") }, { discard: true })
        yield* deliverUntil(
          [executionId],
          Effect.map(polled(executionId), (r) => Option.isSome(r) && r.value._tag === "Suspended"),
          200,
          "suspended",
        )
        yield* ShipmentWorkflow.interrupt(executionId)
        yield* deliverUntil([executionId], isComplete(executionId), 200, "complete")
        const result = yield* polled(executionId)
        const exit = Option.isSome(result) && result.value._tag === "Complete" ? result.value.exit : undefined
        expect(exit !== undefined && Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause)).toBe(true)
        const late = yield* Effect.exit(
          DurableDeferred.succeed(Signed, { token: tokenOf(executionId), value: "Cy" }),
        )
        // The execution settled: a late completion is accepted and changes nothing, as in memory.
        expect(Exit.isSuccess(late)).toBe(true)
        expect(userRuns.get(`${executionId}:close`)).toBeUndefined()
      }).pipe(Effect.provide(engine)),
    30_000,
  )
})
