/**
 * The index of the event ids each Submission took (`EVENT_IDS_TABLE`): every writer of history
 * rows writes it with the `EventReceived` records of the row, in the row's transaction
 * (`indexEventIds`), so a sender checks an id in one seek (`eventIdStatements.lookup`) instead
 * of reading the journal. The first record of an id keeps it, as the journal reads them: a later
 * one of the same id writes no row. Retention removes a Submission's rows with its records.
 */
import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { SubmissionId } from "../../Identifiers.ts"
import { EVENT_IDS_TABLE } from "../schema.ts"
import type { HistoryEntry } from "./model.ts"

/** @internal */
export const eventIdStatements = {
  // Parameters: submission id, event id, event.
  insert: `INSERT OR IGNORE INTO ${EVENT_IDS_TABLE} (submission_id, event_id, event) VALUES (?, ?, ?)`,
  // Parameters: submission id, event id.
  lookup: `SELECT event FROM ${EVENT_IDS_TABLE} WHERE submission_id = ? AND event_id = ?`,
  // Parameters: submission id.
  forget: `DELETE FROM ${EVENT_IDS_TABLE} WHERE submission_id = ?`,
} as const

type Query = (
  text: string,
  params: ReadonlyArray<unknown>,
) => Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError>

/** The events recorded by `entries`, in order. @internal */
export const receivedEvents = (entries: ReadonlyArray<HistoryEntry>) =>
  entries.flatMap((entry) => (entry._tag === "EventReceived" ? [entry] : []))

/**
 * Indexes the ids of the `EventReceived` records among `entries` of one Submission: one row
 * written each, nothing for entries without events. Run in the transaction that appends them.
 * @internal
 */
export const indexEventIds = (
  query: Query,
  submissionId: SubmissionId,
  entries: ReadonlyArray<HistoryEntry>,
): Effect.Effect<void, SqlError> => {
  const events = receivedEvents(entries)
  return events.length === 0
    ? Effect.void
    : Effect.forEach(
        events,
        (event) => query(eventIdStatements.insert, [submissionId, event.eventId, event.event]),
        { discard: true },
      )
}
