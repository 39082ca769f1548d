import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test"
import { Effect, Option } from "effect"
import * as ThreadWorkflowEngine from "@effect-agent/platform-cloudflare/ThreadWorkflowEngine"
import { describe, expect, it } from "vitest"
import { FollowUp } from "../src/workflow"

const DAY = 86_400_000

const alarmOf = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (_instance, state) => state.storage.getAlarm())

describe("follow-up workflow", () => {
  it("parks on its one-day clock, and the timer survives a kill of the Object", async () => {
    const ticket = `ticket-${crypto.randomUUID()}` // storage is shared by the tests of a file
    const engine = ThreadWorkflowEngine.layerClient(env.THREADS)
    const run = <A>(effect: Effect.Effect<A, never, never>) => Effect.runPromise(effect)
    const parked = Effect.map(
      Effect.flatMap(FollowUp.executionId({ ticket }), (id) => FollowUp.poll(id)),
      (result) => Option.isSome(result) && result.value._tag === "Suspended",
    ).pipe(Effect.provide(engine))

    const startedAt = Date.now()
    const executionId = await run(
      FollowUp.execute({ ticket }, { discard: true }).pipe(Effect.provide(engine)),
    )
    const stub = env.THREADS.getByName(executionId) // the execution's own Object
    for (let round = 0; !(await run(parked)); round++) {
      if (round === 100) throw new Error("the follow-up did not park")
      await runDurableObjectAlarm(stub).catch(() => false)
    }
    const alarm = await alarmOf(stub)
    expect(alarm).toBeGreaterThanOrEqual(startedAt + DAY)

    await abortAllDurableObjects() // every incarnation dies mid-sleep
    const revived = env.THREADS.getByName(executionId) // a stub of the dead incarnation stays broken
    expect(await run(parked)).toBe(true)
    expect(await alarmOf(revived)).toBe(alarm) // the same timer, not a new day
    // Nothing is due before then: a delivery now leaves it parked.
    await runDurableObjectAlarm(revived).catch(() => false)
    expect(await run(parked)).toBe(true)
  })
})
