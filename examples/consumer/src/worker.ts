import { Effect, Layer } from "effect"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import * as ThreadObject from "@effect-agent/platform-cloudflare/ThreadObject"
import { triage } from "./agent"
import { courier } from "./courier"
import { operatorsOnly } from "./operator"
import { route } from "./routes"
import { SettlementLog } from "./settlementLog"
import { followUpAgent, followUpRoute, Workflows } from "./workflow"

/**
 * The application's Thread layer: the triage and courier agents and the follow-up workflow, with
 * the settlement log sharing the alarm.
 */
export const Support = Layer.mergeAll(
  ThreadObject.layer([triage, courier, followUpAgent]).pipe(Layer.provide(SettlementLog)),
  Workflows,
)

/** The Durable Object class of the `THREADS` binding; operator actions are for operators. */
export class Threads extends ThreadObject.make(Support, { authorization: operatorsOnly }) {}

export interface Env {
  readonly THREADS: DurableObjectNamespace<Threads>
}

/** Each request addresses a Thread by the first segment of its path (see routes.ts). */
export default {
  async fetch(request, env) {
    const [, thread = "", submission = "", view = ""] = new URL(request.url).pathname.split("/")
    if (thread === "follow-up")
      return Response.json(await Effect.runPromise(followUpRoute(request, env.THREADS, submission)))
    // The Worker vouches for the caller: the bearer token travels as its credential.
    const token = /^Bearer (.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1]
    const client = ThreadClient.make(
      env.THREADS,
      thread,
      token === undefined ? {} : { caller: { subject: "bearer", credential: token } },
    )
    return Effect.runPromise(
      Effect.match(route(request, client, submission, view), {
        onSuccess: (value) => Response.json(value ?? { ok: true }),
        onFailure: (error) => Response.json({ error: error._tag, message: error.message }, { status: 400 }),
      }),
    )
  },
} satisfies ExportedHandler<Env>
