/**
 * The example Worker's routes given what an operator's typo or a hostile client sends: each
 * answers a typed JSON error naming the problem, never a 500 with a stack, and remembers
 * nothing for the console's front page.
 */
import { describe, expect, it } from "@effect/vitest"
import { SELF } from "cloudflare:test"
import { call, deliverUntil, operatorToken, stateOf, threadName } from "./support.ts"

/** A raw request, for paths and bodies `call` would encode or serialize. */
const raw = async (method: "GET" | "POST", path: string, body?: string, token?: string) => {
  const response = await SELF.fetch(`http://example.test${path}`, {
    method,
    ...(body === undefined ? {} : { body }),
    ...(token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }),
  })
  const text = await response.text()
  let json: Record<string, unknown> | undefined
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    json = undefined
  }
  return { status: response.status, text, json }
}

// `%E0%A4%A` is cut short: `decodeURIComponent` throws on it.
const malformed = "%E0%A4%A"

describe("refund desk example: bad requests", () => {
  it("refuses a Thread or Submission id that is not valid percent-encoding with a 400 naming it", async () => {
    const thread = threadName("encoding")
    const cases: Array<readonly ["GET" | "POST", string, string?]> = [
      ["GET", `/threads/${malformed}/history`],
      ["GET", `/threads/${malformed}`],
      ["POST", `/threads/${malformed}/submissions`, JSON.stringify({ input: { orderId: "A", amount: 3 } })],
      ["GET", `/threads/${thread}/submissions/${malformed}`],
      ["GET", `/threads/${thread}/submissions/${malformed}/explain`],
      ["POST", `/threads/${thread}/submissions/${malformed}/approve`, "{}"],
    ]
    for (const [method, path, body] of cases) {
      const answer = await raw(method, path, body, operatorToken)
      expect(answer.status, `${method} ${path}: ${answer.text}`).toBe(400)
      expect(answer.json, `${method} ${path}: ${answer.text}`).toMatchObject({ error: "InvalidRequest" })
      expect(String(answer.json?.["message"])).toContain("percent-encoding")
    }
  })

  it("notes for the console only the Threads a submission could address", async () => {
    const tooLong = "t".repeat(300)
    const withControl = `bad%00${crypto.randomUUID()}`
    for (const thread of [tooLong, withControl]) {
      const answer = await raw(
        "POST",
        `/threads/${thread}/submissions`,
        JSON.stringify({ input: { orderId: "A", amount: 3 } }),
      )
      expect(answer.status, answer.text).toBe(400)
      expect(answer.json).toMatchObject({ error: "InvalidRequest" })
    }
    const listed = (await call("GET", "/threads", undefined, null)).body as unknown as Array<string>
    expect(listed).not.toContain(tooLong)
    expect(listed).not.toContain(decodeURIComponent(withControl))
  })

  it("refuses a relay refusal count that is not a small whole number", async () => {
    for (const body of ["garbage", '{"count":1e300}', '{"count":-1}', '{"count":1.5}', '{"count":"2"}']) {
      const answer = await raw("POST", "/relay/refuse", body)
      expect(answer.status, `${body}: ${answer.text}`).toBe(400)
      expect(answer.json).toMatchObject({ error: "InvalidRequest" })
    }
    // The count the docs show still works; 0 ends the refusals.
    expect((await raw("POST", "/relay/refuse", '{"count":0}')).status).toBe(200)
  })

  it("refuses to forget an unsettled refund with 409 ForgetRefused, keeping it", async () => {
    const thread = threadName("forget-early")
    const submitted = await call("POST", `/threads/${thread}/submissions`, {
      input: { orderId: "F1", amount: 180 },
    })
    const id = submitted.body["submissionId"] as string
    await deliverUntil(thread, async () => ["waiting", "suspended"].includes(await stateOf(thread, id)))
    const state = await stateOf(thread, id)
    const refused = await call("POST", `/threads/${thread}/submissions/${id}/forget`, {})
    expect(refused, JSON.stringify(refused.body)).toMatchObject({
      status: 409,
      body: { error: "ForgetRefused", reason: "not-settled" },
    })
    expect(await stateOf(thread, id)).toBe(state)
  })

  it("answers a path that is no route 404 RouteNotFound, running nothing", async () => {
    const thread = threadName("no-route")
    const submitted = await call("POST", `/threads/${thread}/submissions`, {
      input: { orderId: "N1", amount: 190 },
    })
    const id = submitted.body["submissionId"] as string
    await deliverUntil(thread, async () => ["waiting", "suspended"].includes(await stateOf(thread, id)))
    const state = await stateOf(thread, id)
    for (const [method, path] of [
      ["POST", `/threads/${thread}/submissions/${id}/approve/extra`],
      ["POST", `/threads/${thread}/submissions/${id}/abort/`.concat("x")],
      ["GET", "/threads//history"],
      ["GET", `/threads/${thread}/nothing`],
    ] as const) {
      const answer = await call(method, path, method === "POST" ? {} : undefined)
      expect(answer, `${method} ${path}`).toMatchObject({ status: 404, body: { error: "RouteNotFound" } })
      expect(String(answer.body["message"])).toContain("no route")
    }
    // The refund still waits for its approval: nothing was decided or aborted.
    expect(await stateOf(thread, id)).toBe(state)
  })

  it("refuses an input nested too deep to be sent with 400 InvalidRequest, not 503", async () => {
    const thread = threadName("deep")
    const body = `{"input":{"orderId":"D1","amount":3,"x":${"[".repeat(10_000)}${"]".repeat(10_000)}}}`
    const answer = await raw("POST", `/threads/${thread}/submissions`, body)
    expect(answer.status, answer.text).toBe(400)
    expect(answer.json).toMatchObject({ error: "InvalidRequest" })
    expect(String(answer.json?.["message"])).toContain("levels deep")
  })

  it("takes the operator's bearer token whatever the scheme's case", async () => {
    const thread = threadName("scheme")
    const submitted = await call("POST", `/threads/${thread}/submissions`, {
      input: { orderId: "L1", amount: 170 },
    })
    const id = submitted.body["submissionId"] as string
    await deliverUntil(thread, async () => ["waiting", "suspended"].includes(await stateOf(thread, id)))
    const response = await SELF.fetch(`http://example.test/threads/${thread}/submissions/${id}/approve`, {
      method: "POST",
      headers: { authorization: `bearer ${operatorToken}` },
      body: JSON.stringify({ note: "lower case" }),
    })
    expect(response.status, await response.text()).toBe(200)
  })
})
