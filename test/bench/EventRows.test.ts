/**
 * Billed rows written by events, in real workerd through the bench's storage meter: a fresh
 * incarnation over a metered state runs the Object's own calls (`submit`, `sendEvent`) and
 * maintenance passes, and each scenario's whole life is counted, from the submit to the
 * settlement. The marginal cost of an event is its scenario minus the same program without the
 * wait (the one-step Submission, 14 rows on a fresh Object: the bench's 13 and the record's
 * first write). Figures are printed for bench/events.md; the test checks the marginal costs the
 * design budgets and that each scenario settles as intended.
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
const Input = Schema.Struct({ wait: Schema.Literals(["none", "stable", "timed"]), timeoutMillis: Schema.Int })

/** One step, then (unless `wait` is `none`) a wait for `done`, with a timeout when `timed`. */
const waiting = define({
  id: "bench-events",
  version: "1",
  input: Input,
  output: Schema.String,
  events: [Done],
  program: ({ wait, timeoutMillis }, ctx) =>
    Effect.gen(function* () {
      yield* ctx.step("noop", Effect.succeed(1))
      if (wait === "none") return "none"
      if (wait === "stable") return `${(yield* ctx.waitForEvent(Done)).ok}`
      return yield* ctx.waitForEvent(Done, { timeoutMillis }).pipe(
        Effect.map((payload) => `${payload.ok}`),
        Effect.catchTag("EventTimeout", () => Effect.succeed("timed out")),
      )
    }),
})

type Scenario =
  "one step" | "event before the wait" | "event after the wait" | "event after a timed wait" | "timed out"

const scenarios: ReadonlyArray<Scenario> = [
  "one step",
  "event before the wait",
  "event after the wait",
  "event after a timed wait",
  "timed out",
]

/** Runs one scenario on a fresh Object and returns its billed rows written and its output. */
const measure = (scenario: Scenario) =>
  Effect.promise(() =>
    runInDurableObject(env.BENCH_TEST.getByName(`event-rows-${crypto.randomUUID()}`), (_instance, state) => {
      const meter = meterState(state)
      return Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const built = yield* incarnation(meter.state, { agents: [waiting] })
            const calls = objectCalls(undefined)
            const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
              Effect.provide(effect, built.context as Context.Context<R>)
            const pass = built.maintenance.pass
            const threadId = "events"
            // Everything before the first call is set-up (migrations, the record): not counted.
            meter.reset()
            const receipt = yield* provide(
              calls.submit({
                threadId,
                agentId: "bench-events",
                idempotencyKey: "k",
                input: {
                  wait: scenario === "one step" ? "none" : scenario.includes("timed") ? "timed" : "stable",
                  timeoutMillis: scenario === "timed out" ? 1 : 60_000,
                },
              }),
            )
            const send = provide(
              calls.sendEvent({
                threadId,
                submissionId: receipt.submissionId,
                event: "done",
                eventId: "e",
                payload: { ok: true },
              }),
            )
            if (scenario === "event before the wait") yield* send
            yield* pass
            if (scenario === "event after the wait" || scenario === "event after a timed wait") {
              yield* send
              yield* pass
            }
            if (scenario === "timed out") {
              // Past the due time, the pass's due source serves the wait.
              yield* Effect.sleep(5)
              yield* pass
            }
            yield* pass
            // As bench/drivers.ts counts them: SQL rows (index entries included) and KV keys written.
            const counts = meter.snapshot()
            const rows = counts.sqlRowsWritten + counts.kvPuts + counts.kvDeletes
            const row = yield* built.ledger.lookup(receipt.submissionId as SubmissionId)
            return { rows, output: row._tag === "Some" ? row.value.settlement?.output : undefined }
          }),
        ) as Effect.Effect<{ readonly rows: number; readonly output: unknown }>,
      )
    }),
  )

describe("billed rows of events", () => {
  it.live("measures an event sent before the wait, after it, and a wait that times out", () =>
    Effect.gen(function* () {
      const figures: Record<string, number> = {}
      const outputs: Record<string, unknown> = {}
      for (const scenario of scenarios) {
        const { rows, output } = yield* measure(scenario)
        figures[scenario] = rows
        outputs[scenario] = output
      }
      const base = figures["one step"] ?? Number.NaN
      console.log(
        JSON.stringify(
          Object.fromEntries(
            scenarios.map((s) => [s, { rows: figures[s], marginal: (figures[s] ?? 0) - base }]),
          ),
        ),
      )
      // The design's budget (docs/design/durable-primitives.md §3.7): an event kept for a later
      // wait costs its record and its id's row (3); one that ends a wait costs the park, the
      // record's write, the event's record and id, the resumption and the second Attempt (10, 11
      // with a timeout's due entry); a timeout costs the park, the record's write, the due claim
      // and its own record (7).
      expect(figures["event before the wait"]! - base).toBe(3)
      expect(figures["event after the wait"]! - base).toBe(10)
      expect(figures["event after a timed wait"]! - base).toBe(11)
      expect(figures["timed out"]! - base).toBe(7)
      expect(outputs).toEqual({
        "one step": "none",
        "event before the wait": "true",
        "event after the wait": "true",
        "event after a timed wait": "true",
        "timed out": "timed out",
      })
    }),
  )
})
