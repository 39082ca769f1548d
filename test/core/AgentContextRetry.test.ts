/**
 * Step retries and timeouts under `TestClock`, on both ledgers: each failed attempt is
 * journaled with the next attempt's due time and the wait is a timed park, so a new incarnation
 * resumes at that time, neither at once nor from the first attempt; the last failure fails the
 * step with its error; a non-retryable failure is not retried; a timeout is a failed attempt;
 * a recorded due time is read, never computed again, and its jitter is the same on every replay.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Option, Schedule, Schema } from "effect"
import { TestClock } from "effect/testing"
import type { RetryPolicy, StepRunOptions } from "../../src/core/AgentContext.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import type { HistoryEntry } from "../../src/core/ThreadHistory.ts"
import type { HeadAttempt } from "../../src/core/DurableAgentRuntime.ts"
import { backoffDelay, nextDelay, prepareRetry } from "../../src/core/internal/runtime/attempt/retry.ts"
import { makeRuns, ran, type Runs, runsOf } from "./runtimeAgents.ts"
import { entriesOf, processDue, processHead, rowOf, submitTo } from "./runtimeFixtures.ts"
import { ledgerOf, runtimeHarnesses, type RuntimeWorld } from "./runtimeHarness.ts"

/** A step that fails `failures` times (with `failure`), then answers; its options are `options`. */
const flaky = (
  runs: Runs,
  options: StepRunOptions,
  failures: number,
  failure: (attempt: number) => AgentFailure = (attempt) => new AgentFailure({ message: `down ${attempt}` }),
) =>
  define({
    id: "flaky",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.String,
    program: ({ n }, ctx) =>
      ctx
        .step(
          "lookup",
          Effect.gen(function* () {
            yield* ran(runs, "lookup")
            const attempt = (yield* runsOf(runs))["lookup"] ?? 0
            if (attempt <= failures) return yield* Effect.fail(failure(attempt))
            return `found-${n}`
          }),
          options,
        )
        .pipe(Effect.catchTag("AgentFailure", (error) => Effect.succeed(`gave up: ${error.message}`))),
  })

const backoff = (attempts: number, extra: Partial<Extract<RetryPolicy, { attempts: number }>> = {}) =>
  ({ attempts, backoff: { baseMillis: 1_000, jitter: 0 }, ...extra }) satisfies RetryPolicy

const failed = (entries: ReadonlyArray<HistoryEntry>) =>
  entries.flatMap((entry) => (entry._tag === "StepAttemptFailed" ? [entry] : []))

const start = (world: RuntimeWorld, agent: ReturnType<typeof flaky>) =>
  Effect.gen(function* () {
    const incarnation = yield* world.incarnation({ agents: [agent] })
    const now = yield* Clock.currentTimeMillis
    const receipt = yield* submitTo(incarnation, "lane", "flaky", "k", { n: 7 })
    return { incarnation, now, receipt }
  })

const outputOf = (attempt: HeadAttempt) =>
  attempt._tag === "Settled" ? attempt.settlement.output : attempt._tag

for (const harness of runtimeHarnesses) {
  describe(`AgentContext step retries (${harness.label})`, () => {
    it.effect("retries after a durable backoff, journaling each failure, and succeeds", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const agent = flaky(runs, { retry: backoff(3) }, 2)
          const { incarnation, now, receipt } = yield* start(world, agent)
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const first = yield* rowOf(incarnation, receipt.submissionId)
          expect([first.state, first.dueAt, first.wait]).toEqual([
            "waiting",
            now + 1_000,
            {
              _tag: "Retry",
              step: 0,
              name: "lookup",
              attempt: 1,
              attempts: 3,
              dueAt: now + 1_000,
              since: now,
            },
          ])
          yield* TestClock.adjust(999)
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({ _tag: "Unclaimed" })
          // A new incarnation resumes at the recorded time with the second attempt.
          const later = yield* world.incarnation({ agents: [agent] })
          yield* TestClock.adjust(1)
          expect(yield* processDue(later, receipt.submissionId)).toEqual({ _tag: "Parked", wait: "waiting" })
          expect((yield* rowOf(later, receipt.submissionId)).dueAt).toBe(now + 3_000)
          yield* TestClock.adjust(2_000)
          expect(outputOf(yield* processDue(later, receipt.submissionId))).toBe("found-7")
          const entries = yield* entriesOf(later, receipt.submissionId)
          expect(failed(entries).map((entry) => [entry.attempt, entry.error, entry.retryAt])).toEqual([
            [1, "down 1", now + 1_000],
            [2, "down 2", now + 3_000],
          ])
          expect(entries.find((entry) => entry._tag === "StepCompleted")).toMatchObject({ attempts: 3 })
          expect((yield* runsOf(runs)).lookup).toBe(3)
        }),
      ),
    )

    it.effect("fails the step with the last error once the attempts are spent", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const { incarnation, receipt } = yield* start(world, flaky(runs, { retry: backoff(2) }, 5))
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          yield* TestClock.adjust(1_000)
          expect(outputOf(yield* processDue(incarnation, receipt.submissionId))).toBe("gave up: down 2")
          const entries = yield* entriesOf(incarnation, receipt.submissionId)
          expect(failed(entries)).toHaveLength(1)
          expect(entries.find((entry) => entry._tag === "StepFailed")).toMatchObject({
            error: "down 2",
            attempts: 2,
          })
        }),
      ),
    )

    it.effect("does not retry a failure marked non-retryable, nor one the predicate refuses", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          // The marker wins over a predicate that would retry everything.
          const marked = flaky(runs, { retry: backoff(5, { retryable: () => true }) }, 1, () =>
            AgentFailure.nonRetryable("card declined"),
          )
          const { incarnation } = yield* start(world, marked)
          expect(Option.getOrThrow(yield* processHead(incarnation, "lane")).output).toBe(
            "gave up: card declined",
          )
          const refusedRuns = yield* makeRuns
          const refused = flaky(
            refusedRuns,
            { retry: backoff(5, { retryable: (error) => !error.message.startsWith("down") }) },
            1,
          )
          const other = yield* world.incarnation({ agents: [refused] })
          yield* submitTo(other, "other", "flaky", "k", { n: 1 })
          const settled = Option.getOrThrow(yield* processHead(other, "other"))
          expect(settled.output).toBe("gave up: down 1")
          expect((yield* runsOf(runs)).lookup).toBe(1)
          expect((yield* runsOf(refusedRuns)).lookup).toBe(1)
        }),
      ),
    )

    it.effect("counts a timed-out attempt as a failed one", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const slow = define({
            id: "flaky",
            version: "1",
            input: Schema.Struct({ n: Schema.Int }),
            output: Schema.String,
            program: (_input, ctx) =>
              ctx.step(
                "slow",
                Effect.gen(function* () {
                  yield* ran(runs, "slow")
                  // The first attempt hangs past its limit; the second answers.
                  if ((yield* runsOf(runs))["slow"] === 1) yield* Effect.never
                  return "in time"
                }),
                { retry: backoff(2), timeoutMillis: 5_000 },
              ),
          })
          const { incarnation, now, receipt } = yield* start(world, slow)
          const attempt = yield* Effect.forkChild(processHead(incarnation, "lane"))
          yield* TestClock.adjust(5_000)
          yield* Fiber.join(attempt)
          const entries = yield* entriesOf(incarnation, receipt.submissionId)
          expect(failed(entries).map((entry) => [entry.error, entry.retryAt])).toEqual([
            ['step "slow" timed out after 5000 ms', now + 6_000],
          ])
          yield* TestClock.adjust(1_000)
          expect(outputOf(yield* processDue(incarnation, receipt.submissionId))).toBe("in time")
        }),
      ),
    )

    it.effect("reads a recorded due time on replay and never moves it earlier", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const agent = flaky(
            runs,
            { retry: { attempts: 3, backoff: { baseMillis: 4_000, jitter: 0.5 } } },
            1,
          )
          const { incarnation, now, receipt } = yield* start(world, agent)
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const parked = yield* rowOf(incarnation, receipt.submissionId)
          const retryAt = parked.dueAt ?? 0
          expect(retryAt).toBeGreaterThanOrEqual(now + 2_000)
          expect(retryAt).toBeLessThanOrEqual(now + 6_000)
          // Woken early (an event, an operator): the Attempt parks at the recorded time again.
          yield* ledgerOf(incarnation).wake(
            {
              _tag: "Input",
              submissionId: receipt.submissionId,
              producerEpoch: parked.producerEpoch,
              state: "waiting",
            },
            now,
          )
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({
            _tag: "Parked",
            wait: "waiting",
          })
          expect((yield* rowOf(incarnation, receipt.submissionId)).dueAt).toBe(retryAt)
          expect((yield* runsOf(runs)).lookup).toBe(1)
        }),
      ),
    )

    it.effect("retries on an Effect Schedule until it ends", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const schedule = Schedule.spaced("500 millis").pipe(Schedule.upTo({ times: 2 }))
          const { incarnation, now, receipt } = yield* start(world, flaky(runs, { retry: { schedule } }, 5))
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          for (const at of [now + 500, now + 1_000]) {
            expect((yield* rowOf(incarnation, receipt.submissionId)).dueAt).toBe(at)
            yield* TestClock.adjust(500)
            yield* processDue(incarnation, receipt.submissionId)
          }
          const row = yield* rowOf(incarnation, receipt.submissionId)
          expect(row.settlement?.output).toBe("gave up: down 3")
          expect((yield* runsOf(runs)).lookup).toBe(3)
        }),
      ),
    )

    it.effect("fails a step whose options are invalid, naming the option", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          for (const [options, named] of [
            [{ retry: { attempts: 0 } }, "retry.attempts"],
            [{ retry: { attempts: 2, backoff: { baseMillis: 10, jitter: 2 } } }, "retry.backoff.jitter"],
            [{ timeoutMillis: 600_001 }, "timeoutMillis"],
          ] as const) {
            const incarnation = yield* world.incarnation({ agents: [flaky(runs, options, 0)] })
            const lane = named
            yield* submitTo(incarnation, lane, "flaky", lane, { n: 1 })
            const settled = Option.getOrThrow(yield* processHead(incarnation, lane))
            expect(settled.output).toContain(named)
          }
          expect(yield* runsOf(runs)).toEqual({})
        }),
      ),
    )
  })
}

describe("retry timing", () => {
  it("scales an exponential backoff by its jitter within its cap", () => {
    const policy = { baseMillis: 1_000, factor: 3, capMillis: 5_000, jitter: 0.5 }
    expect([1, 2, 3].map((attempt) => backoffDelay(policy, attempt, 0.5))).toEqual([1_000, 3_000, 5_000])
    expect(backoffDelay(policy, 1, 0)).toBe(500)
    expect(backoffDelay(policy, 1, 0.999_999)).toBe(1_500)
    expect(backoffDelay(policy, 3, 0.999_999)).toBe(5_000)
  })

  it.effect("draws the same jitter for the same Submission, step and attempt", () =>
    Effect.gen(function* () {
      const policy = prepareRetry({ attempts: 5, backoff: { baseMillis: 10_000, jitter: 1 } })
      if (policy._tag === "Failure" || policy.success === undefined) throw new Error("a valid policy")
      const failures = [{ error: "x", failedAt: 0 }]
      const once = yield* nextDelay(policy.success, failures, "sub-1:0")
      const again = yield* nextDelay(policy.success, failures, "sub-1:0")
      const elsewhere = yield* nextDelay(policy.success, failures, "sub-2:0")
      expect(again).toEqual(once)
      expect(elsewhere).not.toEqual(once)
    }),
  )
})
