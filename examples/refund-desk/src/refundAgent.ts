/**
 * The example agent: a refund desk. It looks the order up (a journaled step), asks the fraud
 * desk in another Object (a child Submission, awaited as a value), asks a human to approve
 * refunds above a threshold or flagged by the fraud desk (the Thread then waits without
 * keeping its Object awake), adds the follow-ups that joined it meanwhile (e.g. "refund the
 * shipping too", submitted with `mode: "join"`), issues the refund with the payment provider
 * (an uncertain step: if the Object dies between sending and recording, nobody knows whether
 * money moved), and writes the confirmation (another journaled step). The refund sends an
 * idempotency key, so after a crash the step reconciles itself: it asks the provider about
 * that key, and only if the provider cannot answer does the lane wait for an operator.
 */
import { env } from "cloudflare:workers"
import { Effect, Schema } from "effect"
import { Reconcile } from "@effect-agent/platform-cloudflare/AgentContext"
import { AgentFailure, define } from "@effect-agent/platform-cloudflare/AgentRegistration"
import { fraudCheckAgent } from "./fraudAgent.ts"
import { fraudDeskObjectFor, fraudDeskShards } from "./fraudShards.ts"

/** Refunds above this amount need a human's approval. */
export const approvalThreshold = 100

const RefundRequest = Schema.Struct({
  orderId: Schema.String.check(Schema.isNonEmpty()),
  amount: Schema.Number.check(Schema.isGreaterThan(0)),
})

const RefundResult = Schema.Struct({
  orderId: Schema.String,
  refundId: Schema.String,
  amount: Schema.Number,
  approvedBy: Schema.optionalKey(Schema.String),
  /** Follow-ups that joined this refund and were paid with it. */
  followUps: Schema.Int,
  fraudScore: Schema.optionalKey(Schema.Number),
})

const Order = Schema.Struct({ orderId: Schema.String, customer: Schema.String, paid: Schema.Number })

// Stand-ins for real systems, deterministic so the example runs offline.
const lookUpOrder = (orderId: string) =>
  Effect.succeed({ orderId, customer: `customer-of-${orderId}`, paid: 250 })

const provider = () => env.PAYMENTS.getByName("provider")

const providerCall = <A>(operation: string, call: () => Promise<A>) =>
  Effect.tryPromise({
    try: call,
    catch: (cause) => new AgentFailure({ message: `the payment provider could not ${operation}`, cause }),
  })

const sendRefund = (key: string, orderId: string, amount: number) =>
  providerCall("issue the refund", () => provider().refund(key, orderId, amount))

/** Did the provider issue a refund for `key`? Its answer settles an Unknown Outcome. */
const findRefund = (key: string) =>
  providerCall("look the refund up", () => provider().lookup(key)).pipe(
    Effect.map((refundId) => (refundId === null ? Reconcile.notHappened : Reconcile.happened(refundId))),
  )

export const refundAgent = define({
  id: "refund",
  name: "Refund desk",
  version: "2",
  input: RefundRequest,
  output: RefundResult,
  acceptsJoinedInput: true,
  program: (request, ctx) =>
    Effect.gen(function* () {
      const order = yield* ctx.step("look up order", lookUpOrder(request.orderId), { result: Order })
      if (request.amount > order.paid) {
        return yield* new AgentFailure({
          message: `cannot refund ${request.amount}: the order paid ${order.paid}`,
        })
      }
      // A child Submission in the customer's fraud desk Object; its failure would be a value here too.
      const check = yield* ctx.startChild({
        agent: fraudCheckAgent,
        input: { orderId: order.orderId, customer: order.customer, amount: request.amount },
        thread: {
          objectName: fraudDeskObjectFor(order.customer, fraudDeskShards(env.FRAUD_DESK_SHARDS)),
          threadId: order.customer,
        },
      })
      const fraud = yield* ctx.awaitChild(check)
      const flagged = fraud.outcome !== "completed" || fraud.output.verdict === "review"
      const approval =
        request.amount > approvalThreshold || flagged
          ? yield* ctx.requestApproval({
              orderId: order.orderId,
              customer: order.customer,
              amount: request.amount,
              fraud: fraud.outcome === "completed" ? fraud.output : fraud.outcome,
            })
          : undefined
      const followUps = yield* ctx.receiveJoined
      const amount = followUps.reduce((total, followUp) => total + followUp.amount, request.amount)
      if (amount > order.paid) {
        return yield* new AgentFailure({ message: `cannot refund ${amount}: the order paid ${order.paid}` })
      }
      // The provider deduplicates by this key, and can be asked about it after a crash.
      const key = `${ctx.threadId}/${ctx.submissionId}`
      const refundId = yield* ctx.uncertainStep("issue refund", sendRefund(key, order.orderId, amount), {
        result: Schema.String,
        reconcile: findRefund(key),
      })
      yield* ctx.step("confirm to customer", Effect.succeed(`sent confirmation to ${order.customer}`))
      return {
        orderId: order.orderId,
        refundId,
        amount,
        followUps: followUps.length,
        ...(fraud.outcome === "completed" ? { fraudScore: fraud.output.score } : {}),
        ...(approval?.note === undefined ? {} : { approvedBy: approval.note }),
      }
    }),
})
