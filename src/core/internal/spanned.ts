/**
 * Spans for the per-item paths (a pass, a call, a message, a ledger or history statement).
 *
 * - `Effect.fn(name)` captures a stack trace (a `new Error()`) on every call for the call-site
 *   frame of its span; in workerd that measured 8–10% of a submit. These capture none.
 * - With no tracing backend installed (the fiber's tracer is Effect's in-memory `nativeTracer`,
 *   whose spans nobody reads) they open no span at all: a span and the two context updates
 *   around it, on every pass, call, message and ledger write (a few percent of the refund
 *   drain's CPU, docs/performance.md). Install a tracer (e.g. `OtlpTracer`) in the application
 *   layer and every one of them is recorded again.
 * @internal
 */
import { Effect, type Fiber, References, Tracer } from "effect"
import type { SpanOptionsNoTrace } from "effect/Tracer"

/** Whether spans opened on this fiber reach a tracing backend. */
const traced = (fiber: Fiber.Fiber<unknown, unknown>) =>
  fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer && fiber.getRef(References.TracerEnabled)

/**
 * `Effect.withSpan` for a span opened on every pass, call or message: the same span without the
 * per-call stack trace, and no span when no tracer would receive it. @internal
 */
export const withSpanFast = (name: string, options?: SpanOptionsNoTrace) => {
  const span = Effect.withSpan(name, options, { captureStackTrace: false })
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber((fiber) => (traced(fiber) ? span(self) : self))
}

/** `Effect.fn(name)` for functions on a per-item path (see the module note). @internal */
export const spanned =
  (name: string) =>
  <Eff extends Effect.Effect<any, any, any>, AEff, Args extends Array<any>>(
    body: (...args: Args) => Generator<Eff, AEff, never>,
  ) => {
    const run = Effect.fnUntraced(body)
    const span = withSpanFast(name)
    return (...args: Args) => span(run(...args))
  }

/** `spanned` for a body that opens scoped resources: they close when it returns. @internal */
export const spannedScoped =
  (name: string) =>
  <Eff extends Effect.Effect<any, any, any>, AEff, Args extends Array<any>>(
    body: (...args: Args) => Generator<Eff, AEff, never>,
  ) => {
    const run = Effect.fnUntraced(body)
    const span = withSpanFast(name)
    return (...args: Args) => span(Effect.scoped(run(...args)))
  }
