/**
 * A `ThreadObject` for the durable-primitive suites: steps with retries and timeouts that fail,
 * die or are interrupted on demand, sleeps, and waits for events.
 */
import { Effect, Schema } from "effect"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"

/** How many times each step effect ran, by Submission. */
export const stepRuns = new Map<string, number>()

/** A step that fails its first `failures` runs, as asked, under a retry policy. */
export const flakyAgent = define({
  id: "flaky",
  version: "1",
  input: Schema.Struct({
    failures: Schema.Int,
    attempts: Schema.Int,
    baseMillis: Schema.Int,
    how: Schema.Literals(["fail", "non-retryable", "die", "interrupt", "hang"]),
    timeoutMillis: Schema.optionalKey(Schema.Int),
  }),
  output: Schema.String,
  program: ({ failures, attempts, baseMillis, how, timeoutMillis }, ctx) =>
    ctx.step(
      "flaky",
      Effect.suspend(() => {
        const run = (stepRuns.get(ctx.submissionId) ?? 0) + 1
        stepRuns.set(ctx.submissionId, run)
        if (run > failures) return Effect.succeed(`ok after ${run}`)
        switch (how) {
          case "fail":
            return Effect.fail(new AgentFailure({ message: `run ${run} failed` }))
          case "non-retryable":
            return Effect.fail(AgentFailure.nonRetryable(`run ${run} refused`))
          case "die":
            return Effect.die(new Error(`run ${run} died`))
          case "interrupt":
            return Effect.interrupt
          case "hang":
            return Effect.never
        }
      }),
      {
        retry: { attempts, backoff: { baseMillis, jitter: 0 } },
        ...(timeoutMillis === undefined ? {} : { timeoutMillis }),
      },
    ),
})

/** Sleeps each of `millis` in turn (or until `until`), then answers. */
export const sleeperAgent = define({
  id: "sleeper",
  version: "1",
  input: Schema.Struct({ millis: Schema.Array(Schema.Number), until: Schema.optionalKey(Schema.Number) }),
  output: Schema.Number,
  program: ({ millis, until }, ctx) =>
    Effect.gen(function* () {
      for (const [index, duration] of millis.entries()) yield* ctx.sleep(`nap-${index}`, duration)
      if (until !== undefined) yield* ctx.sleepUntil("until", until)
      return millis.length
    }),
})

/** A declared event. */
export const Ping = AgentEvent.make("ping", Schema.Struct({ n: Schema.Int }))

/** Waits for `ping` `times` times (each with the timeout, if any), and answers their numbers. */
export const pingAgent = define({
  id: "ping",
  version: "1",
  input: Schema.Struct({ times: Schema.Int, timeoutMillis: Schema.optionalKey(Schema.Int) }),
  output: Schema.Array(Schema.String),
  events: [Ping],
  program: ({ times, timeoutMillis }, ctx) =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      for (let index = 0; index < times; index++) {
        const got = yield* ctx.waitForEvent(Ping, timeoutMillis === undefined ? {} : { timeoutMillis }).pipe(
          Effect.map((ping) => String(ping.n)),
          Effect.catchTag("EventTimeout", () => Effect.succeed("timeout")),
        )
        seen.push(got)
      }
      return seen
    }),
})

/** Runs a step, then interrupts its own program outside any step: no stop of the runtime asked for it. */
export const quitterAgent = define({
  id: "quitter",
  version: "1",
  input: Schema.Struct({}),
  output: Schema.String,
  program: (_input, ctx) => Effect.andThen(ctx.step("before", Effect.succeed("ran")), Effect.interrupt),
})

export class DurableThreadObject extends ThreadObject.make(
  ThreadObject.layer([flakyAgent, sleeperAgent, pingAgent, quitterAgent]),
) {}
