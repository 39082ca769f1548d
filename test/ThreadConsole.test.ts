/**
 * The console's handler in workerd, over real Objects: it serves its page under a strict
 * Content-Security-Policy and its JSON under its mount path only, answers each route from the
 * Object's calls, and passes the browser's credential through as the caller, so the Object's
 * own authorization decides every call (a missing token refuses an operator action with the
 * typed error, and a tenant's Thread stays its own for reads too); its actions make the calls
 * they name (Forget removes a settled Submission, and the Object refuses it before).
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm } from "cloudflare:test"
import { Effect, Fiber } from "effect"
import * as ThreadClient from "../src/ThreadClient.ts"
import * as ThreadConsole from "../src/ThreadConsole.ts"
import { operatorToken } from "./worker/threadObject.ts"

const ORIGIN = "https://desk.example"

const mounted = ThreadConsole.handler({
  namespace: env.AUTHORIZED_TEST,
  namespaceBinding: "AUTHORIZED_TEST",
  basePath: "/ops/console/",
  objects: () => ["listed-a", "listed-b"],
})

/** A request to the console, as the page sends it: JSON, the token as a bearer credential. */
const call = (
  method: "GET" | "POST",
  path: string,
  options: {
    readonly token?: string
    readonly body?: unknown
    readonly headers?: Record<string, string>
  } = {},
) =>
  Effect.promise(async () => {
    const response = await mounted(
      new Request(`${ORIGIN}/ops/console${path}`, {
        method,
        headers: {
          ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
          ...(options.body === undefined ? {} : { "content-type": "application/json", origin: ORIGIN }),
          ...options.headers,
        },
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      }),
    )
    const text = await response.text()
    return {
      response,
      status: response.status,
      text,
      body: /json/.test(response.headers.get("content-type") ?? "") ? (JSON.parse(text) as any) : undefined,
    }
  })

/** Delivers the Object's alarm until `done` holds. */
const deliverUntil = (objectName: string, done: Effect.Effect<boolean, unknown>) =>
  Effect.gen(function* () {
    for (let round = 0; round < 60; round++) {
      if (yield* done) return
      yield* Effect.promise(() =>
        runDurableObjectAlarm(env.AUTHORIZED_TEST.getByName(objectName)).catch(() => false),
      )
      yield* Effect.sleep(5)
    }
    return yield* Effect.die(new Error("condition not reached"))
  })

/** A Thread (in its own Object) with a review waiting for approval. */
const waitingReview = (thread: string) =>
  Effect.gen(function* () {
    const client = ThreadClient.make(env.AUTHORIZED_TEST, thread)
    const receipt = yield* client.submit({
      agentId: "review",
      idempotencyKey: "review-1",
      input: { draft: "<script>alert(1)</script>" },
    })
    yield* deliverUntil(
      thread,
      Effect.map(client.status(receipt.submissionId), (status) => status.state === "suspended"),
    )
    return { client, submissionId: receipt.submissionId }
  })

describe("ThreadConsole", () => {
  it.live(
    "serves its page, script and stylesheet under a strict Content-Security-Policy, and only under its path",
    () =>
      Effect.gen(function* () {
        const page = yield* call("GET", "/")
        expect(page.status).toBe(200)
        expect(page.response.headers.get("content-type")).toBe("text/html; charset=utf-8")
        const policy = page.response.headers.get("content-security-policy") ?? ""
        expect(policy).toBe(ThreadConsole.CONTENT_SECURITY_POLICY)
        expect(policy).toContain("script-src 'self'")
        expect(policy).toContain("style-src 'self'")
        expect(policy).not.toContain("unsafe-inline")
        // Every script and stylesheet is the console's own route; nothing inline, nothing elsewhere.
        expect(page.text).toContain('<script src="/ops/console/console.js" defer></script>')
        expect(page.text).toContain('<link rel="stylesheet" href="/ops/console/console.css">')
        expect(page.text).not.toMatch(/<script>|<style|style=|https?:\/\//)
        const script = yield* call("GET", "/console.js")
        expect(script.response.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
        expect(script.text).toContain("use strict")
        expect(script.text).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/)
        const style = yield* call("GET", "/console.css")
        expect(style.response.headers.get("content-type")).toBe("text/css; charset=utf-8")

        const bare = yield* Effect.promise(() => mounted(new Request(`${ORIGIN}/ops/console?x=1`)))
        expect(bare.status).toBe(308)
        expect(bare.headers.get("location")).toBe(`${ORIGIN}/ops/console/?x=1`)
        expect(mounted.matches(new Request(`${ORIGIN}/ops/console/api/objects`))).toBe(true)
        expect(mounted.matches(new Request(`${ORIGIN}/ops/consoles`))).toBe(false)
        const outside = yield* Effect.promise(() => mounted(new Request(`${ORIGIN}/elsewhere`)))
        expect(outside.status).toBe(404)
        expect((yield* call("GET", "/api/nothing-here")).body).toMatchObject({
          error: "ConsoleRouteNotFound",
        })
        expect((yield* call("GET", "/api/objects")).body).toEqual({
          objects: ["listed-a", "listed-b"],
          namespaceBinding: "AUTHORIZED_TEST",
        })
        const { actions } = (yield* call("GET", "/api/actions")).body
        expect(actions.map((action: { id: string }) => action.id)).toEqual([
          "approve",
          "deny",
          "resolve-happened",
          "resolve-failed",
          "send-event",
          "retry",
          "abort",
          "forget",
          "repair",
        ])
      }),
  )

  it.live("answers the Object's Threads, a filtered page, one Submission and its progress", () =>
    Effect.gen(function* () {
      const thread = `console-${crypto.randomUUID()}`
      const { submissionId } = yield* waitingReview(thread)
      const api = `/api/objects/${thread}/threads/${thread}`

      // The Object-wide reads are the operator's here: naming another Thread changes nothing.
      for (const path of [`/api/objects/${thread}`, `/api/objects/${thread}?thread=anything`]) {
        expect((yield* call("GET", path)).body).toMatchObject({ error: "Unauthorized" })
      }
      const threads = yield* call("GET", `/api/objects/${thread}`, { token: operatorToken })
      expect(threads.status).toBe(200)
      expect(threads.body.threads).toMatchObject([
        { threadId: thread, admitted: 1, parked: 1, head: { waiting: "approval" } },
      ])
      const page = yield* call("GET", `${api}/submissions?waiting=approval&limit=10`)
      expect(page.body).toMatchObject({
        order: "queue",
        submissions: [{ waiting: "approval", submission: { submissionId } }],
      })
      expect((yield* call("GET", `${api}/submissions?state=settled`)).body.submissions).toEqual([])
      expect((yield* call("GET", `${api}/keys/review-1`)).body).toMatchObject({ submissionId })
      expect((yield* call("GET", `${api}/keys/unknown-key`)).body).toBeNull()

      const detail = yield* call("GET", `${api}/submissions/${submissionId}`)
      expect(detail.body).toMatchObject({
        waiting: "approval",
        explanation: {
          reason: { _tag: "WaitingForApproval", payload: { draft: "<script>alert(1)</script>" } },
        },
        progress: { state: "suspended" },
      })
      expect(
        detail.body.progress.records.map((record: { entry: { _tag: string } }) => record.entry._tag),
      ).toContain("ApprovalRequested")
      // The same Submission, its Object named by id (as a child's link to its parent names it).
      const id = env.AUTHORIZED_TEST.idFromName(thread).toString()
      expect(
        (yield* call("GET", `/api/ids/${id}/threads/${thread}/submissions/${submissionId}`)).body,
      ).toMatchObject({ waiting: "approval", progress: { state: "suspended" } })
      expect((yield* call("GET", `/api/ids/not-an-id/threads/${thread}/submissions`)).body).toMatchObject({
        error: "InvalidConsoleRequest",
      })
      const asOperator = { token: operatorToken }
      expect((yield* call("GET", `/api/objects/${thread}/obligations`, asOperator)).body).toMatchObject({
        obligations: [],
      })
      expect((yield* call("GET", `/api/objects/${thread}/verify`, asOperator)).body).toMatchObject({
        violations: [],
      })

      // A progress request waits until the Submission moves, then answers with its new records.
      const token = detail.body.progress.token as string
      const waiting = yield* Effect.forkChild(
        call("GET", `${api}/submissions/${submissionId}/progress?after=${token}&timeoutMillis=20000`),
      )
      yield* Effect.sleep(50)
      // The page sends the step of the request it shows: a decision for another one is refused.
      const step = String(detail.body.explanation.reason.step)
      const stale = yield* call("POST", `${api}/submissions/${submissionId}/actions/approve`, {
        token: operatorToken,
        body: { fields: { note: "ok by the console", step: `${Number(step) + 1}` } },
      })
      expect(stale.body).toMatchObject({ error: "NotPending" })
      const approved = yield* call("POST", `${api}/submissions/${submissionId}/actions/approve`, {
        token: operatorToken,
        body: { fields: { note: "ok by the console", step } },
      })
      expect(approved.body).toEqual({ ok: true, action: "approve" })
      const progress = yield* Fiber.join(waiting)
      expect(progress.body).toMatchObject({ changed: true })
      expect(progress.body.records.map((record: { entry: { _tag: string } }) => record.entry._tag)).toContain(
        "ApprovalResolved",
      )
    }),
  )

  it.live(
    "passes the browser's credential to the Object, whose check refuses operator actions without it",
    () =>
      Effect.gen(function* () {
        const thread = `console-auth-${crypto.randomUUID()}`
        const { client, submissionId } = yield* waitingReview(thread)
        const action = `/api/objects/${thread}/threads/${thread}/submissions/${submissionId}/actions/approve`

        const anonymous = yield* call("POST", action, { body: { fields: {} } })
        expect(anonymous.status).toBe(403)
        expect(anonymous.body).toEqual({
          error: "Unauthorized",
          entryPoint: "resolveApproval",
          message: "no caller identity",
        })
        const wrong = yield* call("POST", action, { token: "guess", body: { fields: {} } })
        expect(wrong.status).toBe(403)
        expect(wrong.body).toMatchObject({
          error: "Unauthorized",
          message: "console may not resolveApproval",
        })
        const repair = yield* call("POST", `/api/objects/${thread}/actions/repair`, { body: {} })
        expect(repair.body).toMatchObject({ error: "Unauthorized", entryPoint: "repairMaintenance" })
        expect((yield* client.status(submissionId)).state).toBe("suspended")

        // An event for the Submission is kept until a wait for its name takes it.
        const sent = yield* call("POST", action.replace("approve", "send-event"), {
          token: operatorToken,
          body: { fields: { event: "paid", payload: '{"amount":3}', eventId: "paid-1" } },
        })
        expect(sent.body).toMatchObject({
          ok: true,
          result: { eventId: "paid-1", replayed: false, resumed: false },
        })
        expect((yield* client.status(submissionId)).state).toBe("suspended")

        // The console's own refusals: a request from another origin, a body that is not JSON, a
        // field that is required.
        const foreign = yield* call("POST", action, {
          token: operatorToken,
          body: { fields: {} },
          headers: { origin: "https://elsewhere.example" },
        })
        expect(foreign.body).toMatchObject({ error: "InvalidConsoleRequest" })
        const form = yield* call("POST", action, {
          token: operatorToken,
          headers: { "content-type": "text/plain" },
        })
        expect(form.body).toMatchObject({ error: "InvalidConsoleRequest" })
        const missing = yield* call("POST", action.replace("approve", "resolve-failed"), {
          token: operatorToken,
          body: { fields: {} },
        })
        expect(missing.body).toMatchObject({
          error: "InvalidConsoleRequest",
          message: "What happened is required",
        })
        expect(
          (yield* call("GET", `/api/objects/${thread}/threads/${thread}/submissions?limit=x`)).body,
        ).toMatchObject({
          error: "InvalidConsoleRequest",
        })
        expect(
          (yield* call("GET", `/api/objects/${thread}/threads/${thread}/submissions?limit=500`)).body,
        ).toMatchObject({
          error: "InvalidRequest",
          entryPoint: "submissionPage",
        })
        expect((yield* client.status(submissionId)).state).toBe("suspended")
        // Forget takes only a settled Submission: the Object refuses it with its typed error.
        const forget = action.replace("approve", "forget")
        const early = yield* call("POST", forget, { token: operatorToken, body: { fields: {} } })
        expect(early.body).toMatchObject({ error: "ForgetRefused", reason: "not-settled" })
        // A refusal is the request's conflict with the Submission's state, not a server failure.
        expect(early.status).toBe(409)
        const oversized = yield* call("POST", action.replace("approve", "send-event"), {
          token: operatorToken,
          body: { fields: { event: "paid", payload: JSON.stringify("x".repeat(200_000)) } },
        })
        expect(oversized.status).toBe(400)
        expect(oversized.body).toMatchObject({ error: "EventRefused", reason: "payload-bytes" })

        const allowed = yield* call("POST", action, {
          token: operatorToken,
          body: { fields: { note: "fine" } },
        })
        expect(allowed.status).toBe(200)
        yield* deliverUntil(
          thread,
          Effect.map(client.status(submissionId), (status) => status.state === "settled"),
        )
        // Once settled, Forget removes it now: the Object no longer knows the Submission.
        const late = yield* call("POST", action.replace("approve", "send-event"), {
          token: operatorToken,
          body: { fields: { event: "paid" } },
        })
        expect(late.status).toBe(409)
        expect(late.body).toMatchObject({ error: "EventRefused", reason: "settled" })
        const forgotten = yield* call("POST", forget, { token: operatorToken, body: { fields: {} } })
        expect(forgotten.body).toEqual({ ok: true, action: "forget" })
        expect((yield* Effect.flip(client.status(submissionId)))._tag).toBe("SubmissionNotFound")
      }),
  )

  it.live("reads as the caller too: another tenant's Thread is refused to it", () =>
    Effect.gen(function* () {
      const thread = `tenant:acme:${crypto.randomUUID()}`
      yield* ThreadClient.make(env.AUTHORIZED_TEST, thread, { caller: { subject: "acme" } }).submit({
        agentId: "echo",
        idempotencyKey: "k",
        input: { text: "hi" },
      })
      const asConsole = yield* call(
        "GET",
        `/api/objects/${encodeURIComponent(thread)}/threads/${encodeURIComponent(thread)}/submissions`,
      )
      expect(asConsole.status).toBe(403)
      expect(asConsole.body).toMatchObject({ error: "Unauthorized", entryPoint: "submissionPage" })
      const asOperator = yield* call(
        "GET",
        `/api/objects/${encodeURIComponent(thread)}/threads/${encodeURIComponent(thread)}/submissions`,
        { token: operatorToken },
      )
      expect(asOperator.status).toBe(200)
    }),
  )

  it.live("reaches a Thread, Object and key named `.` or `..`, or with `/`, `%` or `?` in it", () =>
    Effect.gen(function* () {
      // A path segment `.` or `..` (`%2E%2E` too) is one the URL parser removes: the console
      // writes it `$.` or `$..`, and every other value percent-encoded, as the page does.
      const segment = (value: string) =>
        value === "." || value === ".." ? `$${value}` : encodeURIComponent(value)
      const operator = { token: operatorToken }
      for (const id of [".", "..", "a/b", "../x", "50%", "why?", "%2E%2E", "$.", "$"]) {
        const client = ThreadClient.make(env.AUTHORIZED_TEST, id)
        const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: id, input: { text: id } })
        yield* deliverUntil(
          id,
          Effect.map(client.status(receipt.submissionId), (status) => status.state === "settled"),
        )
        const object = `/api/objects/${segment(id)}`
        const threads = yield* call("GET", object, operator)
        expect(threads.body, id).toMatchObject({ threads: [{ threadId: id, admitted: 1 }] })
        const api = `${object}/threads/${segment(id)}`
        const page = yield* call("GET", `${api}/submissions`)
        expect(page.body.submissions, id).toMatchObject([
          { submission: { submissionId: receipt.submissionId } },
        ])
        expect((yield* call("GET", `${api}/keys/${segment(id)}`)).body, id).toMatchObject({
          submissionId: receipt.submissionId,
        })
        const detail = yield* call("GET", `${api}/submissions/${segment(receipt.submissionId)}`)
        expect(detail.body, id).toMatchObject({ progress: { state: "settled" } })
        // By id too, with the Object-wide call naming the Thread in its query.
        const objectId = env.AUTHORIZED_TEST.idFromName(id).toString()
        const byId = yield* call("GET", `/api/ids/${objectId}?thread=${encodeURIComponent(id)}`, operator)
        expect(byId.body, id).toMatchObject({ threads: [{ threadId: id }] })
      }
    }),
  )

  it.live(
    "refuses by name what it cannot serve: a foreign id, a caller it cannot read, a body or number it misreads",
    () =>
      Effect.gen(function* () {
        const thread = `console-refusals-${crypto.randomUUID()}`
        const { client, submissionId } = yield* waitingReview(thread)
        const operator = { token: operatorToken }
        // An id of another namespace is not one of these Objects: a 400, not "unavailable".
        const foreign = env.THREADS_TEST.idFromName(thread).toString()
        expect(
          (yield* call("GET", `/api/ids/${foreign}/threads/${thread}/submissions`, operator)).body,
        ).toMatchObject({
          error: "InvalidConsoleRequest",
        })
        // Only decimal integers: "0x10" is not 16.
        const api = `/api/objects/${thread}/threads/${thread}`
        expect((yield* call("GET", `${api}/submissions?limit=0x10`, operator)).body).toMatchObject({
          error: "InvalidConsoleRequest",
        })
        // An action body that is not {"fields": {…}} runs nothing.
        const deny = `${api}/submissions/${submissionId}/actions/deny`
        for (const body of [null, { fields: ["oops"] }, ["fields"]]) {
          const answer = yield* call("POST", deny, { ...operator, body })
          expect(answer.status).toBe(400)
          expect(answer.body).toMatchObject({ error: "InvalidConsoleRequest" })
        }
        expect((yield* client.status(submissionId)).state).toBe("suspended")
        // An application's `caller` that throws on what the request carries is a refusal.
        const strict = ThreadConsole.handler({
          namespace: env.AUTHORIZED_TEST,
          basePath: "/ops/console/",
          caller: () => {
            throw new Error("a malformed access token")
          },
        })
        const refused = yield* Effect.promise(() =>
          strict(new Request(`${ORIGIN}/ops/console/api/objects/${thread}`)),
        )
        expect(refused.status).toBe(403)
        expect(yield* Effect.promise(() => refused.json())).toMatchObject({
          error: "Unauthorized",
          message: expect.stringContaining("a malformed access token"),
        })
      }),
  )

  it("reads the bearer token whatever the scheme's case, as HTTP's schemes are", () => {
    const callerOf = (authorization: string) =>
      ThreadConsole.bearerCaller(
        new Request(`${ORIGIN}/ops/console/api/objects`, { headers: { authorization } }),
      )
    for (const scheme of ["Bearer", "bearer", "BEARER"])
      expect(callerOf(`${scheme} ${operatorToken}`)).toEqual({
        subject: "console",
        credential: operatorToken,
      })
    expect(callerOf(`Basic ${operatorToken}`)).toBeUndefined()
  })
})
