/**
 * The README's courier as a new user writes it: a step retried after failures, a durable sleep,
 * and the delivery event sent early (before the wait), during the sleep, twice under one id, or
 * after an abort.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Delivered, parcelAgent, userRuns } from "../worker/userObject.ts"
import { deliverUntil, failureOf, stateIs, uniqueName, userClient } from "./support.ts"

describe("courier: retry, sleep and an early event", () => {
  it.live("an event sent before the wait (during the retries) is taken once; the step's result is kept", () =>
    Effect.gen(function* () {
      const thread = uniqueName("courier")
      const client = userClient(thread)
      const parcels = client.agent(parcelAgent)
      const receipt = yield* parcels.submit(
        { parcel: "P1", failures: 2, napMillis: 300 },
        { idempotencyKey: "p1" },
      )
      // Sent at once, while the label step is still failing: kept until the wait takes it.
      yield* parcels.sendEvent(receipt.submissionId, Delivered, { signedBy: "Ada" }, { eventId: "hook-1" })
      // The webhook retries: the same event id is not a second event.
      yield* parcels.sendEvent(receipt.submissionId, Delivered, { signedBy: "Ada" }, { eventId: "hook-1" })
      yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "settled"))
      const settled = yield* parcels.awaitSettlement(receipt.submissionId, 1_000)
      expect(settled).toMatchObject({ outcome: "completed", output: "label-P1 signed by Ada" })
      expect(userRuns.get(`${receipt.submissionId}:print`)).toBe(3)
      expect(userRuns.get(`${receipt.submissionId}:done`)).toBe(1)
      expect((yield* client.verify).violations).toEqual([])
    }),
  )

  it.live("a bad payload of a declared event is refused, typed; an undeclared name is kept", () =>
    Effect.gen(function* () {
      const thread = uniqueName("courier-bad")
      const client = userClient(thread)
      const receipt = yield* client.submit({
        agentId: "parcel",
        idempotencyKey: "p2",
        input: { parcel: "P2", failures: 0, napMillis: 60_000 },
      })
      const exit = yield* Effect.exit(client.sendEvent(receipt.submissionId, "delivered", { signedBy: 42 }))
      expect(failureOf(exit)).toMatchObject({ _tag: "EventRefused" })
      // A name the agent does not declare is kept as JSON (docs/agents.md), not refused.
      yield* client.sendEvent(receipt.submissionId, "lost", {})
    }),
  )

  it.live("an abort during the sleep settles it aborted; an event sent afterwards is refused", () =>
    Effect.gen(function* () {
      const thread = uniqueName("courier-abort")
      const client = userClient(thread)
      const parcels = client.agent(parcelAgent)
      const receipt = yield* parcels.submit(
        { parcel: "P3", failures: 1, napMillis: 60_000 },
        { idempotencyKey: "p3" },
      )
      yield* deliverUntil(
        [thread],
        Effect.map(client.explain(receipt.submissionId), (e) => e.reason._tag === "Sleeping"),
      )
      yield* client.abort(receipt.submissionId)
      yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "settled"))
      expect((yield* client.awaitSettlement(receipt.submissionId, 1_000)).outcome).toBe("aborted")
      const late = yield* Effect.exit(
        parcels.sendEvent(receipt.submissionId, Delivered, { signedBy: "Bo" }, { eventId: "late" }),
      )
      expect(failureOf(late)).toMatchObject({ _tag: "EventRefused" })
      expect(userRuns.get(`${receipt.submissionId}:done`)).toBeUndefined()
    }),
  )
})
