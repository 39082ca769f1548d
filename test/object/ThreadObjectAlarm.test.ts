import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { DurableRuntimeFailpointError } from "../../src/Testing.ts"
import { switchboard } from "../worker/threadObject.ts"
import {
  clientOf,
  deliverUntil,
  inState,
  putMaintenanceRecord,
  storedMaintenance,
  stubOf,
  threadName,
} from "./support.ts"

const idOf = (name: string) => stubOf(name).id

describe("ThreadObject alarm", () => {
  it.live("rejects a failed pass so workerd redelivers, and converges on redelivery", () =>
    Effect.gen(function* () {
      const thread = threadName("redeliver")
      const client = clientOf(thread)
      let armed = true
      switchboard.install(idOf(thread), {
        runtime: (location) =>
          location === "claim:after-claim" && armed
            ? Effect.suspend(() => {
                armed = false
                return Effect.fail(new DurableRuntimeFailpointError({ location, message: "injected once" }))
              })
            : Effect.void,
      })
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled")).pipe(
        Effect.ensuring(Effect.sync(() => switchboard.remove(idOf(thread)))),
      )
      expect(armed).toBe(false)
      const inspection = yield* client.inspectMaintenance
      expect(inspection.counters.failedPasses).toBeGreaterThanOrEqual(1)
      expect(inspection.counters.settled).toBe(1)
      expect(yield* client.awaitSettlement(receipt.submissionId, 100)).toMatchObject({ outcome: "completed" })
    }),
  )

  it.live("builds an incarnation without recovery: the constructor only ensures the alarm", () =>
    Effect.gen(function* () {
      const thread = threadName("constructor")
      const client = clientOf(thread)
      yield* client.threadStatus
      yield* putMaintenanceRecord(thread, { schemaVersion: 1, dirty: "7", processed: "6", nonterminal: 0 })
      yield* Effect.promise(() =>
        runInDurableObject(stubOf(thread), (_instance, state) => state.storage.deleteAlarm()),
      )
      const hits: Array<string> = []
      switchboard.install(idOf(thread), { runtime: (location) => Effect.sync(() => hits.push(location)) })
      yield* Effect.promise(() => abortAllDurableObjects())
      // A fresh incarnation: the read-only call runs its constructor first.
      yield* client.threadStatus
      switchboard.remove(idOf(thread))
      expect(hits).toEqual([])
      const stored = yield* storedMaintenance(thread)
      expect(stored.alarm).not.toBeNull()
      expect(stored.record).toMatchObject({ dirty: "7", processed: "6" })
    }),
  )

  it.live("counts passes, settlements and alarm lag in its inspection view", () =>
    Effect.gen(function* () {
      const thread = threadName("counters")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      yield* deliverUntil(
        thread,
        Effect.map(storedMaintenance(thread), (stored) => stored.alarm === null),
      )
      const { counters } = yield* client.inspectMaintenance
      expect(counters.passes).toBeGreaterThanOrEqual(1)
      expect(counters.settled).toBe(1)
      expect(counters.failedPasses).toBe(0)
      expect(counters.maxAlarmLagMillis).toBeGreaterThanOrEqual(counters.meanAlarmLagMillis)
    }),
  )
})
