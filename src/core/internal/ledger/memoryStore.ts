/**
 * The store the in-memory ledger, history and outbox share, and the synchronous blocks over
 * it: each operation reads and writes the store inside one block, so no other fiber can
 * observe or interleave with a half-done write.
 */
import { Effect, Result } from "effect"
import type { SubmissionId, ThreadId } from "../../Identifiers.ts"
import { type HistoryEntry, HistoryRecord } from "../history/model.ts"
import type { OutboxMessage, ThreadMessageReply } from "../outbox/model.ts"
import { LedgerError, type SubmissionSnapshot } from "./model.ts"
import type { AppendFence } from "./model.ts"
import * as Rules from "./rules.ts"
import { dueOrder } from "./timedRules.ts"
import type { ScheduleInfo } from "../schedule/model.ts"
import type { EarlyRow } from "./early.ts"

/** @internal */
export interface Lane {
  lastSequence: number
  /** Submissions removed (forgotten or by retention). */
  removed: number
  /** Nonterminal Submissions in queue order. */
  readonly nonterminal: Array<SubmissionId>
}

/** The shared state of the in-memory ledger and history. @internal */
export interface MemoryStore {
  /** Salts derived Submission ids, as the SQLite ledger's stored salt does. */
  readonly salt: string
  readonly rows: Map<SubmissionId, SubmissionSnapshot>
  readonly lanes: Map<ThreadId, Lane>
  readonly history: Map<ThreadId, Array<HistoryRecord>>
  readonly historyBySubmission: Map<SubmissionId, Array<HistoryRecord>>
  /**
   * The event ids each Submission took, with their events' names, as the SQLite index of event
   * ids holds them: the first record of an id keeps it.
   */
  readonly eventIds: Map<SubmissionId, Map<string, string>>
  /** Every record of the Object in commit order; a record's feed position is its index + 1. */
  readonly historyFeed: Array<HistoryRecord>
  /** The outbox, in insertion order. */
  readonly outbox: Map<string, OutboxMessage>
  /** Answers the receiver remembers, by message id. */
  readonly answers: Map<string, ThreadMessageReply>
  /**
   * When retention counts each settled Submission's age from. A settlement enters it only while
   * retention is on (`dated`), as the SQLite ledger dates its row only then.
   */
  readonly pruneAfter: Map<SubmissionId, number>
  readonly dated: boolean
  /**
   * Records retention removed: they keep their place in the arrays above (sequences and feed
   * positions are array offsets, and continue past them) but no read returns them.
   */
  readonly removed: Set<HistoryRecord>
  /** The timed waits (`Rules.isTimed`) in due order, as the SQLite ledger's due index holds them. */
  readonly due: Array<DueEntry>
  /** Schedules by id. */
  readonly schedules: Map<string, ScheduleInfo>
  /** Events kept for Submissions not yet admitted, as the SQLite ledger's table holds them. */
  readonly early: Array<EarlyRow>
  /** How many incarnations have begun over the store (`SubmissionLedger.beginIncarnation`). */
  incarnations: number
}

/** An entry of the in-memory due index. @internal */
export interface DueEntry {
  readonly dueAt: number
  readonly submissionId: SubmissionId
}

/** Where `entry` is, or goes, in the due index. */
const duePosition = (due: ReadonlyArray<DueEntry>, entry: DueEntry): number => {
  let low = 0
  let high = due.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (dueOrder(due[middle] as DueEntry, entry) < 0) low = middle + 1
    else high = middle
  }
  return low
}

/** Keeps the due index in step with a row replaced by `next`. */
const reindexDue = (
  store: MemoryStore,
  previous: SubmissionSnapshot | undefined,
  next: SubmissionSnapshot,
) => {
  const entryOf = (row: SubmissionSnapshot | undefined): DueEntry | undefined =>
    row === undefined || !Rules.isTimed(row) || row.dueAt === undefined
      ? undefined
      : { dueAt: row.dueAt, submissionId: row.submissionId }
  const before = entryOf(previous)
  const after = entryOf(next)
  if (before?.dueAt === after?.dueAt && (before === undefined) === (after === undefined)) return
  if (before !== undefined) {
    const at = duePosition(store.due, before)
    if (store.due[at]?.submissionId === before.submissionId) store.due.splice(at, 1)
  }
  if (after !== undefined) store.due.splice(duePosition(store.due, after), 0, after)
}

/**
 * The order SQLite keeps stored text in (BINARY over UTF-8: code point order), for reads the
 * SQLite ledger answers from an index on a text column (Thread ids, schedule ids, message ids):
 * JavaScript's UTF-16 order puts astral characters before U+E000–U+FFFF instead. Identifiers
 * have no lone surrogate, so moving surrogates above every other code unit gives it. @internal
 */
export const storedTextOrder = (a: string, b: string): number => {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointRank(x) - codePointRank(y)
  }
  return a.length - b.length
}

const codePointRank = (unit: number): number =>
  unit < 0xd800 ? unit : unit < 0xe000 ? unit + 0x2000 : unit - 0x800

const stores = new WeakMap<object, MemoryStore>()

/** The store behind an in-memory ledger service, if it is one. @internal */
export const memoryStoreOf = (ledger: object): MemoryStore | undefined => stores.get(ledger)

/** Names `store` as the store behind `ledger`, for `memoryStoreOf`. @internal */
export const attachStore = (ledger: object, store: MemoryStore): void => void stores.set(ledger, store)

/** @internal */
export const laneOf = (store: MemoryStore, threadId: ThreadId): Lane => {
  let lane = store.lanes.get(threadId)
  if (lane === undefined) {
    lane = { lastSequence: 0, removed: 0, nonterminal: [] }
    store.lanes.set(threadId, lane)
  }
  return lane
}

/** @internal */
export const headOf = (store: MemoryStore, threadId: ThreadId): SubmissionSnapshot | undefined => {
  const id = store.lanes.get(threadId)?.nonterminal[0]
  return id === undefined ? undefined : store.rows.get(id)
}

/** Stores a row, keeping the lanes and the due index in step. @internal */
export const put = (store: MemoryStore, next: SubmissionSnapshot): void => {
  const before = store.rows.get(next.submissionId)
  reindexDue(store, before, next)
  store.rows.set(next.submissionId, next)
  if (store.dated && next.state === "settled" && before?.state !== "settled") {
    store.pruneAfter.set(next.submissionId, next.settlement?.settledAt ?? 0)
  }
  if (next.state === "settled") {
    const order = laneOf(store, next.threadId).nonterminal
    const index = order.indexOf(next.submissionId)
    if (index >= 0) order.splice(index, 1)
  }
}

/** Applies a rule's change and returns the resulting row. @internal */
export const apply = (store: MemoryStore, change: Rules.Change): SubmissionSnapshot => {
  if (change._tag === "Unchanged") return change.snapshot
  put(store, change.next)
  return change.next
}

/** Checks an append fence against the current row, synchronously. @internal */
export const checkFenceNow = (store: MemoryStore, fence: AppendFence) =>
  Rules.verifyAppendFence(fence, store.rows.get(Rules.fenceSubmissionId(fence)))

/** Appends records of one Submission of `thread`, synchronously; the caller checked the fence. @internal */
export const appendNow = (
  store: MemoryStore,
  threadId: ThreadId,
  submissionId: SubmissionId,
  entries: ReadonlyArray<HistoryEntry>,
  now: number,
): ReadonlyArray<HistoryRecord> => {
  const records = store.history.get(threadId) ?? []
  const own = store.historyBySubmission.get(submissionId) ?? []
  const appended = entries.map((entry) => {
    const record = new HistoryRecord({
      threadId,
      sequence: records.length + 1,
      submissionId,
      recordedAt: now,
      entry,
    })
    records.push(record)
    own.push(record)
    store.historyFeed.push(record)
    return record
  })
  store.history.set(threadId, records)
  store.historyBySubmission.set(submissionId, own)
  indexEventIdsNow(store, submissionId, entries)
  return appended
}

/**
 * Indexes the ids of the `EventReceived` records among `entries`, as the SQLite history's
 * `indexEventIds` does: every append of records runs it. @internal
 */
export const indexEventIdsNow = (
  store: MemoryStore,
  submissionId: SubmissionId,
  entries: ReadonlyArray<HistoryEntry>,
): void => {
  for (const entry of entries) {
    if (entry._tag !== "EventReceived") continue
    let ids = store.eventIds.get(submissionId)
    if (ids === undefined) {
      ids = new Map()
      store.eventIds.set(submissionId, ids)
    }
    if (!ids.has(entry.eventId)) ids.set(entry.eventId, entry.event)
  }
}

/** An empty store whose derived ids use `salt`. @internal */
export const makeMemoryStore = (salt: string, dated: boolean): MemoryStore => ({
  salt,
  dated,
  rows: new Map(),
  lanes: new Map(),
  history: new Map(),
  historyBySubmission: new Map(),
  eventIds: new Map(),
  historyFeed: [],
  outbox: new Map(),
  answers: new Map(),
  pruneAfter: new Map(),
  removed: new Set(),
  due: [],
  schedules: new Map(),
  early: [],
  incarnations: 0,
})

/** The records of `records` retention has not removed. @internal */
export const kept = (
  store: MemoryStore,
  records: ReadonlyArray<HistoryRecord>,
): ReadonlyArray<HistoryRecord> =>
  store.removed.size === 0 ? records : records.filter((record) => !store.removed.has(record))

/**
 * Runs a read-decide-write step as one synchronous block. Building a row validates it; a
 * value that does not validate fails the operation instead of escaping as a defect.
 * @internal
 */
export const atomically = <A, E>(
  operation: string,
  body: () => Result.Result<A, E>,
): Effect.Effect<A, E | LedgerError> =>
  Effect.suspend((): Effect.Effect<A, E | LedgerError> => {
    try {
      return Effect.fromResult(body())
    } catch (cause) {
      return Effect.fail(
        new LedgerError({ operation, message: `the write does not validate: ${String(cause)}`, cause }),
      )
    }
  })
