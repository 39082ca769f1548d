/**
 * What kind of call a journal position records, and whether a new call's name can be
 * journaled: the checks an Attempt's context makes on each call's position before it runs.
 */
import { eventTextProblem } from "../../eventNames.ts"
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
 * may use (`eventTextProblem`: empty, too long, a control character or a lone surrogate), or a name over `maxStoredValueBytes`, which could
 * pass what one record's row holds and fail every pass. @internal
 */
export const unfitName = (attempt: AttemptState, kind: Kind, name: string): string | undefined => {
  const eventProblem = kind === "event wait" ? eventTextProblem("an event name", name) : undefined
  if (eventProblem !== undefined) return `waitForEvent: ${eventProblem}`
  const refusal = unstorable(attempt, `the name of the ${kind} at this call`, name)
  return refusal === undefined ? undefined : `${kind}: ${refusal}`
}
