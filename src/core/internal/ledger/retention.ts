/**
 * What retention reads and removes in the ledger, shared by both ledgers: a settled Submission
 * named with the receipt it was admitted under (a key replayed after removal admits a new
 * Submission under the same derived id, with a new receipt, so a stale name removes nothing),
 * and a candidate with the lane tail `keepPerThread` is counted from.
 */
import type { ReceiptId, SubmissionId } from "../../Identifiers.ts"
import type { SubmissionSnapshot } from "./model.ts"

/** A settled Submission to remove. */
export interface RetentionItem {
  readonly submissionId: SubmissionId
  readonly receiptId: ReceiptId
}

/** A settled Submission old enough to expire, with its lane's tail (the last queue sequence). */
export interface RetentionCandidate {
  readonly snapshot: SubmissionSnapshot
  readonly laneTail: number
}

/** Whether `item` still names `row`: settled, under the same receipt. @internal */
export const namesSettled = (item: RetentionItem, row: SubmissionSnapshot | undefined): boolean =>
  row !== undefined && row.state === "settled" && row.receiptId === item.receiptId
