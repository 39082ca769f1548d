import type { Miniflare } from "miniflare"
import { afterEach, describe, expect, it } from "vitest"
import { bundle, startWorker, tempDir } from "./localWorker"

const running: Array<Miniflare> = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((mf) => mf.dispose()))
})

const json = async (mf: Miniflare, path: string, init?: RequestInit) => {
  const response = await mf.dispatchFetch(`http://consumer${path}`, init as never)
  return (await response.json()) as any
}

const until = async <A>(read: () => Promise<A>, done: (value: A) => boolean, millis = 30_000) => {
  const deadline = Date.now() + millis
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline)
      throw new Error(`condition not reached in ${millis} ms: ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe("triage across a crash and a restart", () => {
  it("finishes a ticket killed mid-Attempt from the persisted alarm alone, with no request", async () => {
    const script = await bundle("test/wrangler.toml", "test/crashWorker.ts")
    const persist = await tempDir("persist")
    const thread = "crash-1"

    const before = await startWorker(script, persist)
    running.push(before)
    await json(before, `/crash/${thread}?location=step:after-step-append`, { method: "POST" })
    const receipt = await json(before, `/${thread}`, {
      method: "POST",
      headers: { "idempotency-key": "t-1" },
      body: JSON.stringify({ ticket: "printer jammed" }),
    })
    // The submission's alarm runs the Attempt, which dies right after journaling its first step.
    await until(
      () => json(before, `/crashed/${thread}`),
      (crashed) => crashed === true,
    )
    // However long the kill takes, the crashed runtime must not finish the ticket.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    await before.dispose()
    running.splice(running.indexOf(before), 1)

    // A new runtime over the same storage; nothing is sent to the Object until it is quiet.
    const after = await startWorker(script, persist)
    running.push(after)
    const deliveries = await until(
      () => json(after, `/deliveries/${thread}`),
      (list: Array<{ quiet: boolean }>) => list.at(-1)?.quiet === true,
    )
    expect(deliveries.length).toBeGreaterThanOrEqual(1)

    const status = await json(after, `/${thread}/${receipt.submissionId}`)
    expect(status).toMatchObject({ state: "settled", settlement: { outcome: "completed" } })
    expect(await json(after, `/log/${thread}`)).toEqual([
      { submission_id: receipt.submissionId, outcome: "completed" },
    ])
  })
})
