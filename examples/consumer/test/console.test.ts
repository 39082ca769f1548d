import { env } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { describe, expect, it } from "vitest"
import worker from "../src/console"

const get = (path: string) => worker.fetch(new Request(`https://support.example${path}`), env)

describe("operator console", () => {
  it("serves its page under its path and answers its JSON from the Objects", async () => {
    const page = await get("/console/")
    expect(page.status).toBe(200)
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
    expect(await page.text()).toContain('<script src="/console/console.js" defer></script>')
    expect((await get("/console/console.js")).status).toBe(200)

    const thread = `console-${crypto.randomUUID()}`
    const { submissionId } = await Effect.runPromise(
      ThreadClient.make(env.THREADS, thread).submit({
        agentId: "triage",
        idempotencyKey: "t-1",
        input: { ticket: "printer jammed" },
      }),
    )
    const submissions = await get(`/console/api/objects/${thread}/threads/${thread}/submissions`)
    expect(submissions.status).toBe(200)
    const body = (await submissions.json()) as {
      submissions: Array<{ submission: { submissionId: string } }>
    }
    expect(body.submissions.map(({ submission }) => submission.submissionId)).toEqual([submissionId])

    // Every other path is the application's.
    expect(
      ((await (await get(`/${thread}/${submissionId}`)).json()) as { submissionId: string }).submissionId,
    ).toBe(submissionId)
  })
})
