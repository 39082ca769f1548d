import { Effect, Layer, type Schema } from "effect"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import * as ThreadObject from "@effect-agent/platform-cloudflare/ThreadObject"
import { triage } from "./agent"
import { SettlementLog } from "./settlementLog"

/** The application's Thread layer: the triage agent, with the settlement log sharing its alarm. */
export const Support = ThreadObject.layer([triage]).pipe(Layer.provide(SettlementLog))

/** The Durable Object class of the `THREADS` binding. */
export class Threads extends ThreadObject.make(Support) {}

export interface Env {
  readonly THREADS: DurableObjectNamespace<Threads>
}

/** `POST /:thread` with `{ "ticket": "…" }` submits a ticket; `GET /:thread/:submission` reads it. */
export default {
  async fetch(request, env) {
    const [, thread = "", submission = ""] = new URL(request.url).pathname.split("/")
    const client = ThreadClient.make(env.THREADS, thread)
    const call: Effect.Effect<unknown, ThreadClient.ThreadClientError> =
      request.method === "POST"
        ? client.submit({
            agentId: "triage",
            idempotencyKey: request.headers.get("idempotency-key") ?? crypto.randomUUID(),
            // Not JSON: `null`, which the agent's input Schema refuses with a typed error.
            input: await request.json<Schema.Json>().catch(() => null),
          })
        : client.status(submission)
    return Effect.runPromise(
      Effect.match(call, {
        onSuccess: (value) => Response.json(value),
        onFailure: (error) => Response.json({ error: error._tag, message: error.message }, { status: 400 }),
      }),
    )
  },
} satisfies ExportedHandler<Env>
