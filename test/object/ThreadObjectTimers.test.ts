/**
 * Durable timers through a real `ThreadObject` and its client: a Submission that sleeps is
 * explained as sleeping until its due time, `obligations` lists its timer against the alarm the
 * Object holds with no mismatch, `verify` finds nothing, and the alarm at the due time settles
 * it; all reads leave the stored state untouched.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  clientOf,
  deliverUntil,
  inState,
  storedEverything,
  storedMaintenance,
  stubOf,
  threadName,
} from "./support.ts"

describe("ThreadObject timers", () => {
  it.live("explains a sleeping Submission, owes its timer at the alarm it holds, and verifies clean", () =>
    Effect.gen(function* () {
      const thread = threadName("timers")
      const client = clientOf(thread)
      const receipt = yield* client.submit({
        agentId: "nap",
        idempotencyKey: "n",
        input: { text: "hi", millis: 60_000 },
      })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "waiting"))
      // The submission's own pass may still be finishing: wait for the alarm it leaves.
      yield* deliverUntil(
        thread,
        Effect.map(
          storedMaintenance(thread),
          (stored) => stored.alarm !== null && stored.alarm > Date.now() + 30_000,
        ),
      )
      const before = yield* storedEverything(stubOf(thread))
      const explained = yield* client.explain(receipt.submissionId)
      expect(explained).toMatchObject({
        state: "waiting",
        reason: { _tag: "Sleeping", step: 0, name: "nap" },
      })
      const until = explained.reason._tag === "Sleeping" ? explained.reason.until : 0
      const owed = yield* client.obligations
      expect(owed.obligations.map((obligation) => [obligation.source, obligation.dueAt])).toEqual([
        ["timer", until],
      ])
      expect(owed.scheduledAlarm).toBe(until)
      expect(owed.mismatch).toBeUndefined()
      expect((yield* client.verify).violations).toEqual([])
      expect(yield* storedEverything(stubOf(thread))).toEqual(before)
    }),
  )
})
