/**
 * The read-only side of the SQLite ledger: single rows, lane heads and counts, and the scans
 * the maintenance pass and the operator read in keyset pages (no cursor stays open while the
 * consumer writes to the ledger).
 */
import { spanned, withSpanFast } from "../spanned.ts"
import { Effect, Option, Stream } from "effect"
import type { ThreadId } from "../../Identifiers.ts"
import type { LedgerReads } from "./parts.ts"
import type { LedgerError, SubmissionSnapshot } from "./model.ts"
import { rowStatements } from "../history/sqlRows.ts"
import { knownObjectEnd } from "../history/ends.ts"
import { numberOr, type SqlQueries } from "./sqlQueries.ts"
import type { NothingStored } from "../nothingStored.ts"
import { pageStatements } from "./sqlPages.ts"
import { decodeRow, laneKey, SCAN_PAGE_SIZE, statements } from "./sqlStatements.ts"
import type { Row } from "./sqlStatements.ts"

/**
 * Builds the reads. `countedBefore` holds what the Object admitted and settled before its
 * history counted them (stored at migration). @internal
 */
export const makeSqlReads = (
  { query, decodedFirst, lookup, remembered, clock }: SqlQueries,
  countedBefore: { readonly admitted: number; readonly settled: number },
  /** `none`: this ledger knows no timed wait is stored (see `makeSqlLedger`). */
  timers: NothingStored,
): LedgerReads => {
  const pages = (
    operation: string,
    text: string,
    params: (after: readonly [string, number]) => ReadonlyArray<unknown>,
  ): Stream.Stream<SubmissionSnapshot, LedgerError> =>
    Stream.paginate(["", 0] as readonly [string, number], (after: readonly [string, number]) =>
      Effect.flatMap(query(operation, text, params(after)), (rows) =>
        Effect.map(
          Effect.forEach(rows, decodeRow(operation)),
          (page): readonly [ReadonlyArray<SubmissionSnapshot>, Option.Option<readonly [string, number]>] => {
            const last = rows[rows.length - 1]
            return [
              page,
              rows.length < SCAN_PAGE_SIZE || last === undefined
                ? Option.none()
                : Option.some([String(last.lane_key), Number(last.queue_sequence)] as const),
            ]
          },
        ),
      ),
    )

  /**
   * The history sequence from which a lane's admissions after the queue position `after` are
   * found: the first row whose lane tail passed `after`. Every row carries the highest queue
   * position its Thread admitted so far, so the tail only grows along the history and each
   * admission's own row carries at least its position: the rows before that one hold no
   * admission after `after`. A binary search of one-row seeks (about 2 log2 of the Thread's
   * records), instead of reading every record before the cursor. Rows the migration
   * `thread-store/003-billed-rows` rebuilt carry no tail, so an Object that had admitted anything
   * before it reads from the start, as before.
   */
  const laneStart = (operation: string, threadId: ThreadId, after: number) =>
    Effect.gen(function* () {
      if (after <= 0 || countedBefore.admitted > 0) return 0
      const newest = numberOr(
        (yield* query(operation, pageStatements.newestRecord, [threadId]))[0]?.newest,
        0,
      )
      // The answer is in [low, high]: `high` (past the newest row) when no row passed `after`.
      let low = 0
      let high = newest + 1
      while (low < high) {
        const middle = Math.floor((low + high) / 2)
        const [row] = yield* query(operation, statements.laneTailFrom, [threadId, middle])
        if (row === undefined || numberOr(row.lane_tail, 0) > after) high = middle
        else low = middle + 1
      }
      return low
    })

  /**
   * The first open lane head after `after` whose lane no wait parks: one statement, or two when
   * the first lane it finds is parked (the second passes over every parked lane after it), none
   * when it was read since the last write (a selection and the finish after it).
   */
  const nextRunnableHead = (operation: string, after: string) =>
    remembered(
      `next open after ${after}`,
      Effect.gen(function* () {
        const found = yield* query(operation, statements.nextOpen, [after])
        const row = found[0]
        if (row === undefined || Number(row.parked_before) === 0) return yield* decodedFirst(operation, found)
        return yield* decodedFirst(
          operation,
          yield* query(operation, statements.nextUnparked, [String(row.lane_key)]),
        )
      }),
    )

  return {
    // The point reads on every Attempt's and selection's path are untraced: a span costs more
    // than the indexed read it would describe.
    lookup: Effect.fnUntraced(function* (submissionId) {
      return yield* lookup("SubmissionLedger.lookup", submissionId)
    }),

    head: Effect.fnUntraced(function* (threadId) {
      const operation = "SubmissionLedger.head"
      const lane = laneKey(threadId)
      const rows = yield* query(operation, statements.head, [lane, lane])
      const earliest = rows.reduce<Row | undefined>(
        (best, row) =>
          best === undefined || Number(row.queue_sequence) < Number(best.queue_sequence) ? row : best,
        undefined,
      )
      return earliest === undefined ? Option.none() : Option.some(yield* decodeRow(operation)(earliest))
    }),

    countNonterminal: spanned("SubmissionLedger.countNonterminal")(function* (threadId) {
      const lane = laneKey(threadId)
      const [row] = yield* query("SubmissionLedger.countNonterminal", statements.count, [lane, lane])
      return Number(row?.depth ?? 0)
    }),

    joinsOf: spanned("SubmissionLedger.joinsOf")(function* (threadId, host) {
      const operation = "SubmissionLedger.joinsOf"
      const rows = yield* query(operation, statements.joinsOf, [laneKey(threadId), host])
      return yield* Effect.forEach(rows, decodeRow(operation))
    }),

    scanNonterminal: pages("SubmissionLedger.scanNonterminal", statements.scanPage, (after) => [
      ...after,
      ...after,
    ]),

    scanRecoveryCandidates: pages(
      "SubmissionLedger.scanRecoveryCandidates",
      statements.recoveryPage,
      (after) => after,
    ),

    // One or two statements per lane with work (parked lanes are passed over inside SQLite).
    laneHeads: Effect.gen(function* () {
      const operation = "SubmissionLedger.laneHeads"
      const heads: Array<SubmissionSnapshot> = []
      let after = ""
      while (true) {
        const head = yield* nextRunnableHead(operation, after)
        if (Option.isNone(head)) return heads
        heads.push(head.value)
        after = laneKey(head.value.threadId)
      }
    }).pipe(withSpanFast("SubmissionLedger.laneHeads")),

    nextLaneHead: Effect.fnUntraced(function* (after) {
      return yield* nextRunnableHead(
        "SubmissionLedger.nextLaneHead",
        after === undefined ? "" : laneKey(after),
      )
    }),

    countAllNonterminal: Effect.suspend(() => {
      const nonterminal = (admitted: number, settled: number) =>
        countedBefore.admitted + admitted - countedBefore.settled - settled
      // The counts the last append left, while the history's memory holds them (see `ends.ts`).
      const known = clock === undefined ? undefined : knownObjectEnd(clock)
      return known !== undefined
        ? Effect.succeed(nonterminal(known.admitted, known.settled))
        : Effect.map(query("SubmissionLedger.countAllNonterminal", rowStatements.counts, []), (rows) =>
            nonterminal(numberOr(rows[0]?.admitted, 0), numberOr(rows[0]?.settled, 0)),
          )
    }).pipe(withSpanFast("SubmissionLedger.countAllNonterminal")),

    scanAll: Stream.paginate("", (after: string) =>
      Effect.flatMap(query("SubmissionLedger.scanAll", statements.allPage, [after]), (rows) =>
        Effect.map(
          Effect.forEach(rows, decodeRow("SubmissionLedger.scanAll")),
          (page): readonly [ReadonlyArray<SubmissionSnapshot>, Option.Option<string>] => {
            const last = page.at(-1)
            return [
              page,
              page.length < SCAN_PAGE_SIZE || last === undefined
                ? Option.none()
                : Option.some(last.submissionId),
            ]
          },
        ),
      ),
    ),

    lanePage: spanned("SubmissionLedger.lanePage")(function* (threadId, options) {
      const operation = "SubmissionLedger.lanePage"
      const from = yield* laneStart(operation, threadId, options.after)
      const rows = yield* query(operation, statements.lanePage(options.limit), [
        threadId,
        from,
        options.after,
      ])
      return yield* Effect.forEach(rows, decodeRow(operation))
    }),

    nextDue: Effect.fnUntraced(function* (now, options) {
      const operation = "SubmissionLedger.nextDue"
      if (timers.known()) return []
      const after = options.after
      const rows = yield* query(operation, statements.nextDue(options.limit), [
        now,
        after?.dueAt ?? -Number.MAX_VALUE,
        after?.submissionId ?? "",
      ])
      return yield* Effect.forEach(rows, decodeRow(operation))
    }),

    earliestDue: Effect.fnUntraced(function* (limit) {
      const operation = "SubmissionLedger.earliestDue"
      if (timers.known()) return []
      const rows = yield* timers.read(
        query(operation, statements.earliestDue(limit), []),
        (found) => found.length === 0 && limit > 0,
      )
      return yield* Effect.forEach(rows, decodeRow(operation))
    }),

    threadIds: Effect.gen(function* () {
      const threads: Array<ThreadId> = []
      let after = ""
      while (true) {
        const [row] = yield* query("SubmissionLedger.threadIds", statements.nextThread, [after])
        if (row === undefined) return threads
        after = String(row.thread_id)
        threads.push(after as ThreadId)
      }
    }).pipe(withSpanFast("SubmissionLedger.threadIds")),
  }
}
