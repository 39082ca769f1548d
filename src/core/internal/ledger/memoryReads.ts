/**
 * The read-only side of the in-memory ledger: single rows, lane heads and counts, and the
 * scans, in the lane order the SQLite ledger's lane key reproduces.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option, Stream } from "effect"
import type { ThreadId } from "../../Identifiers.ts"
import type { LedgerReads } from "./parts.ts"
import { type DueEntry, headOf, type MemoryStore, storedTextOrder } from "./memoryStore.ts"
import type { SubmissionSnapshot } from "./model.ts"
import * as Rules from "./rules.ts"
import { dueOrder } from "./timedRules.ts"

/** Builds the reads over a store. @internal */
export const makeMemoryReads = (store: MemoryStore): LedgerReads => {
  // JavaScript string order, which the SQLite ledger's lane key reproduces.
  const sortedLanes = () => [...store.lanes.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

  /** Every row of a lane, settled ones included, in queue order. */
  const laneRows = (threadId: ThreadId) =>
    [...store.rows.values()]
      .filter((row) => row.threadId === threadId)
      .sort((a, b) => a.queueSequence - b.queueSequence)

  const nonterminalRows = () =>
    sortedLanes().flatMap(([, lane]) => lane.nonterminal.flatMap((id) => store.rows.get(id) ?? []))

  /** Heads of lanes with work to run, in lane order: a lane parked behind a wait is left out. */
  const runnableHeads = () =>
    sortedLanes().flatMap(([threadId]) => {
      const head = headOf(store, threadId)
      return head === undefined || Rules.isParked(head) ? [] : [head]
    })

  return {
    // The point reads on every Attempt's and selection's path are untraced: a span costs more
    // than the indexed read it would describe.
    lookup: Effect.fnUntraced(function* (submissionId) {
      return yield* Effect.sync(() => Option.fromUndefinedOr(store.rows.get(submissionId)))
    }),

    head: Effect.fnUntraced(function* (threadId) {
      return yield* Effect.sync(() => Option.fromUndefinedOr(headOf(store, threadId)))
    }),

    countNonterminal: spanned("SubmissionLedger.countNonterminal")(function* (threadId) {
      return yield* Effect.sync(() => store.lanes.get(threadId)?.nonterminal.length ?? 0)
    }),

    joinsOf: spanned("SubmissionLedger.joinsOf")(function* (threadId, host) {
      return yield* Effect.sync(() =>
        (store.lanes.get(threadId)?.nonterminal ?? []).flatMap((id) => {
          const row = store.rows.get(id)
          return row !== undefined && row.host === host && (row.state === "joining" || row.state === "joined")
            ? [row]
            : []
        }),
      )
    }),

    scanNonterminal: Stream.fromIterableEffect(Effect.sync(() => nonterminalRows())),

    scanRecoveryCandidates: Stream.fromIterableEffect(
      Effect.sync(() => nonterminalRows().filter(Rules.isRecoveryCandidate)),
    ),

    laneHeads: Effect.sync(runnableHeads),

    nextLaneHead: Effect.fnUntraced(function* (after) {
      return yield* Effect.sync(() =>
        Option.fromUndefinedOr(runnableHeads().find((head) => after === undefined || head.threadId > after)),
      )
    }),

    countAllNonterminal: Effect.sync(() =>
      [...store.lanes.values()].reduce((sum, lane) => sum + lane.nonterminal.length, 0),
    ),

    scanAll: Stream.fromIterableEffect(
      Effect.sync(() => sortedLanes().flatMap(([threadId]) => laneRows(threadId))),
    ),

    lanePage: spanned("SubmissionLedger.lanePage")(function* (threadId, options) {
      return yield* Effect.sync(() =>
        laneRows(threadId)
          .filter((row) => row.queueSequence > options.after)
          .slice(0, options.limit),
      )
    }),

    nextDue: Effect.fnUntraced(function* (now, options) {
      return yield* Effect.sync(() => {
        const { after } = options
        const from = after === undefined ? 0 : store.due.findIndex((entry) => dueOrder(entry, after) > 0)
        const rows: Array<SubmissionSnapshot> = []
        for (let at = from < 0 ? store.due.length : from; at < store.due.length; at++) {
          const entry = store.due[at] as DueEntry
          if (entry.dueAt > now || rows.length >= options.limit) break
          const row = store.rows.get(entry.submissionId)
          if (row !== undefined) rows.push(row)
        }
        return rows
      })
    }),

    earliestDue: Effect.fnUntraced(function* (limit) {
      return yield* Effect.sync(() =>
        store.due.slice(0, Math.max(0, limit)).flatMap((entry) => store.rows.get(entry.submissionId) ?? []),
      )
    }),

    // In the order the SQLite ledger reads them from its history's Thread index.
    threadIds: Effect.sync(() =>
      [...new Set([...store.rows.values()].map((row) => row.threadId))].sort(storedTextOrder),
    ),
  }
}
