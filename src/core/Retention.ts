/**
 * Retention of settled Submissions: the archive hook that receives each Submission before
 * retention removes it, what it receives, and the refusal of `forget`.
 *
 * An archive is at-least-once: a batch is handed over again after a crash or a failed removal,
 * so the archive keys what it stores by Submission id and receipt id (a key used again after its
 * Submission was removed admits a new Submission under the same id, with a new receipt). Nothing
 * is removed until `archive` succeeded for a batch holding it; a failure is retried at later
 * alarms with backoff (stored, so a new incarnation waits for it too) and never holds up the
 * Object's other work. The retry splits a refused batch in halves, so one Submission the archive
 * refuses does not hold up the others: once it is refused alone (while the archive accepts
 * others, or after three failed tries in a row) it is kept, logged as an error, and offered
 * again one retention later.
 */
import { Context, Schema } from "effect"
import type { Effect } from "effect"
import { SubmissionId } from "./Identifiers.ts"
import { HistoryRecord } from "./internal/history/model.ts"
import { SubmissionSnapshot } from "./internal/ledger/model.ts"
import { OutboxMessage } from "./internal/outbox/model.ts"

/** One settled Submission as retention removes it: its row, its records, the messages it sent. */
export class ArchivedSubmission extends Schema.Class<ArchivedSubmission>(
  "@effect-agent/platform-cloudflare/Retention/ArchivedSubmission",
)({
  submission: SubmissionSnapshot,
  /** Its canonical records, oldest first. */
  records: Schema.Array(HistoryRecord),
  /** The messages it sent (children's admissions and aborts, its settlement for its parent). */
  messages: Schema.Array(OutboxMessage),
}) {}

/** The archive failed; nothing of the batch it was handed was removed. */
export class ThreadArchiveError extends Schema.TaggedError<ThreadArchiveError>()("ThreadArchiveError", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect()),
}) {}

/** Where settled Submissions go before retention removes them. */
export interface ThreadArchiveService {
  /** Stores a batch durably; idempotent by Submission id and receipt id. */
  readonly archive: (batch: ReadonlyArray<ArchivedSubmission>) => Effect.Effect<void, ThreadArchiveError>
}

/**
 * The archive of an Object's settled Submissions; none by default (retention removes them
 * without archiving). Provide one to `ThreadObject.layer` like any service.
 */
export class ThreadArchive extends Context.Service<ThreadArchive, ThreadArchiveService>()(
  "@effect-agent/platform-cloudflare/ThreadArchive",
) {}

/**
 * `forget` refused: the Submission is not settled yet (`not-settled`), or it is still needed
 * (`still-needed`: a message it sent is not acknowledged, a join it hosts has not settled, a
 * child it started in this Object has not, or the archive is storing it now). Nothing was
 * removed.
 */
export class ForgetRefused extends Schema.TaggedError<ForgetRefused>()("ForgetRefused", {
  submissionId: SubmissionId,
  reason: Schema.Literals(["not-settled", "still-needed"]),
  message: Schema.String,
}) {}
