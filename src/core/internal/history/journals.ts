/**
 * The stored rows of live Submissions' journals kept in memory between reads, so a read continues
 * from the Thread's end at the last read instead of scanning the Thread again from the
 * Submission's acceptance. That scan reads every row of the Thread in between (the acceptances of
 * the Submissions queued behind it, the records of those that ran before it), and the runtime
 * reads a journal at every input it records and every resumption.
 *
 * A row once written never changes, and a Thread's sequences only grow, so the rows up to the
 * Thread's end at the last read are still the Submission's rows up to it, unless a rollback undid
 * rows read inside its transaction: an entry counts only while the storage clock has counted no
 * rollback since it was read. Retention removes a Submission's rows only after it settled, and a
 * settled Submission is not kept. The rows are kept as stored, not decoded: every read decodes
 * its own records, so no two reads share an object a program could change.
 *
 * One memory serves the isolate (its Objects share it), bounded in journals and in the characters
 * of the rows kept; the least recently read is forgotten first.
 * @internal
 */
import type { SubmissionId } from "../../Identifiers.ts"
import type { StorageClock } from "../directRows.ts"
import type { StoredRow } from "./sqlRows.ts"

/** What is known of one Submission's journal. @internal */
export interface KnownJournal {
  /** The Thread sequence its records start from (its acceptance), as read with them. */
  readonly from: number
  /** The Thread's last sequence at the last read: later rows are read next time. */
  readonly through: number
  /** The Submission's rows read so far, oldest first. */
  readonly rows: ReadonlyArray<StoredRow>
  /** The characters of their records: what keeping them holds. */
  readonly characters: number
}

const JOURNALS_KEPT = 256
const CHARACTERS_KEPT = 8_000_000

interface Entry {
  /** The clock's rollbacks when the rows were read. */
  readonly rollbacks: number
  readonly journal: KnownJournal
}

const memory = new Map<string, Entry>()
let characters = 0

/** Each storage's clock numbered, to tell the Objects' journals apart in the one memory. */
const clockNumbers = new WeakMap<StorageClock, number>()
let clocksNumbered = 0

const keyOf = (clock: StorageClock, submissionId: SubmissionId) => {
  let number = clockNumbers.get(clock)
  if (number === undefined) {
    number = ++clocksNumbered
    clockNumbers.set(clock, number)
  }
  return `${number}:${submissionId}`
}

const forgetKey = (key: string) => {
  const entry = memory.get(key)
  if (entry === undefined) return
  memory.delete(key)
  characters -= entry.journal.characters
}

/** What is known of a Submission's journal, if anything. @internal */
export const knownJournal = (clock: StorageClock, submissionId: SubmissionId): KnownJournal | undefined => {
  const key = keyOf(clock, submissionId)
  const entry = memory.get(key)
  if (entry === undefined) return undefined
  if (entry.rollbacks === clock.rollbacks) return entry.journal
  forgetKey(key)
  return undefined
}

/**
 * Keeps a journal read by a statement that began when the clock counted `rollbacks`: not if a
 * rollback happened since, which may have undone rows the statement saw. @internal
 */
export const keepJournal = (
  clock: StorageClock,
  rollbacks: number,
  submissionId: SubmissionId,
  journal: KnownJournal,
) => {
  const key = keyOf(clock, submissionId)
  forgetKey(key)
  if (clock.rollbacks !== rollbacks || journal.characters > CHARACTERS_KEPT / 16) return
  // Re-inserted, so the Map's order is the order of reads and the first key the oldest.
  memory.set(key, { rollbacks, journal })
  characters += journal.characters
  while (memory.size > JOURNALS_KEPT || characters > CHARACTERS_KEPT) {
    const oldest = memory.keys().next()
    if (oldest.done === true) break
    forgetKey(oldest.value)
  }
}

/** Forgets a Submission's journal: the next read scans it whole. @internal */
export const forgetJournal = (clock: StorageClock, submissionId: SubmissionId) =>
  forgetKey(keyOf(clock, submissionId))
