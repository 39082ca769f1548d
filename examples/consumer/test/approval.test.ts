import { env, runDurableObjectAlarm, SELF } from "cloudflare:test"
import { Effect } from "effect"
import { runAlarmsUntilQuiet } from "@effect-agent/platform-cloudflare/Testing"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { describe, expect, it } from "vitest"

const operator = { authorization: `Bearer ${env.OPERATOR_TOKEN ?? ""}` }

const post = async (path: string, body: unknown, headers: Record<string, string> = {}) =>
  (
    await SELF.fetch(`http://consumer.test${path}`, { method: "POST", headers, body: JSON.stringify(body) })
  ).json<Record<string, unknown>>()

const untilQuiet = (thread: string) =>
  Effect.runPromise(
    runAlarmsUntilQuiet({
      client: ThreadClient.make(env.THREADS, thread),
      runAlarm: () => runDurableObjectAlarm(env.THREADS.getByName(thread)),
    }),
  )

/** Submits a refund ticket through the Worker and runs alarms until it waits for a person. */
const waitingRefund = async (thread: string) => {
  const receipt = await post(`/${thread}`, { ticket: "refund my order" }, { "idempotency-key": "refund-1" })
  const submissionId = String(receipt["submissionId"])
  const { obligations } = await untilQuiet(thread)
  // A stable wait: nothing is owed and no alarm keeps the Object awake.
  expect(obligations).toMatchObject({ obligations: [], scheduledAlarm: null })
  const client = ThreadClient.make(env.THREADS, thread)
  expect((await Effect.runPromise(client.explain(submissionId))).reason).toMatchObject({
    _tag: "WaitingForApproval",
    payload: { ticket: "refund my order" },
  })
  return { client, submissionId }
}

describe("approving a refund", () => {
  it("files a refund once an operator approves it through the Worker's route", async () => {
    const thread = `refund-${crypto.randomUUID()}`
    const { client, submissionId } = await waitingRefund(thread)

    expect(await post(`/${thread}/${submissionId}/approve`, { note: "ok by Sam" })).toMatchObject({
      error: "Unauthorized",
    })
    // A garbled body decides nothing: it is refused by name, and a note that is not a string too.
    const garbled = await SELF.fetch(`http://consumer.test/${thread}/${submissionId}/approve`, {
      method: "POST",
      headers: operator,
      body: '{"note":',
    })
    expect(await garbled.json()).toMatchObject({ error: "BodyNotJson" })
    expect(await post(`/${thread}/${submissionId}/approve`, { note: 7 }, operator)).toMatchObject({
      error: "InvalidRequest",
    })
    expect(await post(`/${thread}/${submissionId}/approve`, { note: "ok by Sam" }, operator)).toEqual({
      ok: true,
    })
    await untilQuiet(thread)

    const status = await Effect.runPromise(client.status(submissionId))
    expect(status.settlement).toMatchObject({ outcome: "completed", output: { queue: "billing" } })
    const { records } = await Effect.runPromise(client.history())
    expect(records.map(({ entry }) => entry)).toContainEqual({
      _tag: "ApprovalResolved",
      step: 1,
      approved: true,
      note: "ok by Sam",
    })
  })

  it("settles a denied refund failed, with the operator's note", async () => {
    const thread = `refund-${crypto.randomUUID()}`
    const { client, submissionId } = await waitingRefund(thread)

    expect(await post(`/${thread}/${submissionId}/deny`, { note: "not eligible" }, operator)).toEqual({
      ok: true,
    })
    const settlement = await Effect.runPromise(client.awaitSettlement(submissionId, 1_000))
    expect(settlement).toMatchObject({ outcome: "failed", error: "approval denied: not eligible" })
  })
})
