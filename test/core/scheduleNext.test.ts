/**
 * Cron occurrences across DST changes, as docs/scheduling.md states them: a skipped local time
 * runs shifted forward by the gap, a repeated one once, at its first instant.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { occurrenceAfter, parseSpec, type ParsedSpec } from "../../src/core/internal/schedule/next.ts"

const cron = (expression: string, timeZone: string): ParsedSpec => {
  const parsed = parseSpec({ _tag: "Cron", cron: expression, timeZone }, Date.UTC(2026, 0, 1))
  if (Result.isFailure(parsed)) throw new Error(parsed.failure.message)
  return parsed.success
}

/** The next `count` occurrences after `from`, as ISO instants. */
const occurrences = (spec: ParsedSpec, from: number, count: number) => {
  const found: Array<string> = []
  let at = from
  for (let index = 0; index < count; index++) {
    at = occurrenceAfter(spec, at) as number
    found.push(new Date(at).toISOString())
  }
  return found
}

describe("cron occurrences across DST", () => {
  it("runs a local time the spring change skips shifted forward by the gap", () => {
    // Paris, 29 March 2026: 02:00 CET becomes 03:00 CEST; 02:30 runs at 03:30 CEST (01:30 UTC).
    expect(occurrences(cron("30 2 * * *", "Europe/Paris"), Date.UTC(2026, 2, 28, 12), 2)).toEqual([
      "2026-03-29T01:30:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ])
  })

  it("runs a local time the autumn change repeats once, at its first instant", () => {
    // Paris, 25 October 2026: 03:00 CEST becomes 02:00 CET; 02:30 runs at 02:30 CEST only.
    expect(occurrences(cron("30 2 * * *", "Europe/Paris"), Date.UTC(2026, 9, 24, 12), 2)).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ])
    // Hourly: 02:00 CEST runs, the repeated 02:00 CET does not.
    expect(occurrences(cron("0 * * * *", "Europe/Paris"), Date.UTC(2026, 9, 24, 23, 30), 3)).toEqual([
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T02:00:00.000Z",
      "2026-10-25T03:00:00.000Z",
    ])
  })
})
