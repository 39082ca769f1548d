/**
 * What kind of call a journal position records, and whether a new call's name can be
 * journaled: the checks an Attempt's context makes on each call's position before it runs.
 */
import { MAX_EVENT_NAME_LENGTH } from "../../../AgentEvent.ts"
import type { JournalPosition } from "../shared/journal.ts"
import { type AttemptState, unstorable } from "./attemptState.ts"
import type { Kind } from "./contextCalls.ts"

/** The kind of call a journal position records, if any. @internal */
export const kindOf = (position: JournalPosition): Kind | undefined =>
  position.approvalRequested !== undefined
    ? "approval request"
    : position.uncertainStarted !== undefined
      ? "uncertain step"
      : position.completed !== undefined || position.failed !== undefined
        ? "step"
        : position.childStarted !== undefined
          ? "child start"
          : position.childAwaited !== undefined
            ? "child await"
            : position.inputJoined !== undefined
              ? "joined read"
              : position.timerFired !== undefined
                ? "sleep"
                : position.attemptsFailed !== undefined
                  ? "step"
                  : position.eventConsumed !== undefined || position.eventTimedOut !== undefined
                    ? "event wait"
                    : undefined

/**
 * Why a new call's name cannot be journaled, if it cannot: a wait for an event name no sender
 * may use (over `MAX_EVENT_NAME_LENGTH`), or a name over `maxStoredValueBytes`, which could
 * pass what one record's row holds and fail every pass. @internal
 */
export const unfitName = (attempt: AttemptState, kind: Kind, name: string): string | undefined => {
  if (kind === "event wait" && (name.length === 0 || name.length > MAX_EVENT_NAME_LENGTH))
    return `waitForEvent: an event name has 1 to ${MAX_EVENT_NAME_LENGTH} characters, got ${name.length}`
  const refusal = unstorable(attempt, `the name of the ${kind} at this call`, name)
  return refusal === undefined ? undefined : `${kind}: ${refusal}`
}
