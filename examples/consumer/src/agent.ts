import { Effect, Schema } from "effect"
import { define } from "@effect-agent/platform-cloudflare/AgentRegistration"

// Stand-in for a real ticket system.
const fileTicket = (queue: string, ticket: string) => Effect.succeed(`${queue}-${ticket.length}`)

/** Routes a support ticket to a queue and files it there; a refund waits for an operator first. */
export const triage = define({
  id: "triage",
  version: "1", // part of the digest: bump it when the contract changes
  input: Schema.Struct({ ticket: Schema.String }),
  output: Schema.Struct({ queue: Schema.String, reference: Schema.String }),
  program: ({ ticket }, ctx) =>
    Effect.gen(function* () {
      // Journaled: after a crash the recorded result is replayed, not recomputed.
      const queue = yield* ctx.step(
        "classify",
        Effect.succeed(
          /outage|down/i.test(ticket) ? "on-call" : /refund/i.test(ticket) ? "billing" : "support",
        ),
      )
      // A stable wait: no alarm is kept until an operator approves; a denial settles it `failed`.
      if (queue === "billing") yield* ctx.requestApproval({ ticket })
      // Uncertain: it never runs twice; a crash mid-call leaves an Unknown Outcome to resolve.
      const reference = yield* ctx.uncertainStep("file", fileTicket(queue, ticket))
      return { queue, reference }
    }),
})
