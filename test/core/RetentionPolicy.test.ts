import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  archiveBackoff,
  keptByThread,
  retentionDeadline,
  type RetentionSettings,
} from "../../src/core/internal/retention/policy.ts"
import type { SubmissionSnapshot } from "../../src/core/SubmissionLedger.ts"

const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

const settings = (overrides: Partial<RetentionSettings> = {}): RetentionSettings => ({
  settledForMillis: 60_000,
  keepPerThread: 0,
  windowMillis: 10_000,
  dispatchTimeoutMillis: 1_000,
  ...overrides,
})

describe("retention policy", () => {
  it("owes nothing while settled Submissions are kept forever or none is settled", () => {
    expect(retentionDeadline(settings({ settledForMillis: "forever" }), 5, undefined)).toBeUndefined()
    expect(retentionDeadline(settings(), undefined, undefined)).toBeUndefined()
  })

  it.prop(
    "rounds the earliest expiry up to the window: never before it, less than a window after it",
    { start: between(0, 10 ** 12), settledForMillis: between(1, 10 ** 8), windowMillis: between(1, 10 ** 7) },
    ({ start, settledForMillis, windowMillis }) => {
      const due = retentionDeadline(settings({ settledForMillis, windowMillis }), start, undefined)
      const expiry = start + settledForMillis
      expect(due).toBeGreaterThanOrEqual(expiry)
      expect(due! - expiry).toBeLessThan(windowMillis)
      expect(due! % windowMillis).toBe(0)
    },
  )

  it("waits for a failed archive's retry", () => {
    expect(retentionDeadline(settings(), 0, 95_000)).toBe(95_000)
    expect(retentionDeadline(settings(), 0, 1_000)).toBe(60_000)
  })

  it("keeps the newest keepPerThread Submissions of a lane by queue order", () => {
    const row = (queueSequence: number) => ({ queueSequence }) as SubmissionSnapshot
    expect(keptByThread(settings(), row(10), 10)).toBe(false)
    expect([8, 9, 10].map((q) => keptByThread(settings({ keepPerThread: 2 }), row(q), 10))).toEqual([
      false,
      true,
      true,
    ])
  })

  it("backs off a failing archive from one second, doubling, to five minutes", () => {
    expect([1, 2, 3, 10, 40].map(archiveBackoff)).toEqual([1_000, 2_000, 4_000, 300_000, 300_000])
  })
})
