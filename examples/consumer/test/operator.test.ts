import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test"
import { Effect, Exit } from "effect"
import { MAINTENANCE_STATE_KEY } from "@effect-agent/platform-cloudflare/Alarm"
import {
  DurableRuntimeFailpointError,
  type InstalledFailpoints,
  type RuntimeFailpointLocation,
  runAlarmsUntilQuiet,
} from "@effect-agent/platform-cloudflare/Testing"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { describe, expect, it } from "vitest"
import { failpoints } from "./worker"

const operator = { subject: "on-call", credential: env.OPERATOR_TOKEN ?? "" }

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

/** The typed failure of a call (or undefined when it succeeded). */
const failureOf = async <A, E>(effect: Effect.Effect<A, E>) => {
  const exit = await Effect.runPromise(Effect.exit(effect))
  return Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined
}

/** Delivers the Object's alarms until nothing is owed (the pool may deliver some itself). */
const untilQuiet = (thread: string) =>
  run(
    runAlarmsUntilQuiet({
      client: ThreadClient.make(env.THREADS, thread),
      runAlarm: () => runDurableObjectAlarm(env.THREADS.getByName(thread)),
    }),
  )

/** Runtime failpoints that fail every Attempt that reaches `at`. */
const failingAt = (at: RuntimeFailpointLocation, message: string): InstalledFailpoints => ({
  runtime: (location) =>
    location === at ? Effect.fail(new DurableRuntimeFailpointError({ location, message })) : Effect.void,
})

describe("operating a Thread", () => {
  it("explains an Unknown Outcome that waits for an operator, and lets only the operator resolve it", async () => {
    const thread = `ops-${crypto.randomUUID()}`
    const stub = env.THREADS.getByName(thread)
    const client = ThreadClient.make(env.THREADS, thread)
    const asOperator = ThreadClient.make(env.THREADS, thread, { caller: operator })
    // The Attempt dies after the uncertain step's start is recorded: nobody knows if it filed.
    failpoints.install(stub.id, failingAt("uncertain:after-start-append", "cut mid-call"))
    const { submissionId } = await run(
      client.submit({ agentId: "triage", idempotencyKey: "u-1", input: { ticket: "printer jammed" } }),
    )
    // A stable wait: once the passes are done, nothing is owed and no alarm keeps the Object awake.
    const { obligations } = await untilQuiet(thread)
    failpoints.remove(stub.id)
    expect(obligations).toMatchObject({ obligations: [], scheduledAlarm: null })
    expect(obligations.mismatch).toBeUndefined()
    expect((await run(client.explain(submissionId))).reason).toMatchObject({
      _tag: "UnknownOutcome",
      name: "file",
      waitingFor: "operator",
    })

    const resolution = { _tag: "Succeeded", value: "support-14" } as const
    expect(await failureOf(client.resolveUnknown(submissionId, resolution))).toMatchObject({
      _tag: "Unauthorized",
    })
    const intruder = ThreadClient.make(env.THREADS, thread, { caller: { subject: "x", credential: "guess" } })
    expect(await failureOf(intruder.resolveUnknown(submissionId, resolution))).toMatchObject({
      _tag: "Unauthorized",
    })
    await run(asOperator.resolveUnknown(submissionId, resolution))
    await untilQuiet(thread)

    expect((await run(client.explain(submissionId))).reason).toMatchObject({
      _tag: "Settled",
      settlement: { outcome: "completed", output: { queue: "support", reference: "support-14" } },
    })
    expect((await run(client.verify)).violations).toEqual([])
    const progress = await run(client.awaitProgress(submissionId, { timeoutMillis: 0 }))
    expect(progress.state).toBe("settled")
    expect((await run(client.submissions())).map((row) => row.submissionId)).toEqual([submissionId])
    expect(await run(client.threads)).toEqual([thread])
    await run(client.wake)

    // The Worker's routes: reading needs no token, withdrawing does.
    const explained = await SELF.fetch(`http://consumer.test/${thread}/${submissionId}/explain`)
    expect(await explained.json()).toMatchObject({ reason: { _tag: "Settled" } })
    const awaited = await SELF.fetch(`http://consumer.test/${thread}/${submissionId}/settlement`)
    expect(await awaited.json()).toMatchObject({
      outcome: "completed",
      output: { queue: "support", reference: "support-14" },
    })
    // A body the agent's input Schema refuses is answered in the Worker; nothing is submitted.
    const malformed = await SELF.fetch(`http://consumer.test/${thread}`, {
      method: "POST",
      body: JSON.stringify({ ticket: 7 }),
    })
    expect(malformed.status).toBe(400)
    expect(await malformed.json()).toMatchObject({ error: "SchemaError" })
    // A body that is not JSON is named as such, not read as an empty ticket.
    const notJson = await SELF.fetch(`http://consumer.test/${thread}`, { method: "POST", body: '{"ticket":' })
    expect(notJson.status).toBe(400)
    expect(await notJson.json()).toMatchObject({ error: "BodyNotJson" })
    const submitted = await SELF.fetch(`http://consumer.test/${thread}`, {
      method: "POST",
      headers: { "idempotency-key": "u-2" },
      body: JSON.stringify({ ticket: "toner low" }),
    })
    expect(await submitted.json()).toMatchObject({ threadId: thread, queueSequence: 2, replayed: false })
    const withdrawn = await SELF.fetch(`http://consumer.test/${thread}/${submissionId}`, { method: "POST" })
    expect(await withdrawn.json()).toMatchObject({ error: "Unauthorized" })
    // A token no credential can be (over 4,096 characters) is refused by name, not a crash.
    const oversized = await SELF.fetch(`http://consumer.test/${thread}/${submissionId}/explain`, {
      headers: { authorization: `Bearer ${"t".repeat(5_000)}` },
    })
    expect(oversized.status).toBe(400)
    expect(await oversized.json()).toMatchObject({ error: "InvalidRequest" })
  })

  it("keeps a damaged Object reachable, and settles its work after the operator's repair", async () => {
    const thread = `repair-${crypto.randomUUID()}`
    const stub = env.THREADS.getByName(thread)
    const client = ThreadClient.make(env.THREADS, thread)
    // The accepted ticket cannot run yet (every claim fails) when its record is damaged.
    failpoints.install(stub.id, failingAt("claim:after-claim", "held for the test"))
    const { submissionId } = await run(
      client.submit({ agentId: "triage", idempotencyKey: "r-1", input: { ticket: "site down" } }),
    )
    await runInDurableObject(stub, (_instance, state) =>
      state.storage.put(MAINTENANCE_STATE_KEY, { schemaVersion: 1, dirty: "1", processed: "oops" }),
    )

    expect((await run(client.explain(submissionId))).reason).toMatchObject({
      _tag: "MaintenanceRecordDamaged",
      field: "processed",
    })
    expect(
      await failureOf(
        client.submit({ agentId: "triage", idempotencyKey: "r-2", input: { ticket: "again" } }),
      ),
    ).toMatchObject({ _tag: "MaintenanceRecordDamaged", field: "processed" })
    expect(await failureOf(client.repairMaintenance)).toMatchObject({ _tag: "Unauthorized" })

    failpoints.remove(stub.id)
    const repair = await run(ThreadClient.make(env.THREADS, thread, { caller: operator }).repairMaintenance)
    expect(repair).toMatchObject({
      repaired: true,
      damage: { field: "processed" },
      record: { nonterminal: 1 },
    })
    await untilQuiet(thread)
    expect((await run(client.status(submissionId))).state).toBe("settled")
    expect((await run(client.verify)).violations).toEqual([])
  })
})
