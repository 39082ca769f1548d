/**
 * The progress hub: a publication wakes the waiters of its Submission once the publishing run
 * is over, a publication between two waits is kept, a wait without one ends after its time,
 * a waiter for the settlement alone sleeps through writes that cannot settle, and the hub holds
 * nothing for a Submission nobody waits on.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import { TestClock } from "effect/testing"
import { SubmissionId } from "../../src/core/Identifiers.ts"
import { ProgressHub, type ProgressHubService } from "../../src/core/ProgressHub.ts"
import { makeProgressHub, peekOf, tookWaiters } from "../../src/core/internal/progress/hub.ts"

const a = SubmissionId.make("submission-a")
const b = SubmissionId.make("submission-b")

/** Lets queued microtasks and resumed fibers run, without moving the test clock. */
const settle = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

/** A fiber that waits once on `submissionId` and reports how the wait ended. */
const waitOnce = (
  hub: ProgressHubService,
  submissionId: SubmissionId,
  millis: number,
  interest?: { readonly settlementOnly: boolean },
) =>
  Effect.forkChild(
    Effect.scoped(
      Effect.gen(function* () {
        const watch = yield* hub.watch(submissionId, interest)
        yield* watch.next(millis)
        return "returned"
      }),
    ),
  )

describe("ProgressHub", () => {
  it.effect("wakes the waiters of the published Submission, and no other", () =>
    Effect.gen(function* () {
      const hub = makeProgressHub()
      const first = yield* waitOnce(hub, a, 60_000)
      const second = yield* waitOnce(hub, a, 60_000)
      const other = yield* waitOnce(hub, b, 60_000)
      yield* settle
      expect(yield* hub.watched).toBe(2)
      yield* hub.publish(a)
      yield* settle
      expect(yield* Fiber.join(first)).toBe("returned")
      expect(yield* Fiber.join(second)).toBe("returned")
      expect(other.pollUnsafe()).toBeUndefined()
      expect(yield* hub.watched).toBe(1)
      yield* Fiber.interrupt(other)
      expect(yield* hub.watched).toBe(0)
    }),
  )

  it.effect("resumes a waiter only after the run that published, as a storage transaction commits", () =>
    Effect.gen(function* () {
      const hub = makeProgressHub()
      const order: Array<string> = []
      const waiter = yield* Effect.forkChild(
        Effect.scoped(
          Effect.gen(function* () {
            const watch = yield* hub.watch(a)
            yield* watch.next(60_000)
            order.push("woken")
          }),
        ),
      )
      yield* settle
      // A synchronous transaction body: nothing else may run until it returns.
      yield* Effect.sync(() => {
        Effect.runSync(hub.publish(a))
        order.push("committed")
      })
      yield* Fiber.join(waiter)
      expect(order).toEqual(["committed", "woken"])
    }),
  )

  it.effect("keeps a publication made while its waiter was reading, so the next wait returns at once", () =>
    Effect.gen(function* () {
      const hub = makeProgressHub()
      const scope = yield* Scope.make()
      const watch = yield* Scope.provide(hub.watch(a), scope)
      yield* hub.publish(a)
      yield* hub.publish(a)
      // No time passes: the wait returns on the kept publication.
      yield* watch.next(60_000)
      const again = yield* Effect.forkChild(watch.next(60_000))
      yield* settle
      expect(again.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(60_000)
      yield* Fiber.join(again)
      yield* Scope.close(scope, Exit.void)
      expect(yield* hub.watched).toBe(0)
    }),
  )

  it.effect("ends a wait after its time when nothing is published, and forgets the waiter", () =>
    Effect.gen(function* () {
      const hub = makeProgressHub()
      const waiter = yield* waitOnce(hub, a, 1_000)
      yield* TestClock.adjust(999)
      expect(waiter.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(waiter)).toBe("returned")
      expect(yield* hub.watched).toBe(0)
      // Publishing for nobody keeps nothing either.
      yield* hub.publish(a)
      expect(yield* hub.watched).toBe(0)
    }),
  )

  it.effect("wakes a settlement waiter only for a write that may settle, every other waiter for each", () =>
    Effect.gen(function* () {
      const hub = makeProgressHub()
      const settlement = yield* waitOnce(hub, a, 60_000, { settlementOnly: true })
      const progress = yield* waitOnce(hub, a, 60_000)
      yield* settle
      // A Claim or a journal record: the progress waiter wakes, the settlement waiter sleeps on.
      yield* hub.publish(a, { settles: false })
      yield* settle
      expect(yield* Fiber.join(progress)).toBe("returned")
      expect(settlement.pollUnsafe()).toBeUndefined()
      // A publication kept while it slept would end its next wait at once: none was kept.
      yield* hub.publish(a, { settles: false })
      yield* settle
      expect(settlement.pollUnsafe()).toBeUndefined()
      yield* hub.publish(a)
      yield* settle
      expect(yield* Fiber.join(settlement)).toBe("returned")
      expect(yield* hub.watched).toBe(0)
    }),
  )

  it.effect("says once whether a publication marked a waiting caller, never for a peek", () =>
    Effect.gen(function* () {
      const hub = makeProgressHub()
      yield* Effect.scoped(
        Effect.gen(function* () {
          const peeked = yield* peekOf(hub)!(a)
          yield* hub.publish(a)
          expect(peeked()).toBe(true)
          expect(tookWaiters(hub)).toBe(false)
        }),
      )
      const settlement = yield* waitOnce(hub, b, 60_000, { settlementOnly: true })
      yield* settle
      yield* hub.publish(b, { settles: false })
      expect(tookWaiters(hub)).toBe(false)
      yield* hub.publish(b)
      expect(tookWaiters(hub)).toBe(true)
      expect(tookWaiters(hub)).toBe(false)
      yield* settle
      expect(yield* Fiber.join(settlement)).toBe("returned")
      expect(tookWaiters(yield* ProgressHub)).toBe(false)
    }),
  )

  it.effect("by default publishes nothing: a wait always lasts its time", () =>
    Effect.gen(function* () {
      const hub = yield* ProgressHub
      const waiter = yield* waitOnce(hub, a, 500)
      yield* settle
      yield* hub.publish(a)
      yield* settle
      expect(waiter.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(500)
      expect(yield* Fiber.join(waiter)).toBe("returned")
    }),
  )
})
