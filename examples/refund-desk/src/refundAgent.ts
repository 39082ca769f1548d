/**
 * The example agent: a refund desk. It looks the order up (a journaled step), asks a human to
 * approve refunds above a threshold (the Thread then waits without keeping its Object awake),
 * issues the refund with the payment provider (an uncertain step: if the Object dies between
 * sending and recording, nobody knows whether money moved, so the lane blocks until an operator
 * resolves the outcome), and writes the confirmation (another journaled step).
 */
import { Effect, Schema } from "effect"
import { AgentFailure, define } from "@effect-agent/platform-cloudflare/AgentRegistration"

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
})

const Order = Schema.Struct({ orderId: Schema.String, customer: Schema.String, paid: Schema.Number })

// Stand-ins for real systems, deterministic so the example runs offline.
const lookUpOrder = (orderId: string) =>
  Effect.succeed({ orderId, customer: `customer-of-${orderId}`, paid: 250 })

const sendRefund = (orderId: string, amount: number) =>
  Effect.succeed(`refund-${orderId}-${Math.round(amount * 100)}`)

export const refundAgent = define({
  id: "refund",
  name: "Refund desk",
  version: "1",
  input: RefundRequest,
  output: RefundResult,
  program: (request, ctx) =>
    Effect.gen(function* () {
      const order = yield* ctx.step("look up order", lookUpOrder(request.orderId), { result: Order })
      if (request.amount > order.paid) {
        return yield* new AgentFailure({
          message: `cannot refund ${request.amount}: the order paid ${order.paid}`,
        })
      }
      const approval =
        request.amount > approvalThreshold
          ? yield* ctx.requestApproval({
              orderId: order.orderId,
              customer: order.customer,
              amount: request.amount,
            })
          : undefined
      const refundId = yield* ctx.uncertainStep("issue refund", sendRefund(order.orderId, request.amount), {
        result: Schema.String,
      })
      yield* ctx.step("confirm to customer", Effect.succeed(`sent confirmation to ${order.customer}`))
      return {
        orderId: order.orderId,
        refundId,
        amount: request.amount,
        ...(approval?.note === undefined ? {} : { approvedBy: approval.note }),
      }
    }),
})
