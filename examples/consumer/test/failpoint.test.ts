import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test"
import { Effect } from "effect"
import { DurableRuntimeFailpointError, runAlarmsUntilQuiet } from "@effect-agent/platform-cloudflare/Testing"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { describe, expect, it } from "vitest"
import { triage } from "../src/agent"
import { failpoints } from "./worker"

const settlementLog = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (_instance, state) =>
    state.storage.sql.exec("SELECT submission_id, outcome FROM settlement_log").toArray(),
  )

describe("triage", () => {
  it("settles a ticket once after its first claim fails, by alarm redelivery", async () => {
    const thread = `ticket-${crypto.randomUUID()}` // storage is shared by the tests of a file
    const stub = env.THREADS.getByName(thread)
    const client = ThreadClient.make(env.THREADS, thread)
    const tickets = client.agent(triage) // typed by the agent's Schemas
    let hits = 0
    failpoints.install(stub.id, {
      runtime: (location) =>
        location === "claim:after-claim" && ++hits === 1
          ? Effect.fail(new DurableRuntimeFailpointError({ location, message: "injected by the test" }))
          : Effect.void,
    })

    const receipt = await Effect.runPromise(
      tickets.submit({ ticket: "site down" }, { idempotencyKey: "t-1" }),
    )
    // Deliver alarms until nothing is owed; the pool may deliver some itself meanwhile.
    await Effect.runPromise(runAlarmsUntilQuiet({ client, runAlarm: () => runDurableObjectAlarm(stub) }))
    failpoints.remove(stub.id)

    expect(hits).toBe(2) // the first claim failed, the redelivered one went through
    const settlement = await Effect.runPromise(tickets.awaitSettlement(receipt.submissionId, 1_000))
    expect(settlement).toMatchObject({ outcome: "completed", output: { queue: "on-call" } })
    const { counters } = await Effect.runPromise(client.inspectMaintenance)
    expect(counters.failedPasses).toBe(1)
    // The host hook logged the settlement exactly once.
    expect(await settlementLog(stub)).toEqual([{ submission_id: receipt.submissionId, outcome: "completed" }])
  })
})
