/**
 * A nudge for the delivery driver of one incarnation, keyed by its progress hub (which the
 * runtime and the driver share). An Attempt about to wait for the answer to a message it has
 * just enqueued (a child's start) asks the driver to send it now rather than after native work.
 *
 * The nudge resumes the driver in the nudging fiber's event. In a `ThreadObject` only the
 * maintenance pass runs Attempts, and the driver waiting is that pass's own, so both are in the
 * same event. A nudge that finds no driver waiting is kept for the next one to wait: at worst
 * it costs a wave that finds nothing due.
 * @internal
 */
import { Effect } from "effect"
import type { ProgressHubService } from "../../ProgressHub.ts"

interface Nudge {
  pending: boolean
  resume: (() => void) | undefined
}

const nudges = new WeakMap<ProgressHubService, Nudge>()

const nudgeOf = (hub: ProgressHubService): Nudge => {
  let nudge = nudges.get(hub)
  if (nudge === undefined) {
    nudge = { pending: false, resume: undefined }
    nudges.set(hub, nudge)
  }
  return nudge
}

/** Wakes the driver waiting on `hub`'s incarnation, or leaves the nudge for its next wait. @internal */
export const nudgeDelivery = (hub: ProgressHubService): Effect.Effect<void> =>
  Effect.sync(() => {
    const nudge = nudgeOf(hub)
    const resume = nudge.resume
    nudge.resume = undefined
    if (resume === undefined) nudge.pending = true
    else resume()
  })

/** Returns at the next nudge (at once for one left since the last wait). @internal */
export const nextNudge = (hub: ProgressHubService): Effect.Effect<void> =>
  Effect.suspend(() => {
    const nudge = nudgeOf(hub)
    if (nudge.pending) {
      nudge.pending = false
      return Effect.void
    }
    return Effect.callback<void>((resume) => {
      nudge.resume = () => resume(Effect.void)
      return Effect.sync(() => {
        nudge.resume = undefined
      })
    })
  })
