/**
 * What `awaitProgress` reads per call against a long Submission, in real workerd through the
 * bench's storage meter: a follower that passes the token of its last answer pays for the
 * records the Submission gained since, not for its whole journal. Before, every call (and every
 * wake of a waiting call) inspected the Submission, reading and decoding every one of its
 * records, then read them all again for the answer: O(records) per progress step, O(records²)
 * over a followed run. Checked for a Submission parked with a journal over the size the journal
 * memory keeps (every read of it scans its rows), after it moves, and once it settled (a settled
 * journal is never kept).
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runInDurableObject } from "cloudflare:test"
import { type Context, Effect, Schema } from "effect"
import { meterState } from "../../bench/worker/meter.ts"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { define } from "../../src/core/AgentRegistration.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { incarnation } from "../support/incarnation.ts"

const Go = AgentEvent.make("go", Schema.Struct({ n: Schema.Int }))

/** `steps` steps of `bytes` characters each, then a wait for `go`. */
const long = define({
  id: "progress-cost",
  version: "1",
  input: Schema.Struct({ steps: Schema.Int, bytes: Schema.Int }),
  output: Schema.Int,
  events: [Go],
  program: ({ steps, bytes }, ctx) =>
    Effect.gen(function* () {
      for (let i = 0; i < steps; i++) yield* ctx.step(`s${i}`, Effect.succeed("x".repeat(bytes)))
      return (yield* ctx.waitForEvent(Go)).n
    }),
})

interface Reads {
  readonly records: number
  /** Rows read by a call with the current token while the Submission waits. */
  readonly parked: number
  /** Rows read by a call with that token once the event moved it (and it settled). */
  readonly moved: number
  /** Rows read by a call with the current token of the settled Submission. */
  readonly settled: number
}

/** Rows read per `awaitProgress` call with a token, against a Submission of `steps` steps. */
const measure = (steps: number) =>
  Effect.promise(() =>
    runInDurableObject(
      env.BENCH_TEST.getByName(`progress-cost-${crypto.randomUUID()}`),
      (_instance, state) => {
        const meter = meterState(state)
        const run = Effect.gen(function* () {
          const built = yield* incarnation(meter.state, { agents: [long] })
          const calls = objectCalls(undefined)
          const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
            Effect.provide(effect, built.context as Context.Context<R>)
          // 8,000 characters a step: over the characters the journal memory keeps for one journal.
          const receipt = yield* provide(
            calls.submit({
              threadId: "t",
              agentId: "progress-cost",
              idempotencyKey: "k",
              input: { steps, bytes: 8_000 },
            }),
          )
          yield* built.maintenance.pass
          const address = { threadId: "t", submissionId: receipt.submissionId }
          const whole = yield* provide(calls.awaitProgress({ ...address, timeoutMillis: 0 }))
          expect(whole.state).toBe("suspended")
          const rowsOf = (after: string) =>
            Effect.gen(function* () {
              meter.reset()
              const answer = yield* provide(calls.awaitProgress({ ...address, after, timeoutMillis: 0 }))
              return { answer, rows: meter.snapshot().sqlRowsRead }
            })
          const parked = yield* rowsOf(whole.token)
          expect(parked.answer).toMatchObject({ changed: false, token: whole.token, records: [] })
          yield* provide(calls.sendEvent({ ...address, event: "go", eventId: "go-1", payload: { n: 7 } }))
          yield* built.maintenance.pass
          const moved = yield* rowsOf(whole.token)
          expect(moved.answer).toMatchObject({ changed: true, state: "settled" })
          // Exactly the records after the token, in order, up to the settlement.
          const last = whole.records.at(-1)?.sequence ?? 0
          expect(moved.answer.records.map((record) => record.sequence)).toEqual(
            Array.from({ length: moved.answer.records.length }, (_, i) => last + 1 + i),
          )
          expect(moved.answer.records.at(-1)?.entry._tag).toBe("SubmissionSettled")
          const settled = yield* rowsOf(moved.answer.token)
          expect(settled.answer).toMatchObject({ changed: false, token: moved.answer.token, records: [] })
          return {
            records: whole.records.length,
            parked: parked.rows,
            moved: moved.rows,
            settled: settled.rows,
          } satisfies Reads
        })
        return Effect.runPromise(Effect.scoped(run) as Effect.Effect<Reads>)
      },
    ),
  )

describe("awaitProgress against a long Submission", () => {
  it.live("reads per call what the Submission gained after the token, not its whole journal", () =>
    Effect.gen(function* () {
      const short = yield* measure(100)
      const long = yield* measure(400)
      console.log(JSON.stringify({ short, long }))
      expect(long.records).toBe(short.records + 300)
      // The same rows whatever the journal's length.
      expect(long.parked).toBe(short.parked)
      expect(long.moved).toBe(short.moved)
      expect(long.settled).toBe(short.settled)
    }),
  )
})
