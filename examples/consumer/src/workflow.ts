import { Effect, Layer, Schema } from "effect"
import { Activity, DurableClock, Workflow } from "effect/workflow"
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
