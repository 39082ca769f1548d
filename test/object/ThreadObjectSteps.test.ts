/**
 * Steps with retries and timeouts through a real `ThreadObject` and its alarm: a retried step
 * runs at most its attempts, a failure that may not be retried or a defect fails the
 * Submission at once, and a step or a program that interrupts itself fails it too (no Attempt
 * after Attempt running it again). Each ends with the Object quiet, `verify` clean and no failed pass.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { env, runDurableObjectAlarm } from "cloudflare:test"
import * as ThreadClient from "../../src/ThreadClient.ts"
import * as Testing from "../../src/Testing.ts"
import { flakyAgent, quitterAgent, stepRuns } from "../worker/durableObject.ts"

const threadName = (label: string) => `steps-${label}-${crypto.randomUUID()}`
const clientOf = (thread: string) => ThreadClient.make(env.THREADS_DURABLE, thread)

/** Delivers the Object's alarms until it owes nothing. */
const quiet = (thread: string) =>
  Testing.runAlarmsUntilQuiet({
    client: clientOf(thread),
    runAlarm: () => runDurableObjectAlarm(env.THREADS_DURABLE.getByName(thread)),
  })

/** Runs a flaky step to its settlement; the settlement, the runs of its effect, and the Object's health. */
const settleFlaky = (label: string, input: typeof flakyAgent.input.Type) =>
  Effect.gen(function* () {
    const thread = threadName(label)
    const client = clientOf(thread)
    const receipt = yield* client.agent(flakyAgent).submit(input, { idempotencyKey: "k" })
    yield* quiet(thread)
    return {
      settlement: (yield* client.status(receipt.submissionId)).settlement,
      runs: stepRuns.get(receipt.submissionId),
      failedPasses: (yield* client.inspectMaintenance).counters.failedPasses,
      violations: (yield* client.verify).violations,
    }
  })

describe("ThreadObject steps with retries", () => {
  it.live("fails with the last error once the attempts are spent", () =>
    Effect.gen(function* () {
      const ended = yield* settleFlaky("spent", { failures: 10, attempts: 3, baseMillis: 20, how: "fail" })
      expect(ended).toMatchObject({
        settlement: { outcome: "failed", error: "run 3 failed" },
        runs: 3,
        failedPasses: 0,
        violations: [],
      })
    }),
  )

  it.live("fails at once on a failure that may not be retried, and on a defect", () =>
    Effect.gen(function* () {
      const refused = yield* settleFlaky("refused", {
        failures: 10,
        attempts: 3,
        baseMillis: 20,
        how: "non-retryable",
      })
      expect(refused).toMatchObject({
        settlement: { outcome: "failed", error: "run 1 refused" },
        runs: 1,
        failedPasses: 0,
      })
      const died = yield* settleFlaky("died", { failures: 10, attempts: 3, baseMillis: 20, how: "die" })
      expect(died).toMatchObject({ settlement: { outcome: "failed" }, runs: 1, failedPasses: 0 })
      expect(died.settlement?.error).toContain("run 1 died")
    }),
  )

  it.live("refuses a first wait over the default cap without a cap of its own, naming the option", () =>
    Effect.gen(function* () {
      const ended = yield* settleFlaky("uncapped", {
        failures: 10,
        attempts: 3,
        baseMillis: 600_000,
        how: "fail",
      })
      expect(ended).toMatchObject({
        settlement: {
          outcome: "failed",
          error: 'step "flaky": retry.backoff.baseMillis must be a number between 0 and 300000, got 600000',
        },
        failedPasses: 0,
        violations: [],
      })
      expect(ended.runs).toBeUndefined()
    }),
  )

  it.live("counts an attempt that outlives its timeout as failed", () =>
    Effect.gen(function* () {
      const ended = yield* settleFlaky("timeout", {
        failures: 1,
        attempts: 2,
        baseMillis: 20,
        how: "hang",
        timeoutMillis: 50,
      })
      expect(ended).toMatchObject({
        settlement: { outcome: "completed", output: "ok after 2" },
        runs: 2,
        failedPasses: 0,
        violations: [],
      })
    }),
  )

  it.live("fails a step whose effect interrupts itself, running it once", () =>
    Effect.gen(function* () {
      const ended = yield* settleFlaky("interrupted", {
        failures: 1_000_000,
        attempts: 3,
        baseMillis: 20,
        how: "interrupt",
      })
      expect(ended).toMatchObject({ settlement: { outcome: "failed" }, runs: 1, failedPasses: 0 })
      expect(ended.settlement?.error).toContain('step "flaky" interrupted itself')
    }),
  )

  it.live("fails a program that interrupts itself outside any step, once", () =>
    Effect.gen(function* () {
      const thread = threadName("quitter")
      const client = clientOf(thread)
      const receipt = yield* client.agent(quitterAgent).submit({}, { idempotencyKey: "k" })
      yield* quiet(thread)
      expect((yield* client.status(receipt.submissionId)).settlement).toMatchObject({
        outcome: "failed",
        error: "the program interrupted itself",
      })
      expect((yield* client.inspectMaintenance).counters.failedPasses).toBe(0)
      expect((yield* client.verify).violations).toEqual([])
    }),
  )
})
