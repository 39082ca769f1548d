/**
 * Host values and failures cross into typed errors here. A diagnostic built from a host cause
 * keeps only a short, single-line message: storage errors may quote stored values.
 */
import { Cause, Effect } from "effect"

const MAX_MESSAGE_CHARS = 300

// Control characters (including newlines) would let a cause forge extra log lines.
const isControl = (code: number) => code < 0x20 || (code >= 0x7f && code <= 0x9f)
const withoutControls = (text: string) =>
  Array.from(text, (char) => (isControl(char.charCodeAt(0)) ? " " : char)).join("")

const squashed = (cause: unknown): unknown => (Cause.isCause(cause) ? Cause.squash(cause) : cause)

/** @internal */
export const safeCauseMessage = (cause: unknown, fallback: string): string => {
  const value = squashed(cause)
  const raw =
    value instanceof Error
      ? value.message === ""
        ? value.name
        : `${value.name}: ${value.message}`
      : typeof value === "string"
        ? value
        : ""
  const cleaned = withoutControls(raw).replace(/ {2,}/g, " ").trim()
  if (cleaned === "") return fallback
  return cleaned.length > MAX_MESSAGE_CHARS ? `${cleaned.slice(0, MAX_MESSAGE_CHARS)}…` : cleaned
}

/**
 * Handles every failure of `effect` except interruption, which keeps propagating: a handler that
 * swallows failures must never turn an interrupted fiber into a successful one.
 * @internal
 */
export const catchUnlessInterrupted =
  <A2, E2, R2>(handler: (cause: Cause.Cause<unknown>) => Effect.Effect<A2, E2, R2>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A | A2, E2, R | R2> =>
    Effect.catchCause(effect, (cause) =>
      Cause.hasInterrupts(cause)
        ? Effect.failCause(Cause.fromReasons<never>(cause.reasons.filter(Cause.isInterruptReason)))
        : handler(cause),
    )
