import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Tracer } from "effect"
import { spanned, spannedScoped, withSpanFast } from "../../src/core/internal/spanned.ts"

/** A tracer that keeps the names of the spans it starts. */
const recordingTracer = () => {
  const names: Array<string> = []
  const tracer = Tracer.make({
    span(options) {
      names.push(options.name)
      return new Tracer.NativeSpan(options)
    },
  })
  return { tracer, names }
}

const currentSpanName = Effect.map(
  Effect.option(Effect.currentSpan),
  Option.map((span) => span.name),
)

const opened = {
  withSpanFast: withSpanFast("fast.span")(currentSpanName),
  spanned: spanned("spanned.span")(function* (n: number) {
    expect(n).toBe(1)
    return yield* currentSpanName
  })(1),
  spannedScoped: spannedScoped("scoped.span")(function* () {
    yield* Effect.addFinalizer(() => Effect.void)
    return yield* currentSpanName
  })(),
}

describe("per-item spans", () => {
  it.effect("open no span while no tracing backend would receive it", () =>
    Effect.gen(function* () {
      for (const effect of Object.values(opened)) expect(yield* effect).toEqual(Option.none())
    }),
  )

  it.effect("open their span under an installed tracer", () =>
    Effect.gen(function* () {
      const { tracer, names } = recordingTracer()
      const seen = yield* Effect.all(Object.values(opened)).pipe(Effect.withTracer(tracer))
      expect(seen).toEqual([
        Option.some("fast.span"),
        Option.some("spanned.span"),
        Option.some("scoped.span"),
      ])
      expect(names).toEqual(["fast.span", "spanned.span", "scoped.span"])
    }),
  )

  it.effect("open none under an installed tracer that is disabled", () =>
    Effect.gen(function* () {
      const { tracer, names } = recordingTracer()
      const seen = yield* Effect.all(Object.values(opened)).pipe(
        Effect.withTracerEnabled(false),
        Effect.withTracer(tracer),
      )
      // Not even the no-op span `Effect.withSpan` would open here is current.
      expect(seen).toEqual([Option.none(), Option.none(), Option.none()])
      expect(names).toEqual([])
    }),
  )
})
