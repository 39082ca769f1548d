/** What a recorded suspension keeps of its cause: all of a small one, none of a large one. */
import { describe, expect, it } from "@effect/vitest"
import { Cause } from "effect"
import {
  SUSPENSION_CAUSE_MAX_CHARS,
  suspendedRecord,
  suspendedResult,
} from "../../src/internal/workflow/codec.ts"

describe("a suspension's record", () => {
  it("keeps a small failure's cause, and poll's answer reads it back", () => {
    const record = suspendedRecord({ cause: Cause.die("card declined"), failed: true })
    expect(record).toMatchObject({ _tag: "Suspended", failed: true })
    expect(record._tag === "Suspended" && record.cause !== undefined).toBe(true)
    const result = suspendedResult(record as Extract<typeof record, { _tag: "Suspended" }>)
    expect(result.failed).toBe(true)
    expect(Cause.pretty(result.cause!)).toContain("card declined")
  })

  it("leaves out a cause past the bound but keeps that the activity failed", () => {
    const record = suspendedRecord({ cause: Cause.die("x".repeat(SUSPENSION_CAUSE_MAX_CHARS)), failed: true })
    expect(record).toEqual({ _tag: "Suspended", failed: true })
  })
})
