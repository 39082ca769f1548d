/**
 * Why one Submission is where it is, in the words of the console's filters (`WaitingKind`),
 * from its `explain` answer and its records: what the page's actions are offered by.
 */
import { readJournal } from "../../core/internal/runtime/shared/journal.ts"
import type { HistoryRecord } from "../../core/ThreadHistory.ts"
import type { WaitingKind } from "../object/pageViews.ts"
import type { SubmissionExplanation } from "../operator/reports.ts"

/** @internal */
export const kindOfExplained = (
  explanation: SubmissionExplanation,
  records: ReadonlyArray<HistoryRecord>,
): WaitingKind => {
  switch (explanation.reason._tag) {
    case "Settled":
      return "settled"
    case "WaitingForApproval":
      return "approval"
    case "WaitingForEvent":
      return "event"
    case "WaitingForChild":
      return "child"
    case "Sleeping":
      return "sleep"
    case "RetryBackoff":
      return "retry"
    case "Delayed":
      return "delayed"
    case "UnknownOutcome":
      return "unknown-outcome"
    case "HeldByAttempt":
      return "running"
    case "JoinedTo":
      return "joined"
    case "QueuedBehind":
      return "queued"
  }
  switch (explanation.state) {
    case "settled":
      return "settled"
    case "terminalizing":
      return "settling"
    case "joining":
    case "joined":
      return "joined"
    case "unknown":
      return "unknown-outcome"
    case "waiting":
      return "suspended"
    case "suspended":
      return readJournal(records.map((record) => record.entry)).openChildWait === undefined
        ? "suspended"
        : "child"
    case "admitted":
    case "ready":
    case "running":
      return "runnable"
    default:
      return "other"
  }
}
