/**
 * Recording what arrives from outside a Submission while it may be running (a child's
 * settlement, an event): read the row and what the decision needs of the Submission's records
 * (its journal for a child's settlement, one seek of its event ids for an event), decide, and
 * write under a fence pinned to what was read. A Submission parked on the input is resumed in the transaction that records
 * it; otherwise the record is an input append whose fence holds only while the row keeps the
 * state and epoch read, so a row that parks (or moves on) meanwhile fails it and the decision
 * is taken again on the current row. A Submission that parks checks, in the park's own
 * transaction, for an input recorded since its journal was read: no parked Submission waits on
 * a recorded input.
 */
import { Clock, Effect, Option } from "effect"
import type { SubmissionId } from "../../../Identifiers.ts"
import type { HistoryEntry } from "../../history/model.ts"
import {
  type FenceFailure,
  type InvalidTransition,
  LedgerError,
  type SubmissionSnapshot,
} from "../../ledger/model.ts"
import type { Journal } from "./journal.ts"
import type { DurableWorkerFailure, ThreadStoreError } from "./model.ts"
import { loadJournal, type RuntimeEnv, vanished } from "./runtimeEnv.ts"

/** Tries before a row that keeps changing under the write fails the call (it may be retried). */
const RACE_RETRIES = 3

/** What a sender decided on the row and records it read: nothing to write, or a fenced write. @internal */
export type InputDecision<A> =
  | { readonly _tag: "Done"; readonly value: A }
  | {
      readonly _tag: "Write"
      readonly write: Effect.Effect<unknown, FenceFailure | InvalidTransition | DurableWorkerFailure>
      readonly value: A
    }

/**
 * Decides on the current row and what `read` reads of the Submission's records after it, and
 * writes, again while the row moves between the read and the write. `missing` answers for a
 * Submission that does not exist. Callers hold the runtime's lock.
 * @internal
 */
export const recordInput = <R, A, E>(
  env: RuntimeEnv,
  operation: string,
  submissionId: SubmissionId,
  missing: Effect.Effect<A, E>,
  read: (row: SubmissionSnapshot) => Effect.Effect<R, E | DurableWorkerFailure>,
  decide: (
    row: SubmissionSnapshot,
    read: R,
    now: number,
  ) => Effect.Effect<InputDecision<A>, E | DurableWorkerFailure>,
): Effect.Effect<A, E | DurableWorkerFailure> =>
  Effect.gen(function* () {
    for (let attempt = 0; ; attempt++) {
      const found = yield* env.ledger.lookup(submissionId)
      if (Option.isNone(found)) return yield* missing
      const row = found.value
      const records = yield* read(row)
      const decision = yield* decide(row, records, yield* Clock.currentTimeMillis)
      if (decision._tag === "Done") return decision.value
      const applied = yield* decision.write.pipe(Effect.as(true), Effect.catch(movedOrFailed(operation)))
      if (applied) return decision.value
      if (attempt >= RACE_RETRIES) {
        return yield* new LedgerError({
          operation,
          message: `submission ${submissionId} kept changing while an input was recorded`,
        })
      }
    }
  })

/** Reads the Submission's whole journal: what a child's settlement decides on. @internal */
export const journalOf =
  (env: RuntimeEnv) =>
  (row: SubmissionSnapshot): Effect.Effect<Journal, ThreadStoreError> =>
    loadJournal(env, row.submissionId)

/** Appends an input record under a fence pinned to the row as read. @internal */
export const appendInput = (env: RuntimeEnv, row: SubmissionSnapshot, entry: HistoryEntry, now: number) =>
  env.history.append(
    row.submissionId,
    entry,
    { _tag: "Input", submissionId: row.submissionId, producerEpoch: row.producerEpoch, state: row.state },
    now,
  )

/**
 * `false` when the row moved between the read and the write (decide again on the current row);
 * any other failure is the caller's.
 */
const movedOrFailed =
  (operation: string) =>
  (
    error: FenceFailure | InvalidTransition | DurableWorkerFailure,
  ): Effect.Effect<boolean, DurableWorkerFailure> => {
    switch (error._tag) {
      case "FenceRejected":
      case "OwnershipLost":
      case "InvalidTransition":
        return Effect.succeed(false)
      case "SubmissionNotFound":
        return Effect.fail(vanished(operation)(error))
      default:
        return Effect.fail(error)
    }
  }
