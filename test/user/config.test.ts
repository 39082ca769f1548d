/**
 * Configuration a user gets wrong, as a JSON file or an environment variable would carry it:
 * every bad value is a `CloudflareConfigError` naming the field, never a default taken in its
 * place or a defect.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { decodeCloudflareRuntimeConfig } from "../../src/CloudflareConfig.ts"

const refusal = (overrides: unknown) => Effect.flip(decodeCloudflareRuntimeConfig(overrides as never))

describe("bad configuration values", () => {
  it.effect("a null group is refused, not read as the defaults", () =>
    Effect.gen(function* () {
      expect(yield* refusal({ retention: null })).toMatchObject({
        _tag: "CloudflareConfigError",
        field: "retention",
      })
      expect(yield* refusal({ limits: null })).toMatchObject({
        _tag: "CloudflareConfigError",
        field: "limits",
      })
    }),
  )

  it.effect("a field named like an Object member is unknown, not a defect", () =>
    Effect.gen(function* () {
      for (const key of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
        const top = JSON.parse(`{"${key}": 1}`)
        expect(yield* refusal(top)).toMatchObject({ _tag: "CloudflareConfigError", field: key })
        expect(yield* refusal({ retention: top })).toMatchObject({
          _tag: "CloudflareConfigError",
          field: `retention.${key}`,
        })
      }
    }),
  )
})
