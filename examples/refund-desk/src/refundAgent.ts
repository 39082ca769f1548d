/**
 * The example agent: a refund desk. It looks the order up (a journaled step), asks the fraud
 * desk in another Object (a child Submission, awaited as a value), asks a human to approve
 * refunds above a threshold or flagged by the fraud desk (reminding the approvers once if no
 * decision came within the reminder delay, then waiting without keeping its Object awake), adds the follow-ups that joined it meanwhile (e.g. "refund the
 * shipping too", submitted with `mode: "join"`), issues the refund with the payment provider
 * (an uncertain step: if the Object dies between sending and recording, nobody knows whether
 * money moved), and writes the confirmation (another journaled step). The order system is
 * sometimes busy: its lookup is retried with backoff, each wait a durable timer. The refund sends an
 * idempotency key, so after a crash the step reconciles itself: it asks the provider about
 * that key, and only if the provider cannot answer does the lane wait for an operator.
 */
import { env } from "cloudflare:workers"
import { Effect, Schema } from "effect"
import { type AgentContext, Reconcile } from "@effect-agent/platform-cloudflare/AgentContext"
import { AgentFailure, define } from "@effect-agent/platform-cloudflare/AgentRegistration"
import { fraudCheckAgent, fraudDeskObject } from "./fraudAgent.ts"

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

/** How long an approval may wait before the approvers are reminded (one hour unless configured). */
const reminderAfterMillis = () => Number(env.APPROVAL_REMINDER_MILLIS ?? 3_600_000)

// Stand-ins for real systems, deterministic so the example runs offline. The order system is
// busy the first time this isolate looks up an order whose id starts with "busy-".
const lookedUp = new Set<string>()
const lookUpOrder = (orderId: string) =>
  Effect.suspend(() => {
    const first = !lookedUp.has(orderId)
    lookedUp.add(orderId)
    return first && orderId.startsWith("busy-")
      ? Effect.fail(new AgentFailure({ message: "the order system is busy" }))
      : Effect.succeed({ orderId, customer: `customer-of-${orderId}`, paid: 250 })
  })

/** Stand-in for a notification to the approvers' channel. */
const remindApprovers = (orderId: string) => Effect.succeed(`reminded the approvers of ${orderId}`)

/**
 * Asks for an approval; if no decision came within the reminder delay, reminds the approvers
 * once and asks again, now waiting as long as it takes (no alarm kept meanwhile).
 */
const approve = (
  ctx: AgentContext,
  request: { readonly orderId: string; readonly [field: string]: Schema.Json },
) =>
  ctx
    .requestApproval(request, { timeoutMillis: reminderAfterMillis() })
    .pipe(
      Effect.catchTag("ApprovalTimeout", () =>
        ctx
          .step("remind approvers", remindApprovers(request.orderId))
          .pipe(Effect.andThen(ctx.requestApproval({ ...request, reminded: true }))),
      ),
    )

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
  version: "3",
  input: RefundRequest,
  output: RefundResult,
  acceptsJoinedInput: true,
  program: (request, ctx) =>
    Effect.gen(function* () {
      const order = yield* ctx.step("look up order", lookUpOrder(request.orderId), {
        result: Order,
        retry: { attempts: 5, backoff: { baseMillis: 200, capMillis: 10_000 } },
      })
      if (request.amount > order.paid) {
        return yield* new AgentFailure({
          message: `cannot refund ${request.amount}: the order paid ${order.paid}`,
        })
      }
      // A child Submission in the fraud desk's Object; its failure would be a value here too.
      const check = yield* ctx.startChild({
        agent: fraudCheckAgent,
        input: { orderId: order.orderId, customer: order.customer, amount: request.amount },
        thread: { objectName: fraudDeskObject, threadId: order.customer },
      })
      const fraud = yield* ctx.awaitChild(check)
      const flagged = fraud.outcome !== "completed" || fraud.output.verdict === "review"
      const approval =
        request.amount > approvalThreshold || flagged
          ? yield* approve(ctx, {
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
