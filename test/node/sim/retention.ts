/**
 * Retention's invariants in the simulation, checked at every removal against the state it
 * removed from (taken in the same synchronous step as the in-memory removal):
 *
 * - retention-settled: only settled Submissions are removed.
 * - retention-unreferenced: none that a live Submission still needs: one with a message not yet
 *   acknowledged, a host whose joins have not settled, a parent whose child in this Object has
 *   not settled.
 * - retention-outcome: what is removed settled once, with the outcome its input and records
 *   imply (the end state can no longer check it).
 */
import type { SubmissionId } from "../../../src/core/Identifiers.ts"
import type { MemoryStore } from "../../../src/core/internal/ledger/memoryStore.ts"
import { sentBy } from "../../../src/core/internal/outbox/model.ts"
import type { HistoryEntry } from "../../../src/core/ThreadHistory.ts"
import type { SubmissionSnapshot } from "../../../src/core/SubmissionLedger.ts"
import { expectedOutcome } from "./agents.ts"
import type { Monitor } from "./invariants.ts"

/** What a removal is checked against. */
export interface BeforeRemoval {
  readonly rows: ReadonlyMap<SubmissionId, SubmissionSnapshot>
  readonly entries: ReadonlyMap<SubmissionId, ReadonlyArray<HistoryEntry>>
  readonly unacknowledged: ReadonlyArray<string>
  readonly live: ReadonlyArray<SubmissionSnapshot>
}

/** The state before a removal. */
export const beforeRemoval = (store: MemoryStore): BeforeRemoval => ({
  rows: new Map(store.rows),
  entries: new Map(
    [...store.historyBySubmission].map(([id, records]) => [id, records.map((record) => record.entry)]),
  ),
  unacknowledged: [...store.outbox.values()]
    .filter((message) => message.acknowledgedAt === undefined)
    .map((message) => message.messageId),
  live: [...store.rows.values()].filter((row) => row.state !== "settled"),
})

/** Checks each removed Submission against the state before its removal. */
export const removedSafely = (
  monitor: Monitor,
  before: BeforeRemoval,
  removed: ReadonlyArray<SubmissionId>,
) => {
  for (const id of removed) {
    monitor.removed.add(id)
    const row = before.rows.get(id)
    monitor.check("retention-settled", row?.state === "settled", () => `removed ${id} while ${row?.state}`)
    if (row === undefined) continue
    const pending = before.unacknowledged.filter((messageId) => sentBy(messageId, id))
    monitor.check(
      "retention-unreferenced",
      pending.length === 0,
      () => `removed ${id} with unacknowledged messages ${pending.join(", ")}`,
    )
    const needing = before.live.filter((other) => other.host === id || other.parent?.submissionId === id)
    monitor.check(
      "retention-unreferenced",
      needing.length === 0,
      () => `removed ${id} while ${needing.map((other) => other.submissionId).join(", ")} still need it`,
    )
    const entries = before.entries.get(id) ?? []
    const recorded = entries.filter((entry) => entry._tag === "SubmissionSettled")
    monitor.check(
      "retention-outcome",
      recorded.length === 1 &&
        recorded[0]?._tag === "SubmissionSettled" &&
        recorded[0].outcome === row.settlement?.outcome,
      () => `removed ${id} with ${recorded.length} settlement records for ${row.settlement?.outcome}`,
    )
    const settlement = row.settlement
    if (settlement === undefined || settlement.host !== undefined || settlement.outcome === "aborted")
      continue
    const expected = expectedOutcome(row.agentId, JSON.parse(row.inputPayload) as unknown, entries)
    monitor.check(
      "retention-outcome",
      expected.outcome === settlement.outcome &&
        (expected.outcome !== "completed" ||
          JSON.stringify(expected.output) === JSON.stringify(settlement.output)),
      () => `removed ${id} settled ${JSON.stringify(settlement)}, expected ${JSON.stringify(expected)}`,
    )
  }
}
