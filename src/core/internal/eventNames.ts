/**
 * What an event's name and id may be, checked on every new send and every new wait (never on
 * the replay of one already recorded): 1 to `MAX_EVENT_NAME_LENGTH` (name) or
 * `MAX_EVENT_ID_LENGTH` (id) UTF-16 code units, no control character (C0, DEL, C1), and no lone
 * surrogate, the rule identifiers and schedule ids follow. A control character hides in logs and
 * in the console; a lone surrogate is stored by SQLite as U+FFFD, so the recorded name would not
 * be the one a wait asks for.
 * @internal
 */
import { Schema } from "effect"
import { isWellFormed } from "./wellFormed.ts"

/** The longest event name (`AgentEvent.MAX_EVENT_NAME_LENGTH`). @internal */
export const EVENT_NAME_LENGTH = 128

/** The longest event id (`AgentEvent.MAX_EVENT_ID_LENGTH`). @internal */
export const EVENT_ID_LENGTH = 256

// C0 controls, DEL and C1 controls: matching them is the point.
// oxlint-disable-next-line no-control-regex
const controlCharacter = /[\u0000-\u001f\u007f-\u009f]/

/** Why `value` cannot be an event name or id (`what`), if it cannot. @internal */
export const eventTextProblem = (
  what: "an event name" | "an event id",
  value: string,
): string | undefined => {
  const maximum = what === "an event name" ? EVENT_NAME_LENGTH : EVENT_ID_LENGTH
  if (value.length === 0 || value.length > maximum)
    return `${what} has 1 to ${maximum} characters, got ${value.length}`
  if (controlCharacter.test(value)) return `${what} has no control characters`
  if (!isWellFormed(value)) return `${what} has no lone surrogate`
  return undefined
}

/** A string that `eventTextProblem` accepts as `what`, failing with the check it fails. @internal */
export const EventText = (what: "an event name" | "an event id") => {
  const maximum = what === "an event name" ? EVENT_NAME_LENGTH : EVENT_ID_LENGTH
  return Schema.String.check(
    Schema.isMinLength(1, { expected: `${what} of 1 to ${maximum} characters` }),
    Schema.isMaxLength(maximum, { expected: `${what} of 1 to ${maximum} characters` }),
    Schema.makeFilter((value: string) => !controlCharacter.test(value), {
      expected: `${what} without control characters`,
    }),
    Schema.makeFilter(isWellFormed, { expected: `${what} without a lone surrogate` }),
  )
}
