import { Effect, Schema } from "effect"
import type * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { triage } from "./agent"
import { decide } from "./approval"
import { jsonBody } from "./body"

/** The request's JSON body as a ticket, decoded with the agent's own input Schema. */
const ticketOf = (request: Request) =>
  jsonBody(request).pipe(Effect.flatMap(Schema.decodeUnknownEffect(triage.input)))

/**
 * What a request asks of its Thread: `POST /:thread` with `{ "ticket": "…" }` submits a ticket;
 * `GET /:thread/:submission` reads it, `…/settlement` waits for its queue and reference,
 * `…/explain` says why it is where it is; with `Authorization: Bearer <token>`,
 * `POST /:thread/:submission` withdraws it and `…/approve` (or `…/deny`) decides a refund.
 * Operator calls are checked by the Object, not here.
 */
export const route = (
  request: Request,
  client: ThreadClient.ThreadClient,
  submission: string,
  view: string,
): Effect.Effect<unknown, { readonly _tag: string; readonly message: string }> => {
  // The triage agent's calls, typed by its Schemas: a ticket in, its queue and reference out.
  const tickets = client.agent(triage)
  if (request.method === "POST" && submission === "") {
    const idempotencyKey = request.headers.get("idempotency-key") ?? crypto.randomUUID()
    return Effect.flatMap(ticketOf(request), (ticket) => tickets.submit(ticket, { idempotencyKey }))
  }
  if (request.method === "POST" && (view === "approve" || view === "deny"))
    return decide(request, client, submission, view === "approve")
  if (request.method === "POST") return client.abort(submission)
  if (view === "settlement") return tickets.awaitSettlement(submission, 10_000)
  return view === "explain" ? client.explain(submission) : client.status(submission)
}
