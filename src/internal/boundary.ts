/**
 * Host values and failures cross into typed errors here. A diagnostic built from a host cause
 * keeps only a short, single-line message: storage errors may quote stored values.
 */
import { Cause } from "effect"

const maxMessageLength = 300

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
  return cleaned.length > maxMessageLength ? `${cleaned.slice(0, maxMessageLength)}…` : cleaned
}
