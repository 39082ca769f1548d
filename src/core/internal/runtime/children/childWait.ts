/**
 * What `awaitChild` does before it parks: with a progress hub, it waits in memory up to
 * `childAwaitMillis` for the child's settlement to be recorded. A child that answers meanwhile
 * costs its parent no park, no further Attempt and no replay; one that does not is parked for as
 * before (the park looks for the settlement again in its own transaction, so nothing recorded
 * between the last look and the park is missed). Waiting first nudges the delivery driver to send
 * the child's start now, not after native work.
 *
 * Heads of one Object run one after another, so only a lane alone with work waits: with another
 * lane's head runnable the Attempt parks at once, as does one whose wait would hold back a timer
 * due sooner. The wait polls its Submission's publications on timers of its own event instead of
 * being resumed by them: the settlement is recorded by a call into this Object, a different
 * event. It ends early for the event's yield, before the Claim's lease would need renewing and at
 * any other write for the Submission (an abort); a crash meanwhile is any running Attempt's crash
 * (the journal already says which child it awaits). A settlement recorded between the Attempt's
 * last journal read and the start of the wait is not seen by the wait: the park finds it, at the
 * cost of a park.
 * @internal
 */
import { Clock, Effect, Option } from "effect"
import { nudgeDelivery } from "../../progress/deliveryNudge.ts"
import { peekOf } from "../../progress/hub.ts"
import type { AttemptState } from "../attempt/attemptState.ts"

/** The first poll's delay; each next one doubles, up to `LONGEST_POLL_MILLIS`. */
const FIRST_POLL_MILLIS = 1
const LONGEST_POLL_MILLIS = 8
/**
 * How often a wait looks again for other work in its Object: a head admitted meanwhile (a child
 * in another Thread of this same Object, which cannot run while this Attempt holds the event)
 * ends the wait.
 */
const RECHECK_MILLIS = 25

/**
 * Until when the Attempt's lane may hold the Object's heads: `until`, or earlier for another
 * Submission's timer due before it (one due already ends the wait), or now when another lane's
 * head is runnable (or the ledger cannot say). The Attempt's own row is not a timer here: one
 * claimed in place by the due path keeps its due time.
 */
const aloneUntil = (attempt: AttemptState, until: number): Effect.Effect<number> => {
  const { ledger } = attempt.env
  const { submissionId, threadId: own } = attempt.claim
  return Effect.gen(function* () {
    const first = yield* ledger.nextLaneHead(undefined)
    const other =
      Option.isSome(first) && first.value.threadId === own ? yield* ledger.nextLaneHead(own) : first
    if (Option.isSome(other)) return 0
    const timer = (yield* ledger.earliestDue(2)).find((row) => row.submissionId !== submissionId)
    return Math.min(until, timer?.dueAt ?? until)
  }).pipe(Effect.orElseSucceed(() => 0))
}

/** The child's settlement once recorded within the wait, or none. @internal */
export const awaitChildBriefly = <S, E>(
  attempt: AttemptState,
  settlement: Effect.Effect<Option.Option<S>, E>,
): Effect.Effect<Option.Option<S>, E> =>
  Effect.gen(function* () {
    const { env } = attempt
    const millis = env.settings.childAwaitMillis
    const peek = peekOf(env.progress)
    if (millis === 0 || peek === undefined) return Option.none()
    const now = yield* Clock.currentTimeMillis
    const until = Math.min(
      now + millis,
      attempt.liveSteps > 0 ? attempt.yieldAfter : Number.POSITIVE_INFINITY,
      attempt.lastRenewal + env.settings.leaseRenewalInterval,
    )
    if (until <= now) return Option.none()
    let alone = yield* aloneUntil(attempt, until)
    if (alone <= now) return Option.none()
    yield* nudgeDelivery(env.progress)
    return yield* Effect.scoped(
      Effect.gen(function* () {
        const published = yield* peek(attempt.claim.submissionId)
        let delay = FIRST_POLL_MILLIS
        let checked = now
        while (true) {
          yield* Effect.sleep(delay)
          delay = Math.min(delay * 2, LONGEST_POLL_MILLIS)
          if (published()) {
            // Anything else written for this Submission (an accepted abort, an event) is the
            // park's and the next Attempt's to handle.
            const settled = yield* settlement
            if (Option.isSome(settled)) return settled
            break
          }
          const at = yield* Clock.currentTimeMillis
          if (at - checked >= RECHECK_MILLIS) {
            checked = at
            alone = yield* aloneUntil(attempt, alone)
          }
          if (at >= alone) break
        }
        return Option.none<S>()
      }),
    )
  })
