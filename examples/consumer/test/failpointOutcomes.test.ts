import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test"
import { Effect } from "effect"
import { DurableRuntimeFailpointError, runAlarmsUntilQuiet } from "@effect-agent/platform-cloudflare/Testing"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import * as ThreadWorkflowEngine from "@effect-agent/platform-cloudflare/ThreadWorkflowEngine"
import { describe, expect, it } from "vitest"
import { triage } from "../src/agent"
import { failpoints } from "./worker"

/** A fresh Thread (storage is shared by the tests of a file), its clients and its alarm loop. */
const ticketThread = (prefix: string) => {
  const thread = `${prefix}-${crypto.randomUUID()}`
  const stub = env.THREADS.getByName(thread)
  const client = ThreadClient.make(env.THREADS, thread)
  const operator = ThreadClient.make(env.THREADS, thread, {
    caller: { subject: "bearer", credential: env.OPERATOR_TOKEN ?? "" },
  })
  const untilQuiet = (timeoutMillis?: number) =>
    Effect.runPromise(
      runAlarmsUntilQuiet({
        client,
        runAlarm: () => runDurableObjectAlarm(stub),
        ...(timeoutMillis === undefined ? {} : { timeoutMillis }),
      }),
    )
  return { stub, client, operator, tickets: client.agent(triage), untilQuiet }
}

const settlementLog = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (_instance, state) =>
    state.storage.sql.exec("SELECT submission_id, outcome FROM settlement_log").toArray(),
  )

describe("failpoints, as docs/testing.md describes them", () => {
  it("an uncertain step cut after its start becomes an Unknown Outcome that an operator resolves", async () => {
    const { stub, client, operator, tickets, untilQuiet } = ticketThread("uncertain")
    let hits = 0
    failpoints.install(stub.id, {
      runtime: (location) =>
        location === "uncertain:after-start-append" && ++hits === 1
          ? Effect.fail(new DurableRuntimeFailpointError({ location, message: "cut" }))
          : Effect.void,
    })
    const receipt = await Effect.runPromise(tickets.submit({ ticket: "site down" }, { idempotencyKey: "t" }))
    // An Unknown Outcome waiting for an operator owes nothing: quiet.
    await untilQuiet()
    failpoints.remove(stub.id)
    const { reason } = await Effect.runPromise(client.explain(receipt.submissionId))
    expect(reason).toMatchObject({ _tag: "UnknownOutcome" })
    const step = reason._tag === "UnknownOutcome" ? reason.step : -1
    await Effect.runPromise(
      operator.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: "filed-by-hand" }, { step }),
    )
    await untilQuiet()
    const { settlement } = await Effect.runPromise(client.status(receipt.submissionId))
    expect(settlement).toMatchObject({
      outcome: "completed",
      output: { queue: "on-call", reference: "filed-by-hand" },
    })
    expect(await settlementLog(stub)).toEqual([{ submission_id: receipt.submissionId, outcome: "completed" }])
  })

  it("a maintenance handler that dies at maintenance:mutation:finished fails the call; the same key replays", async () => {
    const { stub, client, tickets, untilQuiet } = ticketThread("finished")
    let hits = 0
    failpoints.install(stub.id, {
      maintenance: (location) =>
        location === "maintenance:mutation:finished" && ++hits === 1 ? Effect.die("cut") : Effect.void,
    })
    const refused = await Effect.runPromise(
      Effect.flip(tickets.submit({ ticket: "site down" }, { idempotencyKey: "t" })),
    )
    expect(refused).toMatchObject({ _tag: "ThreadObjectUnavailable" })
    const receipt = await Effect.runPromise(tickets.submit({ ticket: "site down" }, { idempotencyKey: "t" }))
    expect(receipt.replayed).toBe(true)
    await untilQuiet()
    failpoints.remove(stub.id)
    expect(await settlementLog(stub)).toEqual([{ submission_id: receipt.submissionId, outcome: "completed" }])
    expect(await Effect.runPromise(client.submissions())).toHaveLength(1)
  })

  it("a constructor gate held by a handler ends the alarm loop at its bound, naming it", async () => {
    const { stub, tickets, untilQuiet } = ticketThread("ensure")
    failpoints.install(stub.id, {
      maintenance: (location) =>
        location === "maintenance:ensure:before" ? Effect.sleep("2 seconds") : Effect.void,
    })
    // A new Object's reads build nothing: its first submit builds the incarnation, whose gate
    // the handler holds while the loop asks for the obligations.
    const submitted = Effect.runPromise(tickets.submit({ ticket: "site down" }, { idempotencyKey: "t" }))
    const started = Date.now()
    const error = await untilQuiet(300).then(
      () => undefined,
      (error: unknown) => error,
    )
    const elapsed = Date.now() - started
    await submitted
    failpoints.remove(stub.id)
    expect(error).toMatchObject({ _tag: "AlarmsNotQuiet" })
    expect(String(error)).toMatch(/did not answer/)
    expect(elapsed).toBeLessThan(1_500)
  })

  it("a day's durable sleep is owed work: the loop fails at once, naming the timer", async () => {
    const ticket = `sleepy-${crypto.randomUUID()}`
    const started = await SELF.fetch(`http://consumer.test/follow-up/${ticket}`, { method: "POST" })
    const executionId = await started.json<string>()
    const error = await Effect.runPromise(
      Effect.flip(
        runAlarmsUntilQuiet({
          client: ThreadWorkflowEngine.executionClient(env.THREADS, executionId),
          runAlarm: () => runDurableObjectAlarm(env.THREADS.getByName(executionId)),
        }),
      ),
    )
    expect(error).toMatchObject({ _tag: "AlarmsNotQuiet" })
    expect(error.message).toMatch(/next due in .*timer \(sleep "clock\/grace"/)
  })
})
