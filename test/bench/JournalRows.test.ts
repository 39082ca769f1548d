/**
 * Rows read by the events a running Submission takes one after another, in real workerd through
 * the bench's storage meter, with other Submissions queued behind it in its Thread. Every event
 * is recorded after a read of the Submission's journal, and its Attempt resumes with another;
 * a journal read whole scans the Thread from the Submission's acceptance, the queue's acceptances
 * included, so without memory each event would read the queue again. The figures are printed;
 * the test checks that a queue of 60 adds no rows read per event.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runInDurableObject } from "cloudflare:test"
import { type Context, Effect, Schema } from "effect"
import { meterState } from "../../bench/worker/meter.ts"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { define } from "../../src/core/AgentRegistration.ts"
import type { SubmissionId } from "../../src/core/Identifiers.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { incarnation } from "../support/incarnation.ts"

const Tick = AgentEvent.make("tick", Schema.Struct({ n: Schema.Int }))
const EVENTS = 12

/** Takes `events` ticks one after another, then returns their sum. */
const ticking = define({
  id: "bench-ticks",
  version: "1",
  input: Schema.Struct({ events: Schema.Int }),
  output: Schema.Int,
  events: [Tick],
  program: ({ events }, ctx) =>
    Effect.gen(function* () {
      let sum = 0
      for (let i = 0; i < events; i++) sum += (yield* ctx.waitForEvent(Tick)).n
      return sum
    }),
})

/** Rows read per event taken, with `queued` Submissions behind the ticking one in its Thread. */
const measure = (queued: number) =>
  Effect.promise(() =>
    runInDurableObject(
      env.BENCH_TEST.getByName(`journal-rows-${crypto.randomUUID()}`),
      (_instance, state) => {
        const meter = meterState(state)
        const run = Effect.gen(function* () {
          const built = yield* incarnation(meter.state, { agents: [ticking] })
          const calls = objectCalls(undefined)
          const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
            Effect.provide(effect, built.context as Context.Context<R>)
          const submit = (key: string, events: number) =>
            provide(
              calls.submit({ threadId: "t", agentId: "bench-ticks", idempotencyKey: key, input: { events } }),
            )
          // One tick more than sent: it keeps waiting, so the queue behind it never runs.
          const receipt = yield* submit("ticking", EVENTS + 1)
          for (let i = 0; i < queued; i++) yield* submit(`queued-${i}`, 0)
          // The first Attempt runs to its first wait.
          yield* built.maintenance.pass
          meter.reset()
          for (let n = 1; n <= EVENTS; n++) {
            yield* provide(
              calls.sendEvent({
                threadId: "t",
                submissionId: receipt.submissionId,
                event: "tick",
                eventId: `tick-${n}`,
                payload: { n },
              }),
            )
            yield* built.maintenance.pass
          }
          const perEvent = meter.snapshot().sqlRowsRead / EVENTS
          const records = yield* built.history.forSubmission(receipt.submissionId as SubmissionId)
          return { perEvent, taken: records.filter((record) => record.entry._tag === "EventConsumed").length }
        })
        return Effect.runPromise(
          Effect.scoped(run) as Effect.Effect<{ readonly perEvent: number; readonly taken: number }>,
        )
      },
    ),
  )

describe("rows read by a running Submission's events", () => {
  it.live("do not grow with the Submissions queued behind it", () =>
    Effect.gen(function* () {
      const one = yield* measure(1)
      const sixty = yield* measure(60)
      console.log(JSON.stringify({ events: EVENTS, queued1: one.perEvent, queued60: sixty.perEvent }))
      // Every event was taken once.
      expect(one.taken).toBe(EVENTS)
      expect(sixty.taken).toBe(EVENTS)
      // The journal reads and the park checks read from where the last read ended: the queue's
      // acceptances add no row per event.
      expect(sixty.perEvent).toBe(one.perEvent)
    }),
  )
})
