import { Cause, Effect, Exit, Layer, Option, Schema } from "effect"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import * as ThreadObject from "@effect-agent/platform-cloudflare/ThreadObject"
import * as ThreadWorkflowEngine from "@effect-agent/platform-cloudflare/ThreadWorkflowEngine"
import { triage } from "./agent"
import { decide } from "./approval"
import { operatorsOnly } from "./operator"
import { SettlementLog } from "./settlementLog"
import { FollowUp, followUpAgent, Workflows } from "./workflow"

/**
 * The application's Thread layer: the triage agent and the follow-up workflow, with the
 * settlement log sharing the alarm.
 */
export const Support = Layer.mergeAll(
  ThreadObject.layer([triage, followUpAgent]).pipe(Layer.provide(SettlementLog)),
  Workflows,
)

/** The Durable Object class of the `THREADS` binding; operator actions are for operators. */
export class Threads extends ThreadObject.make(Support, { authorization: operatorsOnly }) {}

export interface Env {
  readonly THREADS: DurableObjectNamespace<Threads>
}

/** The request's JSON body as a ticket, decoded with the agent's own input Schema. */
const ticketOf = (request: Request) =>
  Effect.promise(() => request.json().catch(() => null)).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(triage.input)),
  )

/** What a request asks of its Thread; `abort` is an operator's call, the Object checks it. */
const call = (
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

/** A ticket's follow-up as the Worker reports it: running, parked, or its typed result. */
const followUpState = (ticket: string) =>
  Effect.map(
    Effect.flatMap(FollowUp.executionId({ ticket }), (id) => FollowUp.poll(id)),
    (result) =>
      Option.isNone(result)
        ? { state: "running" }
        : result.value._tag === "Suspended"
          ? { state: "parked" }
          : Exit.isSuccess(result.value.exit)
            ? { state: "completed", value: result.value.exit.value }
            : { state: "failed", error: Cause.pretty(result.value.exit.cause) },
  )

/** `POST /follow-up/:ticket` starts the ticket's follow-up (once); `GET` polls its result. */
const followUp = (request: Request, env: Env, ticket: string): Effect.Effect<unknown> => {
  const engine = ThreadWorkflowEngine.layerClient(env.THREADS)
  return request.method === "POST"
    ? Effect.provide(FollowUp.execute({ ticket }, { discard: true }), engine)
    : Effect.provide(followUpState(ticket), engine)
}

/**
 * `POST /:thread` with `{ "ticket": "…" }` submits a ticket; `GET /:thread/:submission` reads it,
 * `GET /:thread/:submission/settlement` waits for its queue and reference,
 * `GET /:thread/:submission/explain` says why it is where it is; with `Authorization: Bearer
 * <token>`, `POST /:thread/:submission` withdraws it and `POST /:thread/:submission/approve` (or
 * `/deny`) decides a refund.
 */
export default {
  async fetch(request, env) {
    const [, thread = "", submission = "", view = ""] = new URL(request.url).pathname.split("/")
    if (thread === "follow-up")
      return Response.json(await Effect.runPromise(followUp(request, env, submission)))
    // The Worker vouches for the caller: the bearer token travels as its credential.
    const token = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1]
    const client = ThreadClient.make(
      env.THREADS,
      thread,
      token === undefined ? {} : { caller: { subject: "bearer", credential: token } },
    )
    return Effect.runPromise(
      Effect.match(call(request, client, submission, view), {
        onSuccess: (value) => Response.json(value ?? { ok: true }),
        onFailure: (error) => Response.json({ error: error._tag, message: error.message }, { status: 400 }),
      }),
    )
  },
} satisfies ExportedHandler<Env>
