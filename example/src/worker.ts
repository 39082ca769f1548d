/**
 * The example Worker: a refund desk whose Threads live in `Threads` Durable Objects, asking a
 * fraud desk (a child agent in the `fraud-desk` Object of the same namespace) before it pays,
 * with a settlement outbox relaying every outcome to the `RelayInbox` Object.
 *
 *   POST /threads/:thread/submissions            {"input":{"orderId":"A1","amount":40}}
 *        a follow-up joining the running refund:  {"mode":"join","input":{"orderId":"A1","amount":10}}
 *   GET  /threads/:thread/submissions/:id        status
 *   GET  /threads/:thread/submissions/:id/settlement?timeoutMillis=5000
 *   POST /threads/:thread/submissions/:id/approve|deny   {"note":"ok by Sam"}
 *   POST /threads/:thread/submissions/:id/resolve        {"succeeded":true,"value":"refund-A1-4000"}
 *   POST /threads/:thread/submissions/:id/abort
 *   GET  /threads/:thread   /threads/:thread/history   /threads/:thread/maintenance
 *        (add ?object=fraud-desk to read a Thread of the fraud desk, e.g. /threads/customer-of-A1/history)
 *   GET  /relay             what the outbox delivered;   POST /relay/refuse {"count":2}
 */
import { Effect } from "effect"
import * as ThreadObject from "@effect-agent/platform-cloudflare/ThreadObject"
import { RefundOutbox } from "./outbox.ts"
import { fraudCheckAgent } from "./fraudAgent.ts"
import { refundAgent } from "./refundAgent.ts"
import { json, threadRoute } from "./routes.ts"

export { RelayInbox } from "./relayInbox.ts"

/** The Thread Objects of this Worker. */
export class Threads extends ThreadObject.make({
  agents: [refundAgent, fraudCheckAgent],
  hooks: RefundOutbox,
  // How the fraud desk's answers find their way back to a refund's Object.
  namespaceBinding: "THREADS",
}) {}

const usage = {
  about: "effect-agent refund desk example",
  try: [
    'curl -s -X POST localhost:8787/threads/desk-1/submissions -d \'{"input":{"orderId":"A1","amount":40}}\'',
    "curl -s localhost:8787/threads/desk-1/history",
  ],
}

const relayRoute = async (request: Request, env: Cloudflare.Env) => {
  const inbox = env.RELAY.getByName("relay")
  if (request.method === "POST") {
    const body = (await request.json().catch(() => ({}))) as { count?: unknown }
    await inbox.refuse(typeof body.count === "number" ? body.count : 1)
    return json(200, { ok: true })
  }
  return json(200, await inbox.received())
}

export default {
  async fetch(request: Request, env: Cloudflare.Env): Promise<Response> {
    const path = new URL(request.url).pathname
    if (path === "/relay" || path === "/relay/refuse") return relayRoute(request, env)
    const response = await Effect.runPromise(threadRoute(request, env.THREADS))
    return response ?? json(200, usage)
  },
} satisfies ExportedHandler<Cloudflare.Env>
