import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm, SELF } from "cloudflare:test"
import { Effect } from "effect"
import { reconcileAgent, reconciliationThread } from "../../examples/refund-desk/src/reconcileAgent.ts"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { DEFAULT_FRAUD_DESK_SHARDS, fraudDeskObjectFor } from "../../examples/refund-desk/src/fraudShards.ts"
import { call, deliverUntil, maintenanceOf, quiet, relayedFor, stateOf, threadName } from "./support.ts"

const submit = (thread: string, input: unknown, idempotencyKey?: string) =>
  call("POST", `/threads/${thread}/submissions`, {
    input,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  })

const history = async (thread: string) =>
  (
    (await call("GET", `/threads/${thread}/history?limit=500`)).body["records"] as Array<{
      entry: { _tag: string }
    }>
  ).map((record) => record.entry._tag)

/**
 * Whether the refund waits for a human after its approval request (not for its fraud check):
 * `waiting` while its reminder is due, `suspended` once it reminded.
 */
const awaitsApproval = async (thread: string, id: string) =>
  ["waiting", "suspended"].includes(await stateOf(thread, id)) &&
  (await history(thread)).includes("ApprovalRequested")

/** Nothing owed now; the alarm, if any, is a due time ahead (the reminder's). */
const parkedForApproval = async (thread: string) => {
  const maintenance = await maintenanceOf(thread)
  return maintenance["owed"] === false && (maintenance["alarm"] === null || maintenance["alarm"] > Date.now())
}

describe("refund desk example", () => {
  it("settles a small refund, relays it through the outbox and keeps only retention's alarm at quiescence", async () => {
    const thread = threadName("small")
    const receipt = await submit(thread, { orderId: "A1", amount: 40 })
    expect(receipt.status).toBe(200)
    const id = receipt.body["submissionId"] as string

    await deliverUntil(thread, async () => (await relayedFor(thread)).length === 1)
    await deliverUntil(thread, () => quiet(thread))

    const status = await call("GET", `/threads/${thread}/submissions/${id}`)
    expect(status.body["state"]).toBe("settled")
    expect(status.body["settlement"]).toMatchObject({
      outcome: "completed",
      output: { refundId: "refund-A1-4000", fraudScore: 13, followUps: 0 },
    })
    expect(await history(thread)).toEqual([
      "SubmissionAccepted",
      "InputApplied",
      "StepCompleted",
      "ChildStarted",
      "ChildAwaited",
      "ChildSettled",
      "InputJoined",
      "UncertainStepStarted",
      "StepCompleted",
      "StepCompleted",
      "SubmissionSettled",
    ])
    // The fraud check ran as a child in the fraud desk's Object, linked to this refund.
    const desk = fraudDeskObjectFor("customer-of-A1", DEFAULT_FRAUD_DESK_SHARDS)
    const fraud = await call("GET", `/threads/customer-of-A1/history?object=${desk}&limit=500`)
    const accepted = (fraud.body["records"] as Array<{ entry: Record<string, any> }>).find(
      (record) =>
        record.entry["_tag"] === "SubmissionAccepted" && record.entry["parent"]?.submissionId === id,
    )
    expect(accepted?.entry).toMatchObject({ agentId: "fraud-check", input: { orderId: "A1", amount: 40 } })
    const [relayed] = await relayedFor(thread)
    expect(relayed).toMatchObject({ deliveries: 1, envelope: { submissionId: id, outcome: "completed" } })
    const maintenance = await maintenanceOf(thread)
    expect(maintenance, JSON.stringify(maintenance)).toMatchObject({ owed: false })
    expect(maintenance["record"]).toMatchObject({ nonterminal: 0 })
  })

  it("parks a large refund for approval with no alarm, and settles it once approved", async () => {
    const thread = threadName("approve")
    const id = (await submit(thread, { orderId: "B2", amount: 140 })).body["submissionId"] as string
    await deliverUntil(thread, () => awaitsApproval(thread, id))
    await deliverUntil(thread, () => parkedForApproval(thread))
    // Nothing is owed: the only alarm is the reminder's due time (or none once it reminded).
    const parked = await maintenanceOf(thread)
    expect(parked).toMatchObject({ owed: false })

    const approved = await call("POST", `/threads/${thread}/submissions/${id}/approve`, { note: "ok by Sam" })
    expect(approved.status).toBe(200)
    // The approval advanced the generation before it ran (its alarm may already have fired).
    const dirty = BigInt((await maintenanceOf(thread))["record"]["dirty"] as string)
    expect(dirty).toBe(BigInt(parked["record"]["dirty"] as string) + 1n)

    await deliverUntil(thread, async () => (await stateOf(thread, id)) === "settled")
    const settlement = await call("GET", `/threads/${thread}/submissions/${id}/settlement?timeoutMillis=1000`)
    expect(settlement.body).toMatchObject({
      outcome: "completed",
      output: { approvedBy: "ok by Sam", amount: 140 },
    })
    await deliverUntil(thread, async () => (await relayedFor(thread)).length === 1)
  })

  it("reminds the approvers once when no decision came in time, then waits with no alarm until one does", async () => {
    const thread = threadName("remind")
    const id = (await submit(thread, { orderId: "B3", amount: 140 })).body["submissionId"] as string
    await deliverUntil(thread, () => awaitsApproval(thread, id))
    // The reminder is due 3 s after the request (the test binding); alarms deliver it.
    await deliverUntil(
      thread,
      async () => (await history(thread)).filter((tag) => tag === "ApprovalRequested").length === 2,
      1_000,
    )
    await deliverUntil(thread, () => quiet(thread))
    const tags = await history(thread)
    expect(tags.slice(tags.indexOf("ApprovalRequested"))).toEqual([
      "ApprovalRequested",
      "ApprovalTimedOut",
      "StepCompleted",
      "ApprovalRequested",
    ])
    await call("POST", `/threads/${thread}/submissions/${id}/approve`, { note: "late but fine" })
    await deliverUntil(thread, async () => (await stateOf(thread, id)) === "settled")
    const settlement = await call("GET", `/threads/${thread}/submissions/${id}/settlement?timeoutMillis=1000`)
    expect(settlement.body).toMatchObject({ outcome: "completed", output: { approvedBy: "late but fine" } })
  })

  it("retries a busy order lookup after a durable backoff", async () => {
    const thread = threadName("busy")
    const id = (await submit(thread, { orderId: `busy-${crypto.randomUUID()}`, amount: 30 })).body[
      "submissionId"
    ] as string
    await deliverUntil(thread, async () => (await stateOf(thread, id)) === "settled", 500)
    const tags = await history(thread)
    expect(tags.slice(0, 4)).toEqual([
      "SubmissionAccepted",
      "InputApplied",
      "StepAttemptFailed",
      "StepCompleted",
    ])
    const settlement = await call("GET", `/threads/${thread}/submissions/${id}/settlement?timeoutMillis=1000`)
    expect(settlement.body).toMatchObject({ outcome: "completed" })
  })

  it("schedules the nightly reconciliation once, at 02:00 UTC, and a run counts the provider's refunds", async () => {
    const first = await call("GET", "/reconciliation")
    const again = await call("GET", "/reconciliation")
    expect(again.body).toEqual(first.body)
    const [nightly, ...others] = first.body as unknown as Array<Record<string, any>>
    expect(others).toEqual([])
    expect(nightly).toMatchObject({
      scheduleId: "nightly-reconciliation",
      agentId: "reconcile",
      missed: "latest",
    })
    const nextAt = nightly?.["nextAt"] as number
    expect(nextAt % 86_400_000).toBe(2 * 3_600_000)
    expect(nextAt).toBeGreaterThan(Date.now())
    expect(nextAt).toBeLessThanOrEqual(Date.now() + 86_400_000)

    // An occurrence is an ordinary Submission of the agent: run one now, as a pass would.
    const thread = threadName("reconcile")
    const refund = (await submit(thread, { orderId: "R9", amount: 20 })).body["submissionId"] as string
    await deliverUntil(thread, async () => (await stateOf(thread, refund)) === "settled")
    const client = ThreadClient.make(env.THREADS, reconciliationThread.threadId, {
      objectName: reconciliationThread.objectName,
    })
    const runs = client.agent(reconcileAgent)
    const receipt = await Effect.runPromise(runs.submit({}, { idempotencyKey: `manual-${thread}` }))
    const stub = env.THREADS.getByName(reconciliationThread.objectName)
    for (let round = 0; round < 50; round++) {
      const { state } = await Effect.runPromise(client.status(receipt.submissionId))
      if (state === "settled") break
      await runDurableObjectAlarm(stub).catch(() => false)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const settled = await Effect.runPromise(runs.awaitSettlement(receipt.submissionId, 1_000))
    expect(settled).toMatchObject({ outcome: "completed" })
    expect(settled.outcome === "completed" ? settled.output.refunds : 0).toBeGreaterThanOrEqual(1)
  })

  it("settles a refund larger than the order failed without asking anyone", async () => {
    const thread = threadName("too-large")
    const id = (await submit(thread, { orderId: "H8", amount: 900 })).body["submissionId"] as string
    await deliverUntil(thread, async () => (await stateOf(thread, id)) === "settled")
    const status = await call("GET", `/threads/${thread}/submissions/${id}`)
    expect(status.body["settlement"]).toMatchObject({
      outcome: "failed",
      error: "cannot refund 900: the order paid 250",
    })
    expect(await history(thread)).not.toContain("ApprovalRequested")
  })

  it("settles a denied refund failed and relays the failure", async () => {
    const thread = threadName("deny")
    const id = (await submit(thread, { orderId: "C3", amount: 200 })).body["submissionId"] as string
    await deliverUntil(thread, () => awaitsApproval(thread, id))
    await call("POST", `/threads/${thread}/submissions/${id}/deny`, { note: "too large" })
    await deliverUntil(thread, async () => (await stateOf(thread, id)) === "settled")
    const status = await call("GET", `/threads/${thread}/submissions/${id}`)
    expect(status.body["settlement"]).toMatchObject({ outcome: "failed" })
    await deliverUntil(thread, async () => (await relayedFor(thread)).length === 1)
    expect((await relayedFor(thread))[0]?.envelope).toMatchObject({ outcome: "failed" })
  })

  it("aborts a queued follower behind a waiting approval without waiting for the head", async () => {
    const thread = threadName("abort")
    const head = (await submit(thread, { orderId: "D4", amount: 200 })).body["submissionId"] as string
    const follower = (await submit(thread, { orderId: "D5", amount: 10 })).body["submissionId"] as string
    await deliverUntil(thread, () => awaitsApproval(thread, head))
    expect(await stateOf(thread, follower)).toBe("ready")

    await call("POST", `/threads/${thread}/submissions/${follower}/abort`)
    await deliverUntil(thread, async () => (await stateOf(thread, follower)) === "settled")
    const status = await call("GET", `/threads/${thread}/submissions/${follower}`)
    expect(status.body["settlement"]).toMatchObject({ outcome: "aborted" })
    // The head still waits for its approval (its reminder may be due meanwhile).
    expect(await awaitsApproval(thread, head)).toBe(true)
  })

  it("returns the original receipt for a repeated idempotency key and never admits twice", async () => {
    const thread = threadName("idempotent")
    const first = await submit(thread, { orderId: "E5", amount: 5 }, "order-E5")
    const again = await submit(thread, { orderId: "E5", amount: 5 }, "order-E5")
    expect(again.body).toMatchObject({ submissionId: first.body["submissionId"], replayed: true })
    const conflict = await submit(thread, { orderId: "E5", amount: 6 }, "order-E5")
    expect(conflict).toMatchObject({ status: 409, body: { error: "IdempotencyConflict" } })
    expect((await call("GET", `/threads/${thread}`)).body["nonterminal"]).toBeLessThanOrEqual(1)
  })

  it("refuses malformed input with a typed error and writes nothing", async () => {
    const thread = threadName("malformed")
    // A read does not build a new Object; the first refused submit does (its schema and a clean
    // maintenance record, no alarm). Nothing after it may write.
    const refused = await submit(thread, { orderId: "", amount: -3 })
    expect(refused.status).toBe(400)
    expect(refused.body["error"]).toBe("AdmissionRefused")
    const before = await maintenanceOf(thread)
    const unknownAgent = await call("POST", `/threads/${thread}/submissions`, { agentId: "nope", input: {} })
    expect(unknownAgent).toMatchObject({ status: 400, body: { error: "AdmissionRefused" } })
    const badId = await call("POST", `/threads/${encodeURIComponent("bad\u0007thread")}/submissions`, {
      input: { orderId: "F6", amount: 1 },
    })
    expect(badId).toMatchObject({ status: 400, body: { error: "InvalidRequest" } })
    // A body that is not JSON is named as such, not read as an empty input.
    const notJson = await SELF.fetch(`http://example.test/threads/${thread}/submissions`, {
      method: "POST",
      body: '{"input":',
    })
    expect(notJson.status).toBe(400)
    expect(await notJson.json()).toMatchObject({
      error: "InvalidRequest",
      message: expect.stringContaining("the request body is not JSON"),
    })
    // A field the route does not recognize is passed on and refused by name, not dropped.
    const badMode = await call("POST", `/threads/${thread}/submissions`, {
      mode: "joni",
      input: { orderId: "F7", amount: 1 },
    })
    expect(badMode).toMatchObject({ status: 400, body: { error: "InvalidRequest" } })
    expect(badMode.body["message"]).toContain("mode")
    const numericKey = await call("POST", `/threads/${thread}/submissions`, {
      idempotencyKey: 7,
      input: { orderId: "F8", amount: 1 },
    })
    expect(numericKey).toMatchObject({ status: 400, body: { error: "InvalidRequest" } })
    expect(numericKey.body["message"]).toContain("idempotencyKey")
    // An Unknown Outcome's resolution must say whether the effect happened.
    const vague = await call("POST", `/threads/${thread}/submissions/any/resolve`, { succeeded: "false" })
    expect(vague).toMatchObject({ status: 400, body: { error: "InvalidRequest" } })
    expect(vague.body["message"]).toContain("succeeded must be true or false")
    expect((await call("GET", `/threads/${thread}`)).body).toEqual({ threadId: thread, nonterminal: 0 })
    // A refused input is refused before the mutation gate: it advances no generation.
    expect((await maintenanceOf(thread))["record"]["dirty"]).toBe(before["record"]["dirty"])
  })

  it("folds a follow-up into a refund waiting for approval, which pays both and settles both", async () => {
    const thread = threadName("follow-up")
    const id = (await submit(thread, { orderId: "J9", amount: 140 })).body["submissionId"] as string
    await deliverUntil(thread, () => awaitsApproval(thread, id))
    const followUp = await call("POST", `/threads/${thread}/submissions`, {
      mode: "join",
      idempotencyKey: "J9-shipping",
      input: { orderId: "J9", amount: 10 },
    })
    expect(followUp.body).toMatchObject({ host: id, replayed: false })
    const joined = followUp.body["submissionId"] as string
    expect(await stateOf(thread, joined)).toBe("joining")
    await call("POST", `/threads/${thread}/submissions/${id}/approve`, { note: "ok by Sam" })
    await deliverUntil(thread, async () => (await stateOf(thread, joined)) === "settled")
    const refund = await call("GET", `/threads/${thread}/submissions/${id}/settlement?timeoutMillis=1000`)
    expect(refund.body).toMatchObject({
      outcome: "completed",
      output: { amount: 150, followUps: 1, refundId: "refund-J9-15000" },
    })
    const settledWith = await call("GET", `/threads/${thread}/submissions/${joined}`)
    expect(settledWith.body["settlement"]).toMatchObject({
      outcome: "completed",
      host: id,
      output: { amount: 150 },
    })
    // A follow-up with nothing running to join is refused by name, unless it may queue.
    const late = await call("POST", `/threads/${thread}/submissions`, {
      mode: "join",
      input: { orderId: "J9", amount: 1 },
    })
    expect(late).toMatchObject({ status: 409, body: { error: "JoinRefused" } })
  })

  it("retries a refused relay delivery at a later alarm and delivers it once", async () => {
    const thread = threadName("relay-retry")
    await call("POST", "/relay/refuse", { count: 1 })
    await submit(thread, { orderId: "G7", amount: 7 })
    // Until it is delivered, the outbox (a hook the application provides to the Thread layer)
    // owes the envelope: obligations name its deadline.
    await deliverUntil(thread, async () => {
      const { body } = await call("GET", `/threads/${thread}/obligations`)
      return (body["obligations"] as Array<{ source: string }>).some(
        ({ source }) => source === "host-deadline",
      )
    })
    await deliverUntil(thread, async () => (await relayedFor(thread)).length === 1, 100)
    expect((await relayedFor(thread))[0]?.deliveries).toBe(1)
  })

  it("refuses operator routes without the bearer token, writing nothing", async () => {
    const thread = threadName("auth")
    const id = (await submit(thread, { orderId: "J1", amount: 150 })).body["submissionId"] as string
    // Suspended for its fraud check first, then for the approval.
    await deliverUntil(thread, () => awaitsApproval(thread, id))
    // Quiet once the approvers' reminder (3 s here) has fired: bounded by that time, not by a
    // number of rounds, which a fast machine runs through before it.
    await deliverUntil(thread, () => quiet(thread), 1_000)
    const before = await maintenanceOf(thread)
    for (const token of [null, "wrong-token"]) {
      const refused = await call("POST", `/threads/${thread}/submissions/${id}/approve`, {}, token)
      expect(refused).toMatchObject({ status: 403, body: { error: "Unauthorized" } })
      expect((await call("POST", `/threads/${thread}/repair`, {}, token)).status).toBe(403)
    }
    expect((await maintenanceOf(thread))["record"]).toEqual(before["record"])
    expect(await stateOf(thread, id)).toBe("suspended")
    // Reads need no token: why it waits, and what the Object owes.
    const explained = await call("GET", `/threads/${thread}/submissions/${id}/explain`, undefined, null)
    expect(explained.body["reason"]).toMatchObject({ _tag: "WaitingForApproval", payload: { orderId: "J1" } })
    expect((await call("GET", "/threads", undefined, null)).body).toContain(thread)
  })
})
