/**
 * What a SQLite store knows of rows it alone writes (timed waits, schedules, messages to send):
 * that none is stored, once a read found none, until a write may store one. The reads then run
 * no statement. A read that found none keeps that only if no such write began while it ran: its
 * fiber may yield between its statement and its answer, and writes run beside it.
 * @internal
 */
import { Effect } from "effect"

/** @internal */
export interface NothingStored {
  /** Whether a read found none and no write may have stored one since. */
  readonly known: () => boolean
  /** Before a write that may store one. */
  readonly writing: () => void
  /** Runs `read`, and remembers "none" when `foundNone` says so and no write began meanwhile. */
  readonly read: <A, E, R>(
    read: Effect.Effect<A, E, R>,
    foundNone: (a: A) => boolean,
  ) => Effect.Effect<A, E, R>
}

/** @internal */
export const nothingStored = (initially: boolean): NothingStored => {
  let none = initially
  let writes = 0
  return {
    known: () => none,
    writing: () => {
      none = false
      writes++
    },
    read: (read, foundNone) =>
      Effect.suspend(() => {
        const before = writes
        return Effect.map(read, (found) => {
          if (foundNone(found) && writes === before) none = true
          return found
        })
      }),
  }
}
