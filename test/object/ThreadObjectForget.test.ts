/**
 * `forget` on a real `ThreadObject`: an operator removes one settled Submission's data now (its
 * row, records and key), is refused while it is not settled, and gets the same answer for an id
 * already forgotten, unknown, or of another Thread.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { clientOf, deliverUntil, inState, ledgerRows, threadName } from "./support.ts"

describe("ThreadObject forget", () => {
  it.live(
    "removes a settled Submission now and answers a repeat, an unknown id and another Thread's alike",
    () =>
      Effect.gen(function* () {
        const thread = threadName("forget")
        const client = clientOf(thread)
        const done = yield* client.submit({ agentId: "echo", idempotencyKey: "a", input: { text: "bye" } })
        const kept = yield* client.submit({ agentId: "echo", idempotencyKey: "b", input: { text: "stay" } })
        yield* deliverUntil(thread, inState(client, kept.submissionId, "settled"))

        // Another Thread hosted in the same Object cannot forget it.
        const neighbour = clientOf(threadName("neighbour"), thread)
        yield* neighbour.forget(done.submissionId)
        expect((yield* ledgerRows(thread)).map((row) => row.submission_id)).toContain(done.submissionId)

        yield* client.forget(done.submissionId)
        const rows = (yield* ledgerRows(thread)).map((row) => row.submission_id)
        expect(rows).toEqual([kept.submissionId])
        expect((yield* client.history()).records.map((record) => record.submissionId)).not.toContain(
          done.submissionId,
        )
        expect(yield* Effect.flip(client.status(done.submissionId))).toMatchObject({
          _tag: "SubmissionNotFound",
        })
        yield* client.forget(done.submissionId)
        yield* client.forget("sub-unknown")
        // Its key admits a new Submission, after the ones already in the lane.
        const again = yield* client.submit({ agentId: "echo", idempotencyKey: "a", input: { text: "bye" } })
        expect(again).toMatchObject({ submissionId: done.submissionId, replayed: false, queueSequence: 3 })
        // The gaps it left in the Thread's sequence and the lane's positions are not violations.
        yield* deliverUntil(thread, inState(client, again.submissionId, "settled"))
        expect((yield* client.verify).violations).toEqual([])
      }),
  )

  it.live("refuses a Submission that is not settled, removing nothing", () =>
    Effect.gen(function* () {
      const thread = threadName("forget-open")
      const client = clientOf(thread)
      const waiting = yield* client.submit({
        agentId: "review",
        idempotencyKey: "r",
        input: { draft: "plan" },
      })
      yield* deliverUntil(thread, inState(client, waiting.submissionId, "suspended"))
      const refused = yield* Effect.flip(client.forget(waiting.submissionId))
      expect(refused).toMatchObject({
        _tag: "ForgetRefused",
        submissionId: waiting.submissionId,
        reason: "not-settled",
      })
      expect((yield* ledgerRows(thread)).map((row) => row.state)).toEqual(["suspended"])
    }),
  )
})
