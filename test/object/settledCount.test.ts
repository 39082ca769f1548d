/**
 * The settled count of a Thread in the operator's thread page (and so the console's): the
 * settled Submissions the Thread still holds. A forgotten Submission, like one retention removed,
 * is no longer counted; the admitted count keeps it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { echoAgent } from "../worker/threadObject.ts"
import { clientOf, deliverUntil, inState, threadName } from "./support.ts"

describe("a Thread's settled count", () => {
  it.live("leaves out a forgotten Submission", () =>
    Effect.gen(function* () {
      const thread = threadName("settled-count")
      const client = clientOf(thread)
      const receipts = []
      for (const key of ["e1", "e2", "e3"])
        receipts.push(yield* client.agent(echoAgent).submit({ text: key }, { idempotencyKey: key }))
      for (const receipt of receipts)
        yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const counts = Effect.map(client.threadPage(), (page) => {
        const summary = page.threads[0]
        return [summary?.admitted, summary?.open, summary?.parked, summary?.settled]
      })
      expect(yield* counts).toEqual([3, 0, 0, 3])
      yield* client.forget(receipts[1]!.submissionId)
      expect(yield* counts).toEqual([3, 0, 0, 2])
      // The newest too: the Thread's tail (admitted) stays, its settled count drops.
      yield* client.forget(receipts[2]!.submissionId)
      expect(yield* counts).toEqual([3, 0, 0, 1])
    }),
  )
})
