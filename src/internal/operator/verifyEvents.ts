/**
 * The `event-once` invariant of `verify`, from one Submission's records: each event id is
 * recorded once, and taken at most once, by a wait for its own name, after it arrived.
 */
import type { Schema } from "effect"
import type { HistoryRecord } from "../../core/ThreadHistory.ts"

/** What breaks `event-once` in one Submission's records, oldest first. @internal */
export const eventViolations = (
  records: ReadonlyArray<HistoryRecord>,
): ReadonlyArray<{ readonly message: string; readonly evidence: Schema.Json }> => {
  const found: Array<{ readonly message: string; readonly evidence: Schema.Json }> = []
  const received = new Map<string, string>()
  const taken = new Set<string>()
  for (const { entry, submissionId, sequence } of records) {
    if (entry._tag === "EventReceived") {
      if (received.has(entry.eventId))
        found.push({
          message: `event ${entry.eventId} of ${submissionId} is recorded twice`,
          evidence: { sequence },
        })
      received.set(entry.eventId, entry.event)
    } else if (entry._tag === "EventConsumed") {
      const name = received.get(entry.eventId)
      if (name !== entry.event || taken.has(entry.eventId))
        found.push({
          message:
            name === undefined
              ? `${submissionId} took event ${entry.eventId} before it was recorded`
              : taken.has(entry.eventId)
                ? `${submissionId} took event ${entry.eventId} twice`
                : `${submissionId} took event ${entry.eventId} "${name}" in a wait for "${entry.event}"`,
          evidence: { sequence, step: entry.step },
        })
      taken.add(entry.eventId)
    }
  }
  return found
}
