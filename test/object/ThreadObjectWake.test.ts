/**
 * Waiters of a `ThreadObject` are woken by the write that moves their Submission. The Object
 * under test polls only once a minute (`wakePollMillis`), and each wait below must end within
 * seconds, so only the progress hub's wake can answer it; workerd delivers the alarms itself.
 */
import { env } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { wakePollMillis } from "../worker/wakeObject.ts"
import { failureOf, inState, threadName } from "./support.ts"

/** Well under the poll interval: an answer within it was woken. */
const wokenWithin = 5_000

const clientOf = (thread: string) => ThreadClient.make(env.THREADS_WAKE, thread)

/** Waits (in real time) until `done` holds; workerd runs the Object's alarms meanwhile. */
const eventually = (done: Effect.Effect<boolean, unknown>) =>
  Effect.gen(function* () {
    for (let round = 0; round < 500; round++) {
      if (yield* done) return
      yield* Effect.sleep(10)
    }
    return yield* Effect.die(new Error("the condition did not hold within 5 s"))
  })

/** A review Submission parked on its approval, and its client. */
const parkedReview = (label: string) =>
  Effect.gen(function* () {
    const client = clientOf(threadName(label))
    const receipt = yield* client.submit({ agentId: "review", idempotencyKey: "k", input: { draft: "go" } })
    yield* eventually(inState(client, receipt.submissionId, "suspended"))
    return { client, submissionId: receipt.submissionId }
  })

/** Checks a forked waiter is still waiting after a moment: it had read the Submission unmoved. */
const stillWaiting = <A, E>(waiter: Fiber.Fiber<A, E>) =>
  Effect.gen(function* () {
    yield* Effect.sleep(200)
    expect(waiter.pollUnsafe()).toBeUndefined()
  })

describe("ThreadObject waiters", () => {
  it.live("wakes awaitSettlement when the pass settles the Submission, long before the poll", () =>
    Effect.gen(function* () {
      expect(wakePollMillis).toBeGreaterThan(10 * wokenWithin)
      const { client, submissionId } = yield* parkedReview("settle")
      const waiter = yield* Effect.forkChild(client.awaitSettlement(submissionId, 30_000))
      yield* stillWaiting(waiter)
      yield* client.resolveApproval(submissionId, { approved: true, note: "fine" })
      const settlement = yield* Fiber.join(waiter).pipe(Effect.timeout(wokenWithin))
      expect(settlement).toMatchObject({ outcome: "completed", output: "go approved (fine)" })
    }),
  )

  it.live("wakes awaitProgress when a resolution moves the Submission", () =>
    Effect.gen(function* () {
      const { client, submissionId } = yield* parkedReview("progress")
      const start = yield* client.awaitProgress(submissionId, { timeoutMillis: 0 })
      const waiter = yield* Effect.forkChild(
        client.awaitProgress(submissionId, { after: start.token, timeoutMillis: 30_000 }),
      )
      yield* stillWaiting(waiter)
      yield* client.resolveApproval(submissionId, { approved: true })
      const moved = yield* Fiber.join(waiter).pipe(Effect.timeout(wokenWithin))
      expect(moved.changed).toBe(true)
      expect(moved.records.map((record) => record.entry._tag)).toContain("ApprovalResolved")
    }),
  )

  it.live("times both waits out at their own timeout when nothing moves", () =>
    Effect.gen(function* () {
      const { client, submissionId } = yield* parkedReview("timeout")
      const start = yield* client.awaitProgress(submissionId, { timeoutMillis: 0 })
      const startedAt = Date.now()
      const settled = yield* Effect.exit(client.awaitSettlement(submissionId, 300))
      const settleWait = Date.now() - startedAt
      expect(failureOf(settled)).toMatchObject({ _tag: "SettlementTimeout" })
      const progress = yield* client.awaitProgress(submissionId, { after: start.token, timeoutMillis: 300 })
      const progressWait = Date.now() - startedAt - settleWait
      expect(progress).toMatchObject({ changed: false, token: start.token, records: [] })
      for (const waited of [settleWait, progressWait]) {
        expect(waited).toBeGreaterThanOrEqual(300)
        expect(waited).toBeLessThan(wokenWithin)
      }
    }),
  )
})
