import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  backoffDelay,
  bindingRetryDelay,
  minimumAlarmDelay,
  BINDING_REASON_MAX_CHARS,
  nextBindingRetry,
  nextFailureRetry,
} from "../../src/internal/maintenance/backoff.ts"
import { MaintenanceRetry } from "../../src/internal/maintenance/state.ts"
import { SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"

const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))
const Jitter = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThan(1))
const defaults = { alarmBackoffBase: 100, alarmBackoffCap: 5_000 }
const almostOne = 1 - Number.EPSILON

describe("backoffDelay", () => {
  it.prop(
    "stays within [ceil(b/2), b] and never above the cap",
    { base: between(1, 100_000), cap: between(1, 1_000_000), stalls: between(0, 200), jitter: Jitter },
    ({ base, cap, stalls, jitter }) => {
      const bound = Math.min(cap, base * 2 ** Math.min(stalls, 30))
      const delay = backoffDelay({ alarmBackoffBase: base, alarmBackoffCap: cap }, stalls, jitter)
      expect(Number.isInteger(delay)).toBe(true)
      expect(delay).toBeGreaterThanOrEqual(Math.ceil(bound / 2))
      expect(delay).toBeLessThanOrEqual(bound)
      expect(delay).toBeLessThanOrEqual(cap)
    },
  )

  it.prop(
    "never shrinks as stalls grow",
    { base: between(1, 100_000), cap: between(1, 1_000_000), stalls: between(0, 200), jitter: Jitter },
    ({ base, cap, stalls, jitter }) => {
      const config = { alarmBackoffBase: base, alarmBackoffCap: cap }
      expect(backoffDelay(config, stalls + 1, jitter)).toBeGreaterThanOrEqual(
        backoffDelay(config, stalls, jitter),
      )
    },
  )

  it("follows the default table", () => {
    const table: ReadonlyArray<readonly [number, number, number]> = [
      [0, 50, 100],
      [1, 100, 200],
      [2, 200, 400],
      [3, 400, 800],
      [4, 800, 1_600],
      [5, 1_600, 3_200],
      [6, 2_500, 5_000],
      [7, 2_500, 5_000],
      [30, 2_500, 5_000],
      [1_000, 2_500, 5_000],
    ]
    for (const [stalls, low, high] of table) {
      expect([backoffDelay(defaults, stalls, 0), backoffDelay(defaults, stalls, almostOne)]).toEqual([
        low,
        high,
      ])
    }
  })
})

describe("minimumAlarmDelay", () => {
  it.prop("is the positive half of the base, rounded up", { base: between(1, 10_000_000) }, ({ base }) => {
    const floor = minimumAlarmDelay(base)
    expect(Number.isInteger(floor)).toBe(true)
    expect(floor).toBeGreaterThanOrEqual(1)
    expect(floor).toBeGreaterThanOrEqual(base / 2)
    expect(floor).toBeLessThan(base / 2 + 1)
  })

  it("is 50 ms by default and 1 ms for the smallest base", () => {
    expect([minimumAlarmDelay(100), minimumAlarmDelay(1), minimumAlarmDelay(3)]).toEqual([50, 1, 2])
  })
})

describe("binding waits", () => {
  const head = { threadId: ThreadId.make("lane-a"), submissionId: SubmissionId.make("submission-a") }

  it("double from 5 s to a 60 s ceiling", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 30].map(bindingRetryDelay)).toEqual([
      5_000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000, 60_000,
    ])
  })

  it("cap attempts at 30 and keep waiting without a terminal limit", () => {
    let previous = undefined as ReturnType<typeof nextBindingRetry>["retry"] | undefined
    const now = 1_000_000
    for (let failure = 1; failure <= 40; failure++) {
      const { retry } = nextBindingRetry(head, previous, now + failure)
      expect(retry.attempts).toBe(Math.min(30, failure))
      expect(retry.notBefore).toBe(now + failure + Math.min(60_000, 5_000 * 2 ** (retry.attempts - 1)))
      expect([retry.threadId, retry.submissionId]).toEqual([head.threadId, head.submissionId])
      previous = retry
    }
  })

  it("keep a short reason whole and cut a long one to the record's bound", () => {
    expect(nextBindingRetry(head, undefined, 0, "call 0 is journaled as another step").retry.reason).toBe(
      "call 0 is journaled as another step",
    )
    const long = nextBindingRetry(head, undefined, 0, "x".repeat(50_000)).retry.reason ?? ""
    expect(long.length).toBe(BINDING_REASON_MAX_CHARS)
    expect(long.endsWith("…")).toBe(true)
    expect(nextBindingRetry(head, undefined, 0).retry.reason).toBeUndefined()
  })

  it("report at error level at most once per 15 minute window", () => {
    const first = nextBindingRetry(head, undefined, 0)
    expect([first.report, first.retry.reportedAt]).toEqual([true, 0])
    const quiet = nextBindingRetry(head, first.retry, 15 * 60_000 - 1)
    expect([quiet.report, quiet.retry.reportedAt]).toEqual([false, 0])
    const again = nextBindingRetry(head, quiet.retry, 15 * 60_000)
    expect([again.report, again.retry.reportedAt]).toEqual([true, 15 * 60_000])
  })
})

describe("nextFailureRetry", () => {
  const Step = Schema.Struct({ advance: between(0, 20_000), jitter: Jitter, nativeOnly: Schema.Boolean })

  it.prop(
    "never moves notBefore earlier for one generation and caps stalls at 30",
    { steps: Schema.Array(Step).check(Schema.isMaxLength(45)), generation: between(0, 1_000) },
    ({ steps, generation }) => {
      let now = 5_000_000
      let previous: MaintenanceRetry | undefined
      steps.forEach((step, index) => {
        now += step.advance
        const retry = nextFailureRetry(defaults, {
          generation: BigInt(generation),
          previous,
          now,
          jitter: step.jitter,
          nativeOnly: step.nativeOnly,
        })
        const delay = backoffDelay(defaults, previous?.stalls ?? 0, step.jitter)
        expect(retry.generation).toBe(BigInt(generation))
        expect(retry.stalls).toBe(Math.min(30, index + 1))
        expect(retry.nativeOnly).toBe(step.nativeOnly)
        expect(retry.notBefore).toBe(Math.max(previous?.notBefore ?? 0, now + delay))
        expect(retry.notBefore).toBeGreaterThanOrEqual(previous?.notBefore ?? 0)
        previous = retry
      })
    },
  )

  it.prop(
    "restarts for a newer generation even when the old wait is later",
    { stalls: between(0, 30), jitter: Jitter, ahead: between(0, 10_000_000) },
    ({ stalls, jitter, ahead }) => {
      const now = 7_000_000
      const old = MaintenanceRetry.make({ generation: 4n, notBefore: now + ahead, nativeOnly: true, stalls })
      const retry = nextFailureRetry(defaults, {
        generation: 5n,
        previous: old,
        now,
        jitter,
        nativeOnly: false,
      })
      expect([retry.generation, retry.stalls, retry.nativeOnly]).toEqual([5n, 1, false])
      expect(retry.notBefore).toBe(now + backoffDelay(defaults, 0, jitter))
    },
  )
})
