/**
 * The history's ends kept in memory between appends: the Object's next feed position with its
 * counts, and each recently written Thread's next sequence with its lane tail. An append that
 * knows both ends writes its row with one plain insert instead of reading them (seven rows read
 * fewer, three times per settled Submission).
 *
 * Every writer continues the true ends, so a writer this memory did not see (another client over
 * the same storage, a hand-written row) took the very position or sequence the memory names
 * next, and the insert fails on the key: the append then forgets the ends and reads them. The
 * feed's end and the counts are also answered from here (`knownObjectEnd`); a read has no key to
 * fail on, so until the next append through the client it relies on the memo's condition: the
 * history's rows are written through the Object's SQL client (one clock per storage). What
 * only a rollback can do, move an end backwards, is seen on the storage clock, and the memory is
 * dropped. Retention never moves an end (it leaves a floor or a tail where it removes the last
 * row), yet it drops the memory too, so nothing relies on that.
 * @internal
 */
import type { ThreadId } from "../../Identifiers.ts"
import type { StorageClock } from "../directRows.ts"

/** The Object's end: the next feed position and the counts so far. @internal */
export interface ObjectEnd {
  readonly nextPosition: number
  readonly admitted: number
  readonly settled: number
}

/** A Thread's end: its next sequence and its lane tail. @internal */
export interface ThreadEnd {
  readonly nextSequence: number
  readonly laneTail: number
}

/** Threads remembered at most; the oldest written is forgotten first. */
const THREADS_KEPT = 256

interface Ends {
  /** The clock's rollbacks when the memory was filled. */
  rollbacks: number
  object: ObjectEnd | undefined
  readonly threads: Map<ThreadId, ThreadEnd>
}

const memory = new WeakMap<StorageClock, Ends>()

const endsOf = (clock: StorageClock): Ends => {
  let ends = memory.get(clock)
  if (ends === undefined || ends.rollbacks !== clock.rollbacks) {
    ends = { rollbacks: clock.rollbacks, object: undefined, threads: new Map() }
    memory.set(clock, ends)
  }
  return ends
}

/** Both ends an append continues, when the memory holds them. @internal */
export const knownEnds = (
  clock: StorageClock,
  threadId: ThreadId,
): { readonly object: ObjectEnd; readonly thread: ThreadEnd } | undefined => {
  const ends = endsOf(clock)
  const thread = ends.threads.get(threadId)
  return ends.object === undefined || thread === undefined ? undefined : { object: ends.object, thread }
}

/**
 * The Object's end, when the memory holds it: the feed's end and the counts so far, answered
 * without a read while every append since went through a client of this storage. @internal
 */
export const knownObjectEnd = (clock: StorageClock): ObjectEnd | undefined => endsOf(clock).object

/** Remembers the ends a committed-so-far append left. @internal */
export const rememberEnds = (
  clock: StorageClock,
  threadId: ThreadId,
  object: ObjectEnd,
  thread: ThreadEnd,
) => {
  const ends = endsOf(clock)
  ends.object = object
  // Re-inserted, so the Map's order is the order of writes and the first key the oldest.
  ends.threads.delete(threadId)
  ends.threads.set(threadId, thread)
  if (ends.threads.size > THREADS_KEPT) {
    const oldest = ends.threads.keys().next()
    if (oldest.done !== true) ends.threads.delete(oldest.value)
  }
}

/** Forgets every end: the next append reads them. @internal */
export const forgetEnds = (clock: StorageClock | undefined) => {
  if (clock !== undefined) memory.delete(clock)
}
