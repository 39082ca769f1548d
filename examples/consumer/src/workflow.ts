import { Cause, Effect, Exit, Layer, Option, Schema } from "effect"
import { Activity, DurableClock, Workflow } from "effect/workflow"
import type { ThreadNamespace } from "@effect-agent/platform-cloudflare/ThreadClient"
import * as ThreadWorkflowEngine from "@effect-agent/platform-cloudflare/ThreadWorkflowEngine"

/** A ticket's follow-up, by Effect's own Workflow API: remind, wait a day, then close it. */
export const FollowUp = Workflow.make("FollowUp", {
  payload: { ticket: Schema.String },
  success: Schema.Struct({ ticket: Schema.String, closedAt: Schema.Number }),
  idempotencyKey: ({ ticket }) => ticket, // one execution per ticket
})

/** Its handler: each activity is a journaled step, the clock a timer on the Object's alarm. */
const FollowUpHandler = FollowUp.toLayer(({ ticket }) =>
  Effect.gen(function* () {
    yield* Activity.make({ name: "remind", execute: Effect.log(`reminded the customer of ${ticket}`) })
    yield* DurableClock.sleep({ name: "grace", duration: "1 day" }) // parks: nothing runs meanwhile
    const closedAt = yield* Activity.make({
      name: "close",
      success: Schema.Number,
      execute: Effect.clockWith((clock) => clock.currentTimeMillis),
    })
    return { ticket, closedAt }
  }),
)

/** The workflow's agent, registered beside the triage agent. */
export const followUpAgent = ThreadWorkflowEngine.agent(FollowUp)

/** The engine inside the Object, with the handlers registered with it. */
export const Workflows = FollowUpHandler.pipe(Layer.provideMerge(ThreadWorkflowEngine.layer))

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

/**
 * In the Worker: `POST /follow-up/:ticket` starts the ticket's follow-up (once, by its
 * execution id) and answers the id; `GET` reports it. The client engine routes each call to the
 * execution's Object.
 */
export const followUpRoute = (
  request: Request,
  threads: ThreadNamespace,
  ticket: string,
): Effect.Effect<unknown> => {
  const engine = ThreadWorkflowEngine.layerClient(threads)
  return request.method === "POST"
    ? Effect.provide(FollowUp.execute({ ticket }, { discard: true }), engine)
    : Effect.provide(followUpState(ticket), engine)
}
