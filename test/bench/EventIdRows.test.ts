/**
 * What checking an event's id costs, in real workerd through the bench's storage meter: a
 * Submission that journaled `steps` steps of 1.5 KB and parks on a wait, then takes events of
 * another name through the Object's own `sendEvent` (each kept for a later wait). The id check
 * reads the Submission's index of event ids, not its journal, so the rows read per event do not
 * grow with the journal. The journals are past what the journals' memory keeps
 * (`history/journals.ts`), as a long Submission's are. Figures are printed.
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

const Done = AgentEvent.make("done", Schema.Struct({ ok: Schema.Boolean }))
const EVENTS = 4
const RESULT = "x".repeat(1_500)

/** `steps` steps of 1.5 KB each, then a wait for `done`. */
const long = define({
  id: "bench-long-journal",
  version: "1",
  input: Schema.Struct({ steps: Schema.Int }),
  output: Schema.Boolean,
  events: [Done],
  program: ({ steps }, ctx) =>
    Effect.gen(function* () {
      for (let index = 0; index < steps; index++) yield* ctx.step(`s${index}`, Effect.succeed(RESULT))
      return (yield* ctx.waitForEvent(Done)).ok
    }),
})

interface PerEvent {
  readonly read: number
  readonly written: number
  readonly replayed: ReadonlyArray<boolean>
}

/** Rows read and written per `sendEvent` of a kept event, once the Submission parked. */
const measure = (steps: number) =>
  Effect.promise(() =>
    runInDurableObject(
      env.BENCH_TEST.getByName(`event-id-rows-${crypto.randomUUID()}`),
      (_instance, state) => {
        const meter = meterState(state)
        const run = Effect.gen(function* () {
          const built = yield* incarnation(meter.state, { agents: [long] })
          const calls = objectCalls(undefined)
          const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
            Effect.provide(effect, built.context as Context.Context<R>)
          const receipt = yield* provide(
            calls.submit({ threadId: "t", agentId: long.id, idempotencyKey: "k", input: { steps } }),
          )
          const submissionId = receipt.submissionId as SubmissionId
          for (let pass = 0; pass < 50; pass++) {
            const row = yield* built.ledger.lookup(submissionId)
            if (row._tag === "Some" && row.value.state === "suspended") break
            yield* built.maintenance.pass
          }
          const send = (eventId: string) =>
            provide(
              calls.sendEvent({ threadId: "t", submissionId, event: "note", eventId, payload: { eventId } }),
            )
          meter.reset()
          const replayed: Array<boolean> = []
          for (let n = 0; n < EVENTS; n++) replayed.push((yield* send(`note-${n}`)).replayed)
          const counts = meter.snapshot()
          return {
            read: counts.sqlRowsRead / EVENTS,
            written: counts.sqlRowsWritten / EVENTS,
            replayed,
          } satisfies PerEvent
        })
        return Effect.runPromise(Effect.scoped(run) as unknown as Effect.Effect<PerEvent>)
      },
    ),
  )

describe("the rows an event's id check reads", () => {
  it.live("reads as many rows per event for a journal of 400 steps as for one of 10", () =>
    Effect.gen(function* () {
      const short = yield* measure(10)
      const longer = yield* measure(400)
      console.log(JSON.stringify({ "10 steps": short, "400 steps": longer }))
      expect(short.replayed).toEqual(Array.from({ length: EVENTS }, () => false))
      expect(longer.read).toBe(short.read)
      expect(longer.written).toBe(short.written)
    }),
  )
})
