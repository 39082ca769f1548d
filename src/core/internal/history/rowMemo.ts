/**
 * Decoded history rows kept per storage, so that a row read again (an Attempt's journal on each
 * resume, the feed a hook reads at every event, the row an append has just written) is not parsed
 * and decoded again: decoding was the most frequent piece of work of a busy Object (about forty
 * rows per settled refund in the refund desk's drain).
 *
 * A memo of a pure function, not a cache of storage: an entry is used only when the stored row
 * carries the very columns it was decoded from (its entries text, Thread, sequence, Submission
 * and time), so a row written by any writer, rolled back, or removed and written again is decoded
 * afresh. Rows are immutable once written, so in practice every read after the first hits.
 * @internal
 */
import type { StorageClock } from "../directRows.ts"
import type { HistoryRecord } from "./model.ts"

/** The columns a row's records are decoded from, and the records. */
export interface DecodedRow {
  readonly entries: string
  readonly threadId: unknown
  readonly sequence: unknown
  readonly submissionId: unknown
  readonly recordedAt: unknown
  readonly records: ReadonlyArray<HistoryRecord>
}

/** Rows kept per storage; the oldest remembered is forgotten first. */
const ROWS_KEPT = 1_024

/** A storage's decoded rows by feed position. @internal */
export type RowMemo = Map<number, DecodedRow>

const memos = new WeakMap<StorageClock, RowMemo>()

/** The memo of the storage `clock` counts for; none without a clock. @internal */
export const rowMemoOf = (clock: StorageClock | undefined): RowMemo | undefined => {
  if (clock === undefined) return undefined
  let memo = memos.get(clock)
  if (memo === undefined) {
    memo = new Map()
    memos.set(clock, memo)
  }
  return memo
}

/** A deep copy of plain data (arrays, plain objects, primitives); `undefined` for anything else. */
const copyPlain = (value: unknown): unknown => {
  if (typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) {
    const out: Array<unknown> = []
    for (const item of value) {
      const copied = copyPlain(item)
      if (copied === undefined && item !== undefined) return undefined
      out.push(copied)
    }
    return out
  }
  const prototype = Object.getPrototypeOf(value)
  if (prototype !== Object.prototype && prototype !== null) return undefined
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const item = (value as Record<string, unknown>)[key]
    const copied = copyPlain(item)
    if (copied === undefined && item !== undefined) return undefined
    out[key] = copied
  }
  return out
}

/** Copies of records whose entries are plain data, or `undefined` when one is not. */
const copyRecords = (records: ReadonlyArray<HistoryRecord>): ReadonlyArray<HistoryRecord> | undefined => {
  const out: Array<HistoryRecord> = []
  for (const record of records) {
    const entry = copyPlain(record.entry)
    if (entry === undefined) return undefined
    // The record's own fields are primitives; its entry is the copy.
    out.push(
      Object.assign(Object.create(Object.getPrototypeOf(record) as object) as HistoryRecord, record, {
        entry,
      }),
    )
  }
  return out
}

/** Copies of the records decoded before from exactly these columns at `position`, if remembered. @internal */
export const recallRow = (
  memo: RowMemo | undefined,
  position: number,
  row: Omit<DecodedRow, "records">,
): ReadonlyArray<HistoryRecord> | undefined => {
  const known = memo?.get(position)
  return known !== undefined &&
    known.entries === row.entries &&
    known.threadId === row.threadId &&
    known.sequence === row.sequence &&
    known.submissionId === row.submissionId &&
    known.recordedAt === row.recordedAt
    ? copyRecords(known.records)
    : undefined
}

/** Remembers copies of the records decoded from a row's columns at `position`. @internal */
export const rememberRow = (memo: RowMemo | undefined, position: number, row: DecodedRow): void => {
  if (memo === undefined) return
  const records = copyRecords(row.records)
  memo.delete(position)
  if (records === undefined) return
  memo.set(position, { ...row, records })
  if (memo.size > ROWS_KEPT) {
    const oldest = memo.keys().next()
    if (oldest.done !== true) memo.delete(oldest.value)
  }
}
