/**
 * The fence check of a history append on SQLite, reading only what the check needs. Every
 * append checks its fence, about half of the ledger's row reads: a whole row (28 columns, and its
 * decoding through the snapshot Schema) cost about three times this narrow read, measured in
 * workerd. The check itself is the ledger's (`verifyAppendFence`).
 * @internal
 */
import { Effect, Schema } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { AttemptId, OwnershipToken, SubmissionId, ThreadId } from "../../Identifiers.ts"
import type { RowsRunner } from "../directRows.ts"
import { SUBMISSIONS_TABLE } from "../schema.ts"
import { appendFenceInstants, fenceSubmissionId, nonFinite, verifyAppendFence } from "./fences.ts"
import type { FenceError, FenceRow } from "./fences.ts"
import { type AppendFence, LedgerError, SubmissionState } from "./model.ts"

/** The columns of a row the fence check and the append need. */
const statement = `SELECT thread_id, queue_sequence, state, producer_epoch, attempt_id, ownership_token,
    lease_expires_at, owner_incarnation FROM ${SUBMISSIONS_TABLE} WHERE submission_id = ?`

/** What an append learns from its fence check: where the Submission's records go. @internal */
export interface FencedRow extends FenceRow {
  readonly threadId: ThreadId
  readonly queueSequence: number
}

const isState = Schema.is(SubmissionState)
const isText = (value: unknown): value is string => typeof value === "string"
const isInt = (value: unknown): value is number => Number.isSafeInteger(value)
const isInstant = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value)

/** The row's fields, or the name of the first that does not hold what the ledger stores. */
const fencedRow = (row: Record<string, unknown>): FencedRow | string => {
  const { thread_id, queue_sequence, state, producer_epoch } = row
  if (!isText(thread_id)) return "thread_id"
  if (!isInt(queue_sequence)) return "queue_sequence"
  if (!isState(state)) return "state"
  if (!isInt(producer_epoch)) return "producer_epoch"
  const base = {
    threadId: thread_id as ThreadId,
    queueSequence: queue_sequence,
    state,
    producerEpoch: producer_epoch,
  }
  const { attempt_id, ownership_token, lease_expires_at, owner_incarnation } = row
  // As the whole row's decoding: any ownership column set means an owner, whose fields must all hold.
  if (attempt_id === null && ownership_token === null && lease_expires_at === null) return base
  if (!isText(attempt_id)) return "attempt_id"
  if (!isText(ownership_token)) return "ownership_token"
  if (!isInstant(lease_expires_at)) return "lease_expires_at"
  if (owner_incarnation !== null && !isText(owner_incarnation)) return "owner_incarnation"
  const ownership = {
    attemptId: attempt_id as AttemptId,
    ownershipToken: ownership_token as OwnershipToken,
    leaseExpiresAt: lease_expires_at,
    ...(owner_incarnation === null ? {} : { incarnation: owner_incarnation }),
  }
  return { ...base, ownership }
}

/**
 * Checks `fence` against the stored row inside the caller's transaction, as the ledger's
 * `checkFence` does, and answers where the Submission's records go. @internal
 */
export const checkAppendFence = (
  rows: RowsRunner,
  fence: AppendFence,
): Effect.Effect<FencedRow, FenceError | LedgerError> => {
  const operation = "SubmissionLedger.checkFence"
  const invalid = nonFinite(operation, appendFenceInstants(fence))
  if (invalid !== undefined) return Effect.fail(invalid)
  const submissionId: SubmissionId = fenceSubmissionId(fence)
  return rows(statement, [submissionId]).pipe(
    Effect.mapError(
      (cause: SqlError) => new LedgerError({ operation, message: `storage failed: ${cause.message}`, cause }),
    ),
    Effect.flatMap(([row]): Effect.Effect<FencedRow, FenceError | LedgerError> => {
      if (row === undefined) return Effect.fromResult(verifyAppendFence<FencedRow>(fence, undefined))
      const fenced = fencedRow(row)
      return typeof fenced === "string"
        ? Effect.fail(
            new LedgerError({
              operation,
              message: `stored submission ${submissionId} does not decode: ${fenced} holds ${String(row[fenced])}`,
            }),
          )
        : Effect.fromResult(verifyAppendFence(fence, fenced))
    }),
  )
}
