/**
 * Conformance cases of events kept before their Submission is admitted (`keepEarly`): kept once
 * per event id under a key, taken by that key's admission of the same agent and recorded after
 * its acceptance, bounded per Object, listed for operators, and removed by `forgetEarly` and with
 * the Submission `removeSettled` removes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId, IdempotencyKey, ThreadId } from "../../src/core/Identifiers.ts"
import {
  type EarlyEvent,
  MAX_EARLY_BYTES,
  MAX_EARLY_EVENTS,
  SubmissionLedger,
} from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import {
  admitNew,
  claimHead,
  grant,
  owner,
  request,
  settlementOf,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

/** An event for `key` of the workflow agent `wf`, with `value` as its payload. */
const early = (key: string, eventId: string, value: unknown = eventId, overrides: Partial<EarlyEvent> = {}) =>
  ({
    threadId: ThreadId.make("t"),
    idempotencyKey: IdempotencyKey.make(key),
    agentId: AgentId.make("wf"),
    event: `deferred/${eventId}`,
    eventId,
    payload: JSON.stringify(value),
    now: 500,
    ...overrides,
  }) satisfies EarlyEvent

const keep = (event: EarlyEvent) => Effect.flatMap(SubmissionLedger, (ledger) => ledger.keepEarly(event))

/** The records of a Submission, as tags and received payloads. */
const recordsOf = (submissionId: Parameters<ThreadHistory["Service"]["forSubmission"]>[0]) =>
  Effect.gen(function* () {
    const history = yield* ThreadHistory
    return (yield* history.forSubmission(submissionId)).map((record) =>
      record.entry._tag === "EventReceived"
        ? { event: record.entry.event, eventId: record.entry.eventId, payload: record.entry.payload }
        : record.entry._tag,
    )
  })

const wf = (key: string, now = 1_000) => request("t", key, { agentId: AgentId.make("wf"), now })

/** Registers the early-event cases. */
export const earlyCases = (harness: LedgerHarness) => {
  describe("events kept before admission", () => {
    it.effect(
      "keeps an event for a key not yet admitted; its admission records it after the acceptance",
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            expect(yield* keep(early("k", "b", { v: "second" }, { now: 600 }))).toEqual({
              _tag: "Kept",
              replayed: false,
            })
            expect(yield* keep(early("k", "a", { v: "first" }))).toEqual({ _tag: "Kept", replayed: false })
            const kept = yield* ledger.earlyEvents
            const admitted = yield* admitNew(wf("k"))
            const bytes = JSON.stringify({ v: "first" }).length + JSON.stringify({ v: "second" }).length
            expect(kept).toEqual({
              events: 2,
              bytes,
              maxEvents: MAX_EARLY_EVENTS,
              maxBytes: MAX_EARLY_BYTES,
              keys: [
                {
                  threadId: "t",
                  idempotencyKey: "k",
                  agentId: "wf",
                  // The id it is admitted as: what an operator passes to `forget`.
                  submissionId: admitted.submissionId,
                  events: 2,
                  bytes,
                  firstKeptAt: 500,
                },
              ],
            })
            // In the order they were kept.
            expect(yield* recordsOf(admitted.submissionId)).toEqual([
              "SubmissionAccepted",
              { event: "deferred/a", eventId: "a", payload: { v: "first" } },
              { event: "deferred/b", eventId: "b", payload: { v: "second" } },
            ])
            expect((yield* ledger.earlyEvents).events).toBe(0)
            // Taken once: a second admission of the key replays, recording nothing more.
            yield* ledger.admit(wf("k"))
            expect(yield* recordsOf(admitted.submissionId)).toHaveLength(3)
          }),
        ),
    )

    it.effect("a second event of the same id under the key changes nothing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* keep(early("k", "a", "first"))
          expect(yield* keep(early("k", "a", "second, longer", { now: 700 }))).toEqual({
            _tag: "Kept",
            replayed: true,
          })
          const kept = yield* ledger.earlyEvents
          expect([kept.events, kept.bytes, kept.keys[0]?.firstKeptAt]).toEqual([1, '"first"'.length, 500])
          const admitted = yield* admitNew(wf("k"))
          expect(yield* recordsOf(admitted.submissionId)).toEqual([
            "SubmissionAccepted",
            { event: "deferred/a", eventId: "a", payload: "first" },
          ])
        }),
      ),
    )

    it.effect("answers the Submission admitted under the key and keeps nothing", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const admitted = yield* admitNew(wf("k"))
          const answer = yield* keep(early("k", "a"))
          expect(answer).toEqual({ _tag: "Admitted", row: admitted })
          expect((yield* ledger.earlyEvents).events).toBe(0)
        }),
      ),
    )

    it.effect("an admission of another agent or another key takes none", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* keep(early("k", "a"))
          yield* keep(early("other", "a"))
          const echo = yield* admitNew(request("t", "k"))
          expect(yield* recordsOf(echo.submissionId)).toEqual(["SubmissionAccepted"])
          const kept = yield* ledger.earlyEvents
          expect(kept.keys.map((key) => [key.idempotencyKey, key.agentId])).toEqual([
            ["k", "wf"],
            ["other", "wf"],
          ])
        }),
      ),
    )

    it.effect(
      `keeps at most ${MAX_EARLY_EVENTS} events per Object; a repeat at the bound still answers`,
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            for (let i = 0; i < MAX_EARLY_EVENTS; i++) yield* keep(early(`k${i % 3}`, `e${i}`))
            const refused = yield* Effect.flip(keep(early("k9", "over")))
            expect(refused._tag).toBe("EarlyEventRefused")
            expect(refused._tag === "EarlyEventRefused" && refused.reason).toBe("early-count")
            expect(yield* keep(early("k0", "e0"))).toEqual({ _tag: "Kept", replayed: true })
            const kept = yield* ledger.earlyEvents
            expect(kept.events).toBe(MAX_EARLY_EVENTS)
            expect(kept.keys.map((key) => key.events)).toEqual([22, 21, 21])
            // Taking a key's events makes room again.
            yield* admitNew(wf("k0"))
            expect(yield* keep(early("k9", "over"))).toEqual({ _tag: "Kept", replayed: false })
          }),
        ),
    )

    it.effect(`keeps at most ${MAX_EARLY_BYTES} bytes of payloads per Object`, () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          // Each payload is the string's JSON: two quotes more; "é" is two bytes of UTF-8.
          const half = "é".repeat(MAX_EARLY_BYTES / 4 - 2)
          yield* keep(early("k", "a", half))
          yield* keep(early("k", "b", half))
          expect((yield* ledger.earlyEvents).bytes).toBe(MAX_EARLY_BYTES - 4)
          const refused = yield* Effect.flip(keep(early("k", "c", "xxx")))
          expect(refused._tag === "EarlyEventRefused" && refused.reason).toBe("early-bytes")
          expect(yield* keep(early("k", "c", "xx"))).toEqual({ _tag: "Kept", replayed: false })
          expect((yield* ledger.earlyEvents).bytes).toBe(MAX_EARLY_BYTES)
        }),
      ),
    )

    it.effect("forgetEarly removes every event kept under a key, whatever its agent", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* keep(early("k", "a"))
          yield* keep(early("k", "b", "b", { agentId: AgentId.make("other") }))
          yield* keep(early("stays", "a"))
          yield* ledger.forgetEarly(ThreadId.make("t"), IdempotencyKey.make("k"))
          expect((yield* ledger.earlyEvents).keys.map((key) => key.idempotencyKey)).toEqual(["stays"])
          const admitted = yield* admitNew(wf("k"))
          expect(yield* recordsOf(admitted.submissionId)).toEqual(["SubmissionAccepted"])
          // Nothing kept under the key, or no table at all: a no-op.
          yield* ledger.forgetEarly(ThreadId.make("t"), IdempotencyKey.make("none"))
        }),
      ),
    )

    it.effect("removeSettled removes what is still kept under the removed Submission's key", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          // Another agent's event under the key: the admission leaves it.
          yield* keep(early("k", "a", "a", { agentId: AgentId.make("other") }))
          yield* keep(early("stays", "a"))
          yield* admitNew(request("t", "k", { now: 1_000 }))
          const claim = yield* claimHead("t", grant(1, 1_100))
          const row = yield* ledger.settle(owner(claim), settlementOf(claim, "completed", 1_200))
          expect((yield* ledger.earlyEvents).events).toBe(2)
          yield* ledger.removeSettled([{ submissionId: row.submissionId, receiptId: row.receiptId }])
          expect((yield* ledger.earlyEvents).keys.map((key) => key.idempotencyKey)).toEqual(["stays"])
        }),
      ),
    )
  })
}
