/**
 * `sendEvent` through a `ThreadObject` in workerd: a declared event's payload is decoded when it
 * is sent, a refused event writes nothing (no record, no generation), a settled Submission
 * refuses it, a repeated event id is recorded once (a retried Effect reuses its drawn id), an
 * early event is kept until a wait takes it, an event that ends a wait opens a generation, the
 * typed view encodes the payload with the event's Schema, and a Submission being aborted refuses
 * it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { courierAgent, echoAgent, Shipped, switchboard } from "../worker/threadObject.ts"
import {
  clientOf,
  deliverUntil,
  failureOf,
  inState,
  storedEverything,
  storedMaintenance,
  stubOf,
  threadName,
} from "./support.ts"

const eventRecords = (thread: string) =>
  Effect.map(clientOf(thread).history(), (page) =>
    page.records.flatMap((record) =>
      record.entry._tag === "EventReceived" || record.entry._tag === "EventConsumed"
        ? [`${record.entry._tag}:${record.entry.eventId}`]
        : [],
    ),
  )

/** A courier Submission parked on its approval, before its wait for `shipped`. */
const parkedCourier = (label: string, wait: "after-approval" | "first" = "after-approval") =>
  Effect.gen(function* () {
    const thread = threadName(label)
    const client = clientOf(thread)
    const receipt = yield* client.agent(courierAgent).submit({ wait }, { idempotencyKey: "k" })
    yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
    return { thread, client, receipt }
  })

describe("ThreadObject sendEvent", () => {
  it.live("keeps an event sent before the wait; the wait takes it once the Submission runs on", () =>
    Effect.gen(function* () {
      const { thread, client, receipt } = yield* parkedCourier("early")
      const before = (yield* storedMaintenance(thread)).record
      expect(
        yield* client.sendEvent(receipt.submissionId, "shipped", { tracking: "T-1" }, { eventId: "e1" }),
      ).toEqual(
        new AgentEvent.EventReceipt({
          submissionId: receipt.submissionId,
          eventId: "e1",
          replayed: false,
          resumed: false,
        }),
      )
      // Nothing to wake: no new generation (the maintenance record is unchanged).
      expect((yield* storedMaintenance(thread)).record).toEqual(before)
      yield* client.resolveApproval(receipt.submissionId, { approved: true })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const settlement = yield* client.agent(courierAgent).awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement).toMatchObject({ outcome: "completed", output: "T-1" })
      expect(yield* eventRecords(thread)).toEqual(["EventReceived:e1", "EventConsumed:e1"])
    }),
  )

  it.live(
    "decodes a declared event's payload when it is sent and refuses one that does not decode, writing nothing",
    () =>
      Effect.gen(function* () {
        const { thread, client, receipt } = yield* parkedCourier("malformed")
        const before = yield* storedEverything(stubOf(thread))
        const refused = failureOf(
          yield* Effect.exit(
            client.sendEvent(receipt.submissionId, "shipped", { tracking: 42 }, { eventId: "bad" }),
          ),
        )
        expect(refused).toMatchObject({
          _tag: "EventRefused",
          reason: "malformed-payload",
          submissionId: receipt.submissionId,
          event: "shipped",
        })
        expect(yield* storedEverything(stubOf(thread))).toEqual(before)
        // An undeclared name is kept as JSON, for a wait that decodes it itself.
        expect(yield* client.sendEvent(receipt.submissionId, "note", { anything: [1, 2] })).toMatchObject({
          replayed: false,
        })
        expect(
          failureOf(yield* Effect.exit(client.sendEvent("no-such-submission", "shipped", { tracking: "t" }))),
        ).toMatchObject({ _tag: "SubmissionNotFound" })
      }),
  )

  it.live("refuses an event for a settled Submission, so it is never lost silently", () =>
    Effect.gen(function* () {
      const thread = threadName("settled")
      const client = clientOf(thread)
      const receipt = yield* client.agent(echoAgent).submit({ text: "hi" }, { idempotencyKey: "k" })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const before = yield* storedEverything(stubOf(thread))
      expect(
        failureOf(yield* Effect.exit(client.sendEvent(receipt.submissionId, "late", null))),
      ).toMatchObject({
        _tag: "EventRefused",
        reason: "settled",
      })
      expect(yield* storedEverything(stubOf(thread))).toEqual(before)
    }),
  )

  it.live("records an event id once: a repeat, or a retry of the same Effect, answers replayed", () =>
    Effect.gen(function* () {
      const { thread, client, receipt } = yield* parkedCourier("idempotent")
      const send = client.sendEvent(receipt.submissionId, "shipped", { tracking: "T-9" })
      const first = yield* send
      expect(first).toMatchObject({ replayed: false })
      // The id was drawn when `sendEvent` was called: running the Effect again is the same event.
      expect(yield* send).toEqual(new AgentEvent.EventReceipt({ ...first, replayed: true }))
      expect(
        yield* client.sendEvent(
          receipt.submissionId,
          "shipped",
          { tracking: "other" },
          { eventId: first.eventId },
        ),
      ).toMatchObject({ replayed: true })
      // Another call draws another id.
      expect(
        (yield* client.sendEvent(receipt.submissionId, "shipped", { tracking: "T-10" })).eventId,
      ).not.toBe(first.eventId)
      expect(yield* eventRecords(thread)).toHaveLength(2)
      // The same id for an event of another name is another event: refused, not dropped as a repeat.
      const conflict = failureOf(
        yield* Effect.exit(
          client.sendEvent(receipt.submissionId, "delivered", { at: 1 }, { eventId: first.eventId }),
        ),
      )
      expect(conflict).toMatchObject({ _tag: "EventRefused", reason: "id-conflict", event: "delivered" })
      expect(conflict?.message).toContain(`event id ${first.eventId} was taken by event "shipped"`)
      expect(yield* eventRecords(thread)).toHaveLength(2)
    }),
  )

  it.live("resumes a Submission parked on the event in the write that records it, opening a generation", () =>
    Effect.gen(function* () {
      const { thread, client, receipt } = yield* parkedCourier("wakes", "first")
      const before = (yield* storedMaintenance(thread)).record as { readonly dirty: string }
      const sent = yield* client.sendEvent(
        receipt.submissionId,
        "shipped",
        { tracking: "T-2" },
        { eventId: "w" },
      )
      expect(sent).toMatchObject({ replayed: false, resumed: true })
      const after = (yield* storedMaintenance(thread)).record as { readonly dirty: string }
      expect(BigInt(after.dirty)).toBe(BigInt(before.dirty) + 1n)
      // The wake hint may already have run it.
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.agent(courierAgent).awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: "T-2",
      })
    }),
  )

  it.live(
    "the typed view encodes the payload with the event's Schema and reaches only its agent's Submissions",
    () =>
      Effect.gen(function* () {
        const { thread, client, receipt } = yield* parkedCourier("typed")
        const courier = client.agent(courierAgent)
        expect(
          yield* courier.sendEvent(receipt.submissionId, Shipped, { tracking: "T-3" }, { eventId: "t" }),
        ).toMatchObject({
          eventId: "t",
          replayed: false,
        })
        // A payload its Schema refuses to encode is refused in the Worker: nothing is sent.
        const strict = AgentEvent.make(
          "shipped",
          Schema.Struct({ tracking: Schema.String.check(Schema.isMaxLength(3)) }),
        )
        const narrow = client.agent({ ...courierAgent, events: [strict] })
        expect(
          failureOf(
            yield* Effect.exit(narrow.sendEvent(receipt.submissionId, strict, { tracking: "too long" })),
          ),
        ).toMatchObject({ _tag: "InvalidRequest", entryPoint: "sendEvent" })
        expect(
          failureOf(
            yield* Effect.exit(
              client
                .agent(echoAgent)
                .sendEvent(receipt.submissionId, Shipped as never, { tracking: "x" } as never),
            ),
          ),
        ).toMatchObject({ _tag: "SubmissionNotFound" })
        expect(yield* eventRecords(thread)).toEqual(["EventReceived:t"])
      }),
  )

  it.live("refuses an event for a Submission whose abort was accepted: no wait can take it", () =>
    Effect.gen(function* () {
      const { thread, client, receipt } = yield* parkedCourier("aborting", "first")
      // The pass that settles the abort fails before it begins, so the event comes first.
      switchboard.install(stubOf(thread).id, {
        maintenance: (location) =>
          location === "maintenance:begin:before" ? Effect.die(new Error("held")) : Effect.void,
      })
      const sent = yield* client
        .abort(receipt.submissionId)
        .pipe(
          Effect.andThen(Effect.exit(client.sendEvent(receipt.submissionId, "shipped", { tracking: "T" }))),
          Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))),
        )
      expect(failureOf(sent)).toMatchObject({ _tag: "EventRefused", reason: "settled" })
      expect(yield* eventRecords(thread)).toEqual([])
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({ outcome: "aborted" })
    }),
  )
})
