import { env } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { describe, expect, it } from "vitest"
import { courier, later } from "../src/courier"

/** Reads `explain` until its reason has `tag` (the pool delivers the alarms itself). */
const reasonOf = async (client: ThreadClient.ThreadClient, submissionId: string, tag: string) => {
  let reason: { readonly _tag: string } = { _tag: "none" }
  for (const until = Date.now() + 4_000; reason._tag !== tag && Date.now() < until;) {
    reason = (await Effect.runPromise(client.explain(submissionId))).reason
    if (reason._tag !== tag) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return reason
}

describe("the README's courier", () => {
  it("prints its label, sleeps on the alarm, keeps an early event; runs later work and a schedule", async () => {
    const thread = `courier-${crypto.randomUUID()}`
    const client = ThreadClient.make(env.THREADS, thread)
    const receipt = await Effect.runPromise(
      client.agent(courier).submit({ parcel: "P1" }, { idempotencyKey: "c-1" }),
    )
    // The label is printed (step 0), and the sleep (step 1) parks until ten minutes from now.
    const sleeping = await reasonOf(client, receipt.submissionId, "Sleeping")
    expect(sleeping).toMatchObject({ _tag: "Sleeping", step: 1 })
    expect((sleeping as unknown as { readonly until: number }).until - Date.now()).toBeGreaterThan(590_000)

    const [event, delayed, schedule] = await Effect.runPromise(later(client, receipt.submissionId))
    // Sent before the wait: kept for it, and the same eventId again is a replay.
    expect(event).toMatchObject({ resumed: false })
    expect(await Effect.runPromise(later(client, receipt.submissionId))).toMatchObject([
      { replayed: true },
      { submissionId: delayed.submissionId },
      schedule,
    ])
    // The delayed ticket waits in the lane behind the sleeping courier (and then for its time).
    expect(await reasonOf(client, delayed.submissionId, "QueuedBehind")).toMatchObject({
      _tag: "QueuedBehind",
    })
    expect(schedule).toMatchObject({ scheduleId: "sweep", overlap: "skip", spec: { _tag: "Cron" } })
    // Every timed wait is on the alarm: the sleep and the schedule's next night.
    const { obligations } = await Effect.runPromise(client.obligations)
    expect(new Set(obligations.map((obligation) => obligation.source))).toEqual(
      new Set(["timer", "schedule"]),
    )
    await Effect.runPromise(client.unschedule("sweep"))
  })
})
