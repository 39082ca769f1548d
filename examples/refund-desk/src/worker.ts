/**
 * The example Worker: a refund desk whose Threads live in `Threads` Durable Objects, asking a
 * fraud desk (a child agent in `fraud-desk-<n>` Objects of the same namespace, one per group of
 * customers) before it pays,
 * with a settlement outbox relaying every outcome to the `RelayInbox` Object, a stand-in
 * payment provider (`Payments`), an operator console at `/console`, and settled refunds archived
 * to the `ARCHIVE` R2 bucket when retention removes them.
 *
 *   POST /threads/:thread/submissions            {"input":{"orderId":"A1","amount":40}}
 *        a follow-up joining the running refund:  {"mode":"join","input":{"orderId":"A1","amount":10}}
 *   GET  /threads/:thread/submissions            the Thread's Submissions, oldest first
 *   GET  /threads/:thread/submissions/:id        status;  …/:id/explain  why it waits
 *   GET  /threads/:thread/submissions/:id/progress?after=<token>&timeoutMillis=5000
 *   GET  /threads/:thread/submissions/:id/settlement?timeoutMillis=5000
 *   POST /threads/:thread/submissions/:id/approve|deny   {"note":"ok by Sam"}      (operator)
 *   POST /threads/:thread/submissions/:id/resolve        {"succeeded":true,"value":"…"} (operator)
 *   POST /threads/:thread/submissions/:id/abort|retry                               (operator)
 *   GET  /threads/:thread   …/history   …/maintenance   …/obligations   …/verify
 *        (add ?object=fraud-desk-6 to read a Thread of the fraud desk, e.g. /threads/customer-of-A1/history)
 *   POST /threads/:thread/repair (operator)   POST /threads/:thread/wake
 *   POST /threads/:thread/submissions/:id/forget  removes a settled refund's data now   (operator)
 *   GET  /threads           the Threads seen;   /console   the operator console (ThreadConsole)
 *   GET  /relay             what the outbox delivered;   POST /relay/refuse {"count":2}
 *   GET  /reconciliation    the nightly reconciliation's schedule (scheduled by the first request)
 *
 * Operator routes need `Authorization: Bearer <OPERATOR_TOKEN>`; the Thread Object checks it.
 */
import { Effect, Layer, Schema } from "effect"
import { DurableObjectContext } from "@effect-agent/platform-cloudflare/CloudflareBindings"
import { ThreadId } from "@effect-agent/platform-cloudflare/Identifiers"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { Unauthorized } from "@effect-agent/platform-cloudflare/ThreadClient"
import * as ThreadConsole from "@effect-agent/platform-cloudflare/ThreadConsole"
import * as ThreadObject from "@effect-agent/platform-cloudflare/ThreadObject"
import { RefundArchive } from "./archive.ts"
import { fraudCheckAgent } from "./fraudAgent.ts"
import { fraudDeskObjects, fraudDeskShards } from "./fraudShards.ts"
import { RefundOutbox } from "./outbox.ts"
import { reconcileAgent, reconciliationThread, scheduleNightly } from "./reconcileAgent.ts"
import { refundAgent } from "./refundAgent.ts"
import { json, segmentOf, threadRoute } from "./routes.ts"

export { ThreadDirectory } from "./directory.ts"
export { Payments } from "./payments.ts"
export { RelayInbox } from "./relayInbox.ts"

/** Compares in time independent of where the strings differ. */
const sameSecret = (a: string, b: string): boolean => {
  let difference = a.length ^ b.length
  for (let i = 0; i < Math.max(a.length, b.length); i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/**
 * The operator policy: the operator actions (approve or deny, resolve, abort, retry, forget, repair:
 * the calls of kind `operate`) need the Worker's bearer token; reads and submissions are open.
 */
const operatorsOnly: ThreadObject.AuthorizationCheck = ({ caller, entryPoint, kind }) =>
  Effect.gen(function* () {
    if (kind !== "operate") return
    const { env } = yield* DurableObjectContext
    const expected = env.OPERATOR_TOKEN
    // Without a configured token nobody is an operator.
    if (
      caller?.credential !== undefined &&
      expected !== undefined &&
      expected !== "" &&
      sameSecret(caller.credential, expected)
    )
      return
    return yield* new Unauthorized({
      entryPoint,
      message:
        caller === undefined
          ? `${entryPoint} is an operator action: send Authorization: Bearer <token>`
          : "the bearer token is not valid",
    })
  })

/**
 * The Threads of this Worker: the refund agent and the fraud desk it asks, with the settlement
 * outbox sharing the alarm, and the R2 archive that settled refunds go to before retention
 * removes them.
 */
const RefundDesk = ThreadObject.layer([refundAgent, fraudCheckAgent, reconcileAgent]).pipe(
  Layer.provide(Layer.merge(RefundOutbox, RefundArchive)),
)

/** Settled refunds are kept 30 days (and so are their idempotency keys), then archived and removed. */
const RETENTION_MILLIS = 30 * 86_400_000

/**
 * The Thread Objects of this Worker; operator actions need the bearer token. The namespace
 * binding is how the fraud desk's answers find their way back to a refund's Object.
 */
export class Threads extends ThreadObject.make(RefundDesk, {
  authorization: operatorsOnly,
  namespaceBinding: "THREADS",
  config: { retention: { settledForMillis: RETENTION_MILLIS } },
}) {}

const usage = {
  about: "effect-agent refund desk example",
  console: "open /console",
  try: [
    'curl -s -X POST localhost:8787/threads/desk-1/submissions -d \'{"input":{"orderId":"A1","amount":40}}\'',
    "curl -s localhost:8787/threads/desk-1/history",
  ],
}

/** The most deliveries one request may have the relay inbox refuse. */
const MAX_REFUSALS = 1_000

const relayRoute = async (request: Request, env: Cloudflare.Env) => {
  const inbox = env.RELAY.getByName("relay")
  if (request.method === "POST") {
    // An empty body refuses one delivery; anything else must say how many, a small whole number
    // (a count of 1e300 would refuse every delivery for good).
    const text = await request.text()
    let count: unknown = 1
    try {
      if (text.trim() !== "") count = (JSON.parse(text) as { count?: unknown } | null)?.count ?? 1
    } catch {
      count = text
    }
    if (!(Number.isSafeInteger(count) && (count as number) >= 0 && (count as number) <= MAX_REFUSALS))
      return json(400, {
        error: "InvalidRequest",
        message: `the body is {"count": n} with a whole n from 0 to ${MAX_REFUSALS}, not ${JSON.stringify(text.slice(0, 100))}`,
      })
    await inbox.refuse(count as number)
    return json(200, { ok: true })
  }
  return json(200, await inbox.received())
}

/** The reconciliation Object's schedules: the nightly one, its next and last occurrence. */
const reconciliationRoute = (env: Cloudflare.Env) =>
  Effect.runPromise(
    scheduleNightly(env.THREADS).pipe(
      Effect.andThen(
        ThreadClient.make(env.THREADS, reconciliationThread.threadId, {
          objectName: reconciliationThread.objectName,
        }).schedules,
      ),
      Effect.match({
        onSuccess: (schedules) => json(200, schedules),
        onFailure: (error) => json(500, { error: error._tag, message: error.message }),
      }),
    ),
  )

/**
 * The operator console at `/console`: it lists the refund desks' Objects (each Thread in the
 * Object named after it, as the directory remembers them) and the fraud desk's shards. Its calls carry
 * the browser's bearer token as the caller, so `operatorsOnly` decides what it may do.
 */
const operatorConsole = (env: Cloudflare.Env) =>
  ThreadConsole.handler({
    namespace: env.THREADS,
    namespaceBinding: "THREADS",
    basePath: "/console",
    title: "Refund desk · operator console",
    objects: async () => [
      ...(await env.DIRECTORY.getByName("directory").list()),
      ...fraudDeskObjects(fraudDeskShards(env.FRAUD_DESK_SHARDS)),
    ],
  })

/** Whether this isolate has made sure the nightly schedule exists (idempotent, once per isolate). */
let nightlyScheduled = false

export default {
  async fetch(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
    if (!nightlyScheduled) {
      nightlyScheduled = true
      // Scheduling the same definition again changes nothing, so every isolate may ask once.
      ctx.waitUntil(
        Effect.runPromise(
          scheduleNightly(env.THREADS).pipe(
            Effect.catch((error) => Effect.logWarning("the nightly schedule was refused", error)),
          ),
        ),
      )
    }
    const url = new URL(request.url)
    const path = url.pathname.replace(/\/+$/, "")
    if (path === "/relay" || path === "/relay/refuse") return relayRoute(request, env)
    if (path === "/reconciliation") return reconciliationRoute(env)
    const desk = operatorConsole(env)
    if (desk.matches(request)) return desk(request)
    const directory = env.DIRECTORY.getByName("directory")
    if (path === "/threads") return json(200, await directory.list())
    const parts = path.split("/")
    if (
      request.method === "POST" &&
      parts[1] === "threads" &&
      parts[3] === "submissions" &&
      parts.length === 4
    ) {
      // Noted before the admission, so that a crash after it cannot hide an accepted refund's
      // Thread from the console; only a name that can address a Thread (the route refuses the
      // others), so the front page lists no Object that cannot exist.
      const thread = segmentOf(parts[2] ?? "")
      if (thread !== undefined && Schema.is(ThreadId)(thread)) await directory.note(thread)
    }
    const response = await Effect.runPromise(threadRoute(request, env.THREADS))
    return response ?? json(200, usage)
  },
} satisfies ExportedHandler<Cloudflare.Env>
