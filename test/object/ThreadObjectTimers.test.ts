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
import { LATEST_ALARM_AT } from "../../src/internal/maintenance/transaction.ts"
import { badSleepAgent } from "../worker/threadObject.ts"

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

describe("ThreadObject timers beyond what an alarm holds", () => {
  // Cloudflare refuses alarm times after 2189: a due time past that arms the alarm at its latest
  // instant, and the Object keeps serving its other lanes with no failed pass.
  it.live("parks a Submission due after 2189 with the alarm at its latest instant", () =>
    Effect.gen(function* () {
      const objectName = threadName("far")
      const far = clientOf("far", objectName)
      const near = clientOf("near", objectName)
      const other = clientOf("other", objectName)
      const delayed = yield* far.submit({
        agentId: "nap",
        idempotencyKey: "delayed",
        input: { text: "later", millis: 1 },
        notBefore: Date.UTC(2300, 0, 1),
      })
      const sleeping = yield* near.submit({
        agentId: "nap",
        idempotencyKey: "centuries",
        input: { text: "long", millis: 300 * 365 * 86_400_000 },
      })
      yield* deliverUntil(objectName, inState(near, sleeping.submissionId, "waiting"))
      const echoed = yield* other.submit({ agentId: "echo", idempotencyKey: "e", input: { text: "hi" } })
      yield* deliverUntil(objectName, inState(other, echoed.submissionId, "settled"))
      const stored = yield* storedMaintenance(objectName)
      expect(stored.alarm).toBe(LATEST_ALARM_AT)
      expect((yield* far.explain(delayed.submissionId)).reason._tag).toBe("Delayed")
      expect((yield* near.explain(sleeping.submissionId)).reason._tag).toBe("Sleeping")
      expect((yield* near.inspectMaintenance).counters.failedPasses).toBe(0)
      expect((yield* near.obligations).mismatch).toBeUndefined()
      expect((yield* near.verify).violations).toEqual([])
    }),
  )

  it.live("fails a Submission that sleeps forever, naming the sleep", () =>
    Effect.gen(function* () {
      const thread = threadName("forever")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "forever", idempotencyKey: "f", input: { text: "x" } })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const settlement = yield* client.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement.outcome).toBe("failed")
      expect(JSON.stringify(settlement)).toContain('sleep \\"forever\\": the duration is not a finite number')
      expect((yield* client.inspectMaintenance).counters.failedPasses).toBe(0)
    }),
  )

  it.live("fails a Submission whose sleep is NaN or no duration, naming the sleep, with no pass failed", () =>
    Effect.gen(function* () {
      const thread = threadName("bad-sleep")
      const client = clientOf(thread)
      const sleeper = client.agent(badSleepAgent)
      for (const [mode, problem] of [
        ["nan", 'sleep \\"nan\\": the duration is not a finite number (NaN)'],
        ["unparsable", 'sleep \\"unparsable\\": the duration is not a Duration (soon)'],
      ] as const) {
        const receipt = yield* sleeper.submit({ mode }, { idempotencyKey: mode })
        yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
        const settlement = yield* client.awaitSettlement(receipt.submissionId, 1_000)
        expect(settlement.outcome).toBe("failed")
        expect(JSON.stringify(settlement)).toContain(problem)
      }
      expect((yield* client.inspectMaintenance).counters.failedPasses).toBe(0)
      expect((yield* client.obligations).mismatch).toBeUndefined()
    }),
  )
})
