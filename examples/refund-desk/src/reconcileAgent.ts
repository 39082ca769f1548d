/**
 * The nightly reconciliation: every night at 02:00 (UTC) a schedule in the `reconciliation`
 * Object admits one Submission of this agent, which asks the payment provider what it refunded
 * since the previous night and journals the total. Each occurrence is keyed by its instant, so
 * a duplicate alarm or a crash never reconciles a night twice, and after downtime the latest
 * missed night runs once.
 */
import { env } from "cloudflare:workers"
import { Effect, Schema } from "effect"
import { AgentFailure, define } from "@effect-agent/platform-cloudflare/AgentRegistration"
import type { ThreadNamespace } from "@effect-agent/platform-cloudflare/ThreadClient"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"

/** Where the schedule lives: one Thread of its own Object. */
export const reconciliationThread = { objectName: "reconciliation", threadId: "nightly" } as const

const DAY_MILLIS = 86_400_000

export const reconcileAgent = define({
  id: "reconcile",
  version: "1",
  input: Schema.Struct({}),
  output: Schema.Struct({ since: Schema.Number, refunds: Schema.Int }),
  program: (_input, ctx) =>
    Effect.gen(function* () {
      // The window is journaled with the step's result, so a replay reconciles the same night.
      return yield* ctx.step(
        "count the provider's refunds",
        Effect.tryPromise({
          try: async () => {
            const since = Date.now() - DAY_MILLIS
            return { since, refunds: await env.PAYMENTS.getByName("provider").issuedSince(since) }
          },
          catch: (cause) => new AgentFailure({ message: "the payment provider did not answer", cause }),
        }),
        { retry: { attempts: 3, backoff: { baseMillis: 60_000 } } },
      )
    }),
})

/** The nightly schedule (scheduling it again with the same definition changes nothing). */
export const scheduleNightly = (threads: ThreadNamespace) =>
  ThreadClient.make(threads, reconciliationThread.threadId, { objectName: reconciliationThread.objectName })
    .agent(reconcileAgent)
    .schedule({}, { scheduleId: "nightly-reconciliation", cron: "0 2 * * *" })
