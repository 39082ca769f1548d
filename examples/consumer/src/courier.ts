import { Effect, Schema } from "effect"
import * as AgentEvent from "@effect-agent/platform-cloudflare/AgentEvent"
import { AgentFailure, define } from "@effect-agent/platform-cloudflare/AgentRegistration"
import type * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { triage } from "./agent"

export const Delivered = AgentEvent.make("delivered", Schema.Struct({ signedBy: Schema.String }))
// Stand-in for a label printer's API, which fails now and then.
const printLabel = (parcel: string) => Effect.succeed(`label-${parcel}`)

export const courier = define({
  id: "courier",
  version: "1",
  input: Schema.Struct({ parcel: Schema.String }),
  output: Schema.String,
  events: [Delivered], // decoded when sent: a bad payload is refused before anything is written
  program: ({ parcel }, ctx) =>
    Effect.gen(function* () {
      // Retried with backoff: each failed attempt journaled, each wait a durable timer.
      const label = yield* ctx.step("print label", printLabel(parcel), {
        retry: { attempts: 5, backoff: { baseMillis: 1_000 } },
        timeoutMillis: 30_000,
      })
      yield* ctx.sleep("hand-over", "10 minutes") // fires once, never early
      const { signedBy } = yield* ctx
        .waitForEvent(Delivered, { timeoutMillis: 3_600_000 })
        .pipe(
          Effect.catchTag("EventTimeout", () => Effect.fail(new AgentFailure({ message: "not delivered" }))),
        )
      return `${label} signed by ${signedBy}`
    }),
})

// In the Worker: the event (idempotent by eventId), a Submission admitted now that runs no
// earlier than tomorrow, and a schedule admitting one Submission per occurrence (Effect's Cron)
// that passes over an occurrence while the last one has not settled.
export const later = (client: ThreadClient.ThreadClient, submissionId: string) => {
  const tickets = client.agent(triage)
  return Effect.all([
    client.agent(courier).sendEvent(submissionId, Delivered, { signedBy: "Ada" }, { eventId: "webhook-42" }),
    tickets.submit({ ticket: "follow up" }, { idempotencyKey: "t-2", notBefore: Date.now() + 86_400_000 }),
    tickets.schedule(
      { ticket: "nightly sweep" },
      { scheduleId: "sweep", cron: "0 2 * * *", timeZone: "Europe/Paris", overlap: "skip" },
    ),
  ])
}
