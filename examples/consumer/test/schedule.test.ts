import { env, runDurableObjectAlarm } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { describe, expect, it } from "vitest"
import { triage } from "../src/agent"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe("a schedule that skips overlapping occurrences", () => {
  it("passes over an occurrence while the last one waits for an operator, and names it", async () => {
    const thread = `sweep-${crypto.randomUUID()}`
    const client = ThreadClient.make(env.THREADS, thread)
    const tickets = client.agent(triage)
    // Every second; each occurrence files a refund ticket, which waits for an operator.
    const scheduled = await Effect.runPromise(
      tickets.schedule(
        { ticket: "refund sweep" },
        { scheduleId: "sweep", everyMillis: 1_000, overlap: "skip" },
      ),
    )
    expect(scheduled).toMatchObject({ overlap: "skip", missed: "latest" })
    // Until an occurrence has been passed over: the first one is admitted and waits for approval.
    let schedule = scheduled
    for (const until = Date.now() + 10_000; schedule.lastRefusal === undefined && Date.now() < until;) {
      await sleep(250)
      await runDurableObjectAlarm(env.THREADS.getByName(thread))
      schedule = (await Effect.runPromise(client.schedules)).find((s) => s.scheduleId === "sweep") ?? schedule
    }
    expect(schedule.lastRefusal).toMatchObject({ reason: "overlap" })
    expect(schedule.lastRefusal?.message).toContain(String(schedule.lastSubmissionId))
    // One occurrence was admitted, and it still waits: nothing queued behind it.
    const waiting = await Effect.runPromise(client.explain(String(schedule.lastSubmissionId)))
    expect(waiting.reason).toMatchObject({ _tag: "WaitingForApproval" })
    expect(await Effect.runPromise(client.threadStatus)).toMatchObject({ nonterminal: 1 })
    await Effect.runPromise(client.unschedule("sweep"))
  })
})
