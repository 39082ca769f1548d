/**
 * The progress hub's implementation: a map from a Submission to its waiters, with an entry only
 * while someone waits. A publication marks each waiter and resumes the ones waiting in a
 * microtask: a write inside a synchronous storage transaction publishes before the transaction
 * commits, and a waiter resumed there would read (and could answer with) a row that may still
 * roll back. A rolled-back write then costs a waiter one read that finds nothing new.
 * @internal
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import type { ProgressHubService, ProgressWatch } from "../../ProgressHub.ts"
import type { SubmissionId } from "../../Identifiers.ts"

type Hub = ProgressHubService

interface Waiter {
  /** Woken only by writes that may settle the Submission. */
  readonly settlementOnly: boolean
  /** A polled watch (`peekOf`): nobody's answer waits on it. */
  readonly peek: boolean
  /** Published since the last `next` returned. */
  published: boolean
  /** Resumes the waiting `next`, while one waits. */
  resume: (() => void) | undefined
}

/** Waits the whole time: the poll of a host without a hub. @internal */
const sleeping: ProgressWatch = { next: (millis) => Effect.sleep(millis) }

/** The default hub: publishes nothing, so every waiter polls. @internal */
export const inertProgressHub: Hub = {
  publish: () => Effect.void,
  watch: () => Effect.succeed(sleeping),
  watched: Effect.succeed(0),
}

const nextOf =
  (waiter: Waiter) =>
  (millis: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (waiter.published) {
        waiter.published = false
        return Effect.void
      }
      return Effect.callback<void>((resume) => {
        waiter.resume = () => resume(Effect.void)
        return Effect.sync(() => {
          waiter.resume = undefined
        })
      }).pipe(
        Effect.timeoutOption(millis),
        Effect.ensuring(
          Effect.sync(() => {
            waiter.published = false
            waiter.resume = undefined
          }),
        ),
      )
    })

/**
 * A watch read by polling: whether the Submission was published since the last look. Unlike
 * `watch`, a publication never resumes the looker. A publication made in another event of the
 * Object (a call recording an input) would resume it in that event's I/O context, and an Attempt
 * resumed there would make its outgoing calls on behalf of a call that may already have ended.
 * @internal
 */
export type ProgressPeek = () => boolean

const peeks = new WeakMap<
  Hub,
  (submissionId: SubmissionId) => Effect.Effect<ProgressPeek, never, Scope.Scope>
>()

/** Opens a polled watch of `submissionId`; `undefined` for a hub that publishes nothing. @internal */
export const peekOf = (hub: Hub) => peeks.get(hub)

const wokens = new WeakMap<Hub, () => boolean>()

/**
 * Whether a publication marked a waiting caller (not a peek) since the last call, and clears it:
 * that caller's answer goes out once the writes before it commit. @internal
 */
export const tookWaiters = (hub: Hub): boolean => wokens.get(hub)?.() ?? false

/** A live hub. @internal */
export const makeProgressHub = (): Hub => {
  const waiters = new Map<SubmissionId, Set<Waiter>>()
  /** Submissions whose waiters a queued microtask resumes. */
  const queued = new Set<SubmissionId>()
  /** A publication marked a waiter that is not a peek since `tookWaiters` last looked. */
  let wokeCaller = false

  const resumeWaiters = (submissionId: SubmissionId) => {
    queued.delete(submissionId)
    for (const waiter of waiters.get(submissionId) ?? []) {
      if (!waiter.published) continue
      const resume = waiter.resume
      waiter.resume = undefined
      resume?.()
    }
  }

  const register = (submissionId: SubmissionId, settlementOnly: boolean, peek: boolean): Waiter => {
    const waiter: Waiter = { settlementOnly, peek, published: false, resume: undefined }
    const watching = waiters.get(submissionId) ?? new Set()
    watching.add(waiter)
    waiters.set(submissionId, watching)
    return waiter
  }

  const unregister = (submissionId: SubmissionId, waiter: Waiter) => {
    const watching = waiters.get(submissionId)
    watching?.delete(waiter)
    if (watching?.size === 0) waiters.delete(submissionId)
  }

  const acquire = (submissionId: SubmissionId, settlementOnly: boolean, peek: boolean) =>
    Effect.acquireRelease(
      Effect.sync(() => register(submissionId, settlementOnly, peek)),
      (waiter) => Effect.sync(() => unregister(submissionId, waiter)),
    )

  const hub: Hub = {
    publish: (submissionId, publication) =>
      Effect.sync(() => {
        const watching = waiters.get(submissionId)
        if (watching === undefined) return
        let woken = false
        for (const waiter of watching) {
          if (waiter.settlementOnly && publication?.settles === false) continue
          waiter.published = true
          woken = true
          if (!waiter.peek) wokeCaller = true
        }
        if (!woken || queued.has(submissionId)) return
        queued.add(submissionId)
        queueMicrotask(() => resumeWaiters(submissionId))
      }),
    watch: (submissionId, interest) =>
      Effect.map(
        acquire(submissionId, interest?.settlementOnly === true, false),
        (waiter): ProgressWatch => ({
          next: nextOf(waiter),
        }),
      ),
    watched: Effect.sync(() => waiters.size),
  }
  peeks.set(hub, (submissionId) =>
    Effect.map(acquire(submissionId, false, true), (waiter) => () => {
      const published = waiter.published
      waiter.published = false
      return published
    }),
  )
  wokens.set(hub, () => {
    const woke = wokeCaller
    wokeCaller = false
    return woke
  })
  return hub
}
