/**
 * The errors every call of a `ThreadObject` may answer with, whatever it does: its request is
 * refused (`InvalidRequest`), its caller is (`Unauthorized`), or it failed inside the Object
 * (`ThreadObjectFailure`). The last stands for the internal errors (fencing, ownership,
 * journal, stores, alarm) that no caller can act on by name: one error with a `reason` to
 * branch on. The internal error and its cause stay in the Object's log: they may quote stored
 * values.
 */
import { Schema } from "effect"

/** A request the Object refused before doing anything: malformed, oversized or misaddressed. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  entryPoint: Schema.String,
  message: Schema.String,
}) {}

/** The application's authorization check refused the caller; nothing was written. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  entryPoint: Schema.String,
  message: Schema.String,
}) {}

/**
 * Why a call failed inside the Object.
 * - `conflict`: a concurrent owner or transition won (a fence, ownership, a settlement); the
 *   call may be retried.
 * - `storage`: the ledger, the history, the outbox or a projection failed to read or write.
 * - `journal`: the agent's journal does not match its program (a changed program replayed).
 * - `binding`: no compatible agent code is deployed for the Submission.
 * - `alarm`: the maintenance record or its alarm could not be read or written. A mutation that
 *   fails so did not run: it could not arm the alarm that guarantees its work is served.
 * - `hook`: a hook the application provides (`ThreadPublication`, `ThreadHostMaintenance`)
 *   failed while the call ran it (`obligations` does not fail so: it names a hook whose deadline
 *   it could not read in `unreadDeadlines` and answers the rest).
 * - `internal`: anything else, e.g. a failure a test failpoint injected.
 */
export const ThreadObjectFailureReason = Schema.Literals([
  "conflict",
  "storage",
  "journal",
  "binding",
  "alarm",
  "hook",
  "internal",
])
export type ThreadObjectFailureReason = typeof ThreadObjectFailureReason.Type

/** The call failed inside the Object; `reason` says what kind of failure it was. */
export class ThreadObjectFailure extends Schema.TaggedError<ThreadObjectFailure>()("ThreadObjectFailure", {
  entryPoint: Schema.String,
  reason: ThreadObjectFailureReason,
  message: Schema.String,
}) {}
