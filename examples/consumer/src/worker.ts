import { Effect, Layer, type Schema } from "effect"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import * as ThreadObject from "@effect-agent/platform-cloudflare/ThreadObject"
import { triage } from "./agent"
import { decide } from "./approval"
import { operatorsOnly } from "./operator"
import { SettlementLog } from "./settlementLog"

/** The application's Thread layer: the triage agent, with the settlement log sharing its alarm. */
export const Support = ThreadObject.layer([triage]).pipe(Layer.provide(SettlementLog))

/** The Durable Object class of the `THREADS` binding; privileged calls are for operators. */
export class Threads extends ThreadObject.make(Support, { authorization: operatorsOnly }) {}

export interface Env {
  readonly THREADS: DurableObjectNamespace<Threads>
}

/** What a request asks of its Thread; `abort` is an operator's call, the Object checks it. */
const call = async (
  request: Request,
  client: ThreadClient.ThreadClient,
  submission: string,
  view: string,
): Promise<Effect.Effect<unknown, ThreadClient.ThreadClientError>> => {
  if (request.method !== "POST")
    return view === "explain" ? client.explain(submission) : client.status(submission)
  if (view === "approve" || view === "deny") return decide(request, client, submission, view === "approve")
  if (submission !== "") return client.abort(submission)
  return client.submit({
    agentId: "triage",
    idempotencyKey: request.headers.get("idempotency-key") ?? crypto.randomUUID(),
    // Not JSON: `null`, which the agent's input Schema refuses with a typed error.
    input: await request.json<Schema.Json>().catch(() => null),
  })
}

/**
 * `POST /:thread` with `{ "ticket": "…" }` submits a ticket; `GET /:thread/:submission` reads it,
 * `GET /:thread/:submission/explain` says why it is where it is; with `Authorization: Bearer
 * <token>`, `POST /:thread/:submission` withdraws it and `POST /:thread/:submission/approve` (or
 * `/deny`) decides a refund.
 */
export default {
  async fetch(request, env) {
    const [, thread = "", submission = "", view = ""] = new URL(request.url).pathname.split("/")
    // The Worker vouches for the caller: the bearer token travels as its credential.
    const token = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1]
    const client = ThreadClient.make(
      env.THREADS,
      thread,
      token === undefined ? {} : { caller: { subject: "bearer", credential: token } },
    )
    return Effect.runPromise(
      Effect.match(await call(request, client, submission, view), {
        onSuccess: (value) => Response.json(value ?? { ok: true }),
        onFailure: (error) => Response.json({ error: error._tag, message: error.message }, { status: 400 }),
      }),
    )
  },
} satisfies ExportedHandler<Env>
