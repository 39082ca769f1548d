/**
 * The records of live Submissions kept in memory between reads of their journals, so a read
 * continues from the last row it saw instead of scanning the Thread again from the Submission's
 * acceptance. That scan reads every row of the Thread in between (the acceptances of the
 * Submissions queued behind it, the records of those that ran before it), and the runtime reads a
 * journal at every claim and every input it records: about half the rows a drain reads.
 *
 * A row once written never changes, and a Thread's sequences only grow, so the records up to the
 * last row read are still the records up to it, unless a rollback undid rows read inside its
 * transaction: the memory is dropped whenever the storage clock counts a rollback, and a read
 * keeps what it found only if no rollback happened since it began. Retention removes a
 * Submission's rows only after it settled, and a settled Submission is not kept.
 * @internal
 */
import type { SubmissionId } from "../../Identifiers.ts"
import type { StorageClock } from "../directRows.ts"
import type { HistoryRecord } from "./model.ts"

/** What is known of one Submission's journal. @internal */
export interface KnownJournal {
  /** The Thread sequence its records start from (its acceptance), as read with them. */
  readonly from: number
  /** The sequence of the last row read: later rows are read next time. */
  readonly through: number
  readonly records: ReadonlyArray<HistoryRecord>
  /** The characters of the stored rows its records came from: what keeping them holds. */
  readonly characters: number
}

/** Journals remembered at most, and their characters; the least recently read is forgotten first. */
const JOURNALS_KEPT = 128
const CHARACTERS_KEPT = 4_000_000

interface Journals {
  /** The clock's rollbacks when the memory was filled. */
  readonly rollbacks: number
  readonly byId: Map<SubmissionId, KnownJournal>
  characters: number
}

const memory = new WeakMap<StorageClock, Journals>()

const journalsOf = (clock: StorageClock): Journals => {
  let journals = memory.get(clock)
  if (journals === undefined || journals.rollbacks !== clock.rollbacks) {
    journals = { rollbacks: clock.rollbacks, byId: new Map(), characters: 0 }
    memory.set(clock, journals)
  }
  return journals
}

/** What is known of a Submission's journal, if anything. @internal */
export const knownJournal = (clock: StorageClock, submissionId: SubmissionId): KnownJournal | undefined =>
  journalsOf(clock).byId.get(submissionId)

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
  if (clock.rollbacks !== rollbacks) return
  const journals = journalsOf(clock)
  forget(journals, submissionId)
  if (journal.characters > CHARACTERS_KEPT / 16) return
  // Re-inserted, so the Map's order is the order of reads and the first key the oldest.
  journals.byId.set(submissionId, journal)
  journals.characters += journal.characters
  while (journals.byId.size > JOURNALS_KEPT || journals.characters > CHARACTERS_KEPT) {
    const oldest = journals.byId.keys().next()
    if (oldest.done === true) break
    forget(journals, oldest.value)
  }
}

const forget = (journals: Journals, submissionId: SubmissionId) => {
  const known = journals.byId.get(submissionId)
  if (known === undefined) return
  journals.byId.delete(submissionId)
  journals.characters -= known.characters
}

/** Forgets a Submission's journal: the next read scans it whole. @internal */
export const forgetJournal = (clock: StorageClock, submissionId: SubmissionId) =>
  forget(journalsOf(clock), submissionId)
