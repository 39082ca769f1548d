/**
 * The SQLite stores decode a stored row once per content: the same cells give the same decoded
 * value without a decode, and a row that differs in any cell, even only in a cell's type (NULL
 * against the text "null", a number against its text), is decoded on its own and fails if it
 * does not decode.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { decodeRow as decodeHistoryRow, type StoredRow } from "../../src/core/internal/history/sqlRows.ts"
import { decodeRow as decodeLedgerRow } from "../../src/core/internal/ledger/sqlStatements.ts"
import { boundedMemory } from "../../src/core/internal/contentKey.ts"

const entries = JSON.stringify([
  { _tag: "EventReceived", event: "poke", eventId: "e-1", payload: { n: 1 } },
  { _tag: "EventConsumed", step: 0, event: "poke", eventId: "e-1" },
])

const historyRow = (overrides: Partial<Record<keyof StoredRow, unknown>> = {}): StoredRow => ({
  position: 40,
  thread_id: "memory-thread",
  sequence: 7,
  records: 2,
  submission_id: "memory-submission",
  recorded_at: 1_000,
  entries,
  ...overrides,
})

const ledgerRow = (overrides: Record<string, unknown> = {}) => ({
  submission_id: "memory-row",
  thread_id: "memory-thread",
  queue_sequence: 3,
  idempotency_key: "k-1",
  agent_id: "echo",
  agent_digest: "echo-digest-1",
  input_payload: "{}",
  input_digest: "input-1",
  receipt_id: "receipt-1",
  state: "ready",
  producer_epoch: 1,
  abort_requested: 0,
  created_at: 1_000,
  attempt_id: null,
  ownership_token: null,
  lease_expires_at: null,
  owner_incarnation: null,
  settlement: null,
  ready_at: 1_000,
  parent_link: null,
  host_submission_id: null,
  due_at: null,
  wait: null,
  lane_status: "open",
  ...overrides,
})

describe("the stores' memory of decoded rows", () => {
  it.effect("decodes a history row once per content, and each cell's type counts", () =>
    Effect.gen(function* () {
      const first = yield* decodeHistoryRow("test", historyRow())
      const again = yield* decodeHistoryRow("test", historyRow())
      expect(again).toBe(first)
      expect(first.map((entry) => [entry.position, entry.record.sequence])).toEqual([
        [40, 7],
        [41, 8],
      ])
      // Asked for some kinds, a remembered row answers those only.
      const consumed = yield* decodeHistoryRow("test", historyRow(), new Set(["EventConsumed"]))
      expect(consumed.map((entry) => entry.record.entry._tag)).toEqual(["EventConsumed"])
      expect(consumed[0]?.record).toBe(first[1]?.record)
      // Another cell is another row.
      const later = yield* decodeHistoryRow("test", historyRow({ recorded_at: 2_000 }))
      expect(later[0]?.record.recordedAt).toBe(2_000)
      // The same value as text does not decode, remembered or not.
      const text = yield* Effect.exit(decodeHistoryRow("test", historyRow({ recorded_at: "1000" })))
      expect(Exit.isFailure(text)).toBe(true)
    }),
  )

  it.effect("decodes a ledger row once per content, and NULL is not the text null", () =>
    Effect.gen(function* () {
      const decode = decodeLedgerRow("test")
      const first = yield* decode(ledgerRow())
      expect(yield* decode(ledgerRow())).toBe(first)
      // A column the snapshot does not come from does not matter.
      expect(yield* decode(ledgerRow({ lane_status: "parked" }))).toBe(first)
      const aborted = yield* decode(ledgerRow({ abort_requested: 1 }))
      expect(aborted.abortRequested).toBe(true)
      expect(first.abortRequested).toBe(false)
      // A row whose host is the text "null" is not the row without a host.
      const nullText = yield* decode(ledgerRow({ host_submission_id: "null" }))
      expect(nullText.host).toBe("null")
      expect(first.host).toBeUndefined()
      const damaged = yield* Effect.exit(decode(ledgerRow({ producer_epoch: "1" })))
      expect(Exit.isFailure(damaged)).toBe(true)
    }),
  )

  it("keeps a bounded number of entries and characters, the oldest forgotten first", () => {
    const memory = boundedMemory<number>(3, 160)
    for (const key of ["a", "b", "c", "d"]) memory.set(key, key.charCodeAt(0))
    expect(["a", "b", "c", "d"].map(memory.get)).toEqual([undefined, 98, 99, 100])
    // Set again, a key is the newest: "b" outlives "c".
    memory.set("b", 1)
    memory.set("e", 2)
    expect(["b", "c", "d", "e"].map(memory.get)).toEqual([1, undefined, 100, 2])
    // A key over a sixteenth of the characters is not kept; keys up to it count toward them.
    memory.set("x".repeat(11), 3)
    expect(memory.get("x".repeat(11))).toBeUndefined()
    const tens = ["0", "1", "2"].map((digit) => digit.repeat(10))
    for (const key of tens) memory.set(key, 4)
    expect(tens.map(memory.get)).toEqual([4, 4, 4])
    expect(["b", "d", "e"].map(memory.get)).toEqual([undefined, undefined, undefined])
  })
})
