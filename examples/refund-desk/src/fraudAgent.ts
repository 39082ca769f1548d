/**
 * The fraud desk: a child agent that refunds ask before they pay anything out. It runs in
 * Objects of its own (`fraud-desk-<n>`, see `fraudShards.ts`), one Thread per customer, so every
 * refund desk shares them and a slow check never holds a desk's lane. It scores a refund (a
 * journaled step) and answers `clear` or `review`.
 */
import { Effect, Schema } from "effect"
import { define } from "@effect-agent/platform-cloudflare/AgentRegistration"

const FraudQuestion = Schema.Struct({
  orderId: Schema.String,
  customer: Schema.String,
  amount: Schema.Number,
})

const FraudVerdict = Schema.Struct({
  verdict: Schema.Literals(["clear", "review"]),
  score: Schema.Number,
})

// A stand-in for a real scoring service, deterministic so the example runs offline.
const score = (amount: number) => Effect.succeed(Math.min(99, Math.round(amount / 3)))

export const fraudCheckAgent = define({
  id: "fraud-check",
  name: "Fraud check",
  version: "1",
  input: FraudQuestion,
  output: FraudVerdict,
  program: (question, ctx) =>
    Effect.gen(function* () {
      const points = yield* ctx.step("score", score(question.amount))
      return { verdict: points > 60 ? ("review" as const) : ("clear" as const), score: points }
    }),
})
