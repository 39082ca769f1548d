/**
 * The lane rotation rule of maintenance as a pure reference model: the first
 * runnable ThreadId after the cursor (UTF-16 order), wrapping around; lanes whose head waits
 * for a binding until after `now` are not runnable. The pass implements it as an indexed seek
 * (`seekLane` in src/internal/maintenance/select.ts); laneSeek.test.ts checks that the seek
 * agrees with this model for every cursor, and laneRotation.test.ts checks the model's fairness.
 */
import type { ThreadId } from "../../src/core/Identifiers.ts"
import type { BindingRetry } from "../../src/internal/maintenance/state.ts"

export const selectLane = (
  eligible: ReadonlyArray<ThreadId>,
  cursor: ThreadId | undefined,
  waits: ReadonlyArray<BindingRetry>,
  now: number,
): ThreadId | undefined => {
  const runnable = eligible.filter(
    (threadId) => !waits.some((wait) => wait.threadId === threadId && wait.notBefore > now),
  )
  return runnable.find((threadId) => cursor === undefined || threadId > cursor) ?? runnable[0]
}
