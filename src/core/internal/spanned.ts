/**
 * `Effect.fn(name)` for functions on a per-item path. `Effect.fn` captures a stack trace (a
 * `new Error()`) on every call for the call-site frame of its span; in workerd that measured
 * 8–10% of a submit. This opens the same span with the trace captured once, when the function
 * is built: the span's stack frame then names this module, not the caller.
 * @internal
 */
import { Effect } from "effect"
import type { SpanOptionsNoTrace } from "effect/Tracer"

/** @internal */
export const spanned =
  (name: string) =>
  <Eff extends Effect.Effect<any, any, any>, AEff, Args extends Array<any>>(
    body: (...args: Args) => Generator<Eff, AEff, never>,
  ) =>
    Effect.fnUntraced(body, Effect.withSpan(name))

/** `spanned` for a body that opens scoped resources: they close when it returns. @internal */
export const spannedScoped =
  (name: string) =>
  <Eff extends Effect.Effect<any, any, any>, AEff, Args extends Array<any>>(
    body: (...args: Args) => Generator<Eff, AEff, never>,
  ) => {
    const run = Effect.fnUntraced(body)
    // Applied data-last, built once: the trace is captured here, not on every call.
    const span = Effect.withSpan(name)
    return (...args: Args) => span(Effect.scoped(run(...args)))
  }

/**
 * `Effect.withSpan` for a span opened on every pass, call or message: the same span without the
 * per-call stack trace (`withSpan` captures one each time it is applied). @internal
 */
export const withSpanFast = (name: string, options?: SpanOptionsNoTrace) =>
  Effect.withSpan(name, options, { captureStackTrace: false })
