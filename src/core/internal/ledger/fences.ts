/**
 * The fence checks of the ledger and the history, shared by both ledgers: whether a write's
 * fence (an owner's Claim, a recovery fence, a sender's input fence) still speaks for the
 * stored row, and the finite instants a fence must carry before it reaches storage.
 */
import { Result } from "effect"
import type { SubmissionId } from "../../Identifiers.ts"
import { FenceRejected, LedgerError, OwnershipLost, SubmissionNotFound } from "./model.ts"
import type { AppendFence, Fence, SubmissionSnapshot } from "./model.ts"

/** @internal */
export type FenceError = FenceRejected | OwnershipLost | SubmissionNotFound

/** The Submission a fence speaks for. @internal */
export const fenceSubmissionId = (fence: AppendFence): SubmissionId =>
  fence._tag === "Owner" ? fence.claim.submissionId : fence.submissionId

/** The epoch a fence expects. @internal */
export const fenceEpoch = (fence: AppendFence): number =>
  fence._tag === "Owner" ? fence.claim.producerEpoch : fence.producerEpoch

/** @internal */
export const notFound = (submissionId: SubmissionId): SubmissionNotFound =>
  new SubmissionNotFound({ submissionId, message: `no submission ${submissionId} in this ledger` })

/**
 * The id of the incarnation `sequence` (1, 2, ...): fixed-width digits, so ids of later
 * incarnations sort after earlier ones as strings, in JavaScript and in SQLite alike.
 * @internal
 */
export const incarnationId = (sequence: number): string => String(sequence).padStart(16, "0")

/**
 * Whether a row has an owner whose lease is still live at `now`, as `incarnation` sees it: a
 * Claim of an earlier incarnation (a smaller id) is expired, since that incarnation was
 * replaced, and its writes are fenced by the epoch once the Claim is taken over. A Claim of a
 * later incarnation stays live: the one asking is then the replaced one, still running (a
 * zombie), and must not fence out the incarnation that replaced it. Without `incarnation`, or
 * for a Claim that names none, only the lease counts.
 * @internal
 */
export const hasLiveLease = (
  row: Pick<SubmissionSnapshot, "ownership">,
  now: number,
  incarnation?: string,
): boolean =>
  row.ownership !== undefined &&
  row.ownership.leaseExpiresAt > now &&
  (incarnation === undefined ||
    row.ownership.incarnation === undefined ||
    row.ownership.incarnation >= incarnation)

/** A recovery fence: the row's epoch, and no live lease at `now` (for `incarnation`). @internal */
export const unownedFence = (
  row: Pick<SubmissionSnapshot, "submissionId" | "producerEpoch">,
  now: number,
  incarnation?: string,
): Fence => ({
  _tag: "Unowned",
  submissionId: row.submissionId,
  producerEpoch: row.producerEpoch,
  now,
  ...(incarnation === undefined ? {} : { incarnation }),
})

/**
 * Checks a fence against the stored row: the epoch must match; an owner must still hold the
 * running row by its token (an expired but untaken lease still passes); a recovery fence needs
 * no live lease at its `now`.
 * @internal
 */
export const verifyFence = (
  fence: Fence,
  row: SubmissionSnapshot | undefined,
): Result.Result<SubmissionSnapshot, FenceError> => {
  const submissionId = fenceSubmissionId(fence)
  if (row === undefined) return Result.fail(notFound(submissionId))
  const expectedEpoch = fenceEpoch(fence)
  if (row.producerEpoch !== expectedEpoch) {
    return Result.fail(
      new FenceRejected({
        submissionId,
        expectedEpoch,
        actualEpoch: row.producerEpoch,
        message: `producer epoch ${expectedEpoch} is stale; the submission is at epoch ${row.producerEpoch}`,
      }),
    )
  }
  if (fence._tag === "Owner") {
    if (row.state !== "running" || row.ownership?.ownershipToken !== fence.claim.ownershipToken) {
      return Result.fail(
        new OwnershipLost({
          submissionId,
          attemptId: fence.claim.attemptId,
          message: `attempt ${fence.claim.attemptId} no longer owns the submission (state ${row.state})`,
        }),
      )
    }
    return Result.succeed(row)
  }
  if (hasLiveLease(row, fence.now, fence.incarnation)) {
    return Result.fail(
      new FenceRejected({
        submissionId,
        expectedEpoch,
        actualEpoch: row.producerEpoch,
        message: `a live owner holds the submission until ${row.ownership?.leaseExpiresAt}`,
      }),
    )
  }
  return Result.succeed(row)
}

/**
 * Checks the fence of a history append: a `Fence` as `verifyFence` does; an input fence needs
 * the row still at the epoch and in the state its sender read, and neither settling nor settled.
 * @internal
 */
export const verifyAppendFence = (
  fence: AppendFence,
  row: SubmissionSnapshot | undefined,
): Result.Result<SubmissionSnapshot, FenceError> => {
  if (fence._tag !== "Input") return verifyFence(fence, row)
  if (row === undefined) return Result.fail(notFound(fence.submissionId))
  const moved = row.producerEpoch !== fence.producerEpoch || row.state !== fence.state
  if (moved || row.state === "terminalizing" || row.state === "settled") {
    return Result.fail(
      new FenceRejected({
        submissionId: fence.submissionId,
        expectedEpoch: fence.producerEpoch,
        actualEpoch: row.producerEpoch,
        message: moved
          ? `submission ${fence.submissionId} is ${row.state} at epoch ${row.producerEpoch}, not ${fence.state} at ${fence.producerEpoch}`
          : `submission ${fence.submissionId} is ${row.state} and takes no more input`,
      }),
    )
  }
  return Result.succeed(row)
}

/** The instants an append fence carries, for `nonFinite`. @internal */
export const appendFenceInstants = (fence: AppendFence): Readonly<Record<string, number>> =>
  fence._tag === "Unowned" ? { now: fence.now } : {}

/**
 * Refuses instants and durations that are not finite numbers before they reach storage
 * (SQLite would store `NaN` as `NULL`).
 * @internal
 */
export const nonFinite = (
  operation: string,
  values: Readonly<Record<string, number>>,
): LedgerError | undefined => {
  for (const [name, value] of Object.entries(values)) {
    if (!Number.isFinite(value)) {
      return new LedgerError({ operation, message: `${name} must be a finite number, got ${value}` })
    }
  }
  return undefined
}

/** The instants a fence carries, for `nonFinite`. @internal */
export const fenceInstants = (fence: Fence): Readonly<Record<string, number>> =>
  fence._tag === "Unowned" ? { now: fence.now } : {}
