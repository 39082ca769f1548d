import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { decodeThreadId, MAX_IDENTIFIER_LENGTH } from "../../src/core/Identifiers.ts"

describe("Identifiers", () => {
  it.effect("accepts non-empty identifiers up to the length limit", () =>
    Effect.gen(function* () {
      expect(yield* decodeThreadId("thread-1")).toBe("thread-1")
      expect(yield* decodeThreadId("é🙂")).toBe("é🙂")
      expect(yield* decodeThreadId("x".repeat(MAX_IDENTIFIER_LENGTH))).toHaveLength(MAX_IDENTIFIER_LENGTH)
    }),
  )

  it.effect("refuses empty, overlong and control-character identifiers with a named check", () =>
    Effect.gen(function* () {
      for (const [value, expected] of [
        ["", "non-empty"],
        ["x".repeat(MAX_IDENTIFIER_LENGTH + 1), `at most ${MAX_IDENTIFIER_LENGTH}`],
        ["bad\u0007id", "without control characters"],
        ["bad\u0085id", "without control characters"],
        ["bad\uD800id", "without a lone surrogate"],
        ["bad\uDC00", "without a lone surrogate"],
      ] as const) {
        const error = yield* Effect.flip(decodeThreadId(value))
        expect(error._tag).toBe("SchemaError")
        expect(error.message).toContain(expected)
      }
      expect((yield* Effect.flip(decodeThreadId(42))).message).toContain("string")
    }),
  )
})
