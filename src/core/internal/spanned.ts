/**
 * `Effect.fn(name)` for functions on a per-item path. `Effect.fn` captures a stack trace (a
 * `new Error()`) on every call for the call-site frame of its span; in workerd that measured
 * 8–10% of a submit. This opens the same span and captures the trace once, where the function
 * is defined; an error's trace loses only the call-site frame.
 * @internal
 */
import { Effect } from "effect"

/** @internal */
export const spanned =
  (name: string) =>
  <Eff extends Effect.Effect<any, any, any>, AEff, Args extends Array<any>>(
    body: (...args: Args) => Generator<Eff, AEff, never>,
  ) =>
    Effect.fnUntraced(body, Effect.withSpan(name))
