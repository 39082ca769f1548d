/**
 * The handlers of the operator pages: a Thread's Submissions filtered and a page at a time
 * (`submissionPage`), the Object's Threads with their counts (`threadPage`), and a Submission
 * found by its idempotency key (`findSubmission`, how a parent's child link finds the child).
 * Reads only, each bounded by its page: the ledger examines one window of positions per page,
 * and only a suspended Submission's records are read, to say what it waits for.
 */
import { Clock, Effect, Option } from "effect"
import { readJournal } from "../../core/internal/runtime/shared/journal.ts"
import {
  SubmissionLedger,
  type SubmissionSnapshot,
  type SubmissionState,
} from "../../core/SubmissionLedger.ts"
import { ThreadHistory } from "../../core/ThreadHistory.ts"
import type { CallHandler } from "./dispatch.ts"
import {
  STATES_OF_KIND,
  SubmissionPage,
  SubmissionSummary,
  ThreadPage,
  ThreadSummary,
  waitingKindOf,
} from "./pageViews.ts"
import { submissionStatus } from "./statusViews.ts"

const DEFAULT_PAGE = 50

/**
 * A row with why it is where it is; a suspended row without a wait record (an approval or a
 * child wait) is read from its records.
 */
const summarize = (row: SubmissionSnapshot, head: SubmissionSnapshot | undefined, now: number) =>
  Effect.gen(function* () {
    const journal =
      row.state === "suspended" && row.wait === undefined
        ? readJournal((yield* (yield* ThreadHistory).forSubmission(row.submissionId)).map((r) => r.entry))
        : undefined
    return SubmissionSummary.make({
      submission: submissionStatus(row),
      waiting: waitingKindOf(row, { head, now, ...(journal === undefined ? {} : { journal }) }),
    })
  })

/** The states both filters allow; `undefined` when neither restricts them. */
/** @internal The states a page may show: those asked for, within the waiting kind's. */
export const allowedStates = (
  states: ReadonlyArray<SubmissionState> | undefined,
  kind: ReadonlyArray<SubmissionState> | undefined,
): ReadonlyArray<SubmissionState> | undefined =>
  states === undefined ? kind : kind === undefined ? states : states.filter((state) => kind.includes(state))

type PageCall = "submissionPage" | "threadPage" | "findSubmission"

/** @internal */
export const pageHandlers: { readonly [K in PageCall]: CallHandler<K> } = {
  submissionPage: (request) =>
    Effect.gen(function* () {
      const ledger = yield* SubmissionLedger
      const states = allowedStates(
        request.states,
        request.waiting === undefined ? undefined : STATES_OF_KIND[request.waiting],
      )
      if (states !== undefined && states.length === 0)
        return SubmissionPage.make({ submissions: [], order: "queue" })
      const page = yield* ledger.queryLane(request.threadId, {
        filter: {
          ...(states === undefined ? {} : { states }),
          ...(request.agentId === undefined ? {} : { agentId: request.agentId }),
        },
        ...(request.cursor === undefined ? {} : { cursor: request.cursor }),
        limit: request.limit ?? DEFAULT_PAGE,
      })
      const head = Option.getOrUndefined(yield* ledger.head(request.threadId))
      const now = yield* Clock.currentTimeMillis
      const summaries = yield* Effect.forEach(page.rows, (row) => summarize(row, head, now))
      return SubmissionPage.make({
        // A kind narrower than its states (a suspended row waits for an approval or a child)
        // may leave a page short; `next` still goes on from where the ledger stopped.
        submissions:
          request.waiting === undefined
            ? summaries
            : summaries.filter((summary) => summary.waiting === request.waiting),
        order: page.walk === "unsettled" ? "queue" : "newest-first",
        ...(page.next === undefined ? {} : { next: page.next }),
      })
    }),

  threadPage: (request) =>
    Effect.gen(function* () {
      const ledger = yield* SubmissionLedger
      const limit = request.limit ?? DEFAULT_PAGE
      // One Thread more than the page tells whether another page follows.
      const found = yield* ledger.threadPage({
        ...(request.after === undefined ? {} : { after: request.after }),
        limit: limit + 1,
      })
      const shown = found.slice(0, limit)
      const now = yield* Clock.currentTimeMillis
      const threads = yield* Effect.forEach(shown, (threadId) =>
        Effect.gen(function* () {
          const counts = yield* ledger.laneCounts(threadId)
          const head = Option.getOrUndefined(yield* ledger.head(threadId))
          return ThreadSummary.make({
            threadId,
            admitted: counts.admitted,
            open: counts.open,
            parked: counts.parked,
            settled: Math.max(0, counts.admitted - counts.removed - counts.open - counts.parked),
            capped: counts.capped,
            ...(head === undefined ? {} : { head: yield* summarize(head, head, now) }),
          })
        }),
      )
      const last = shown.at(-1)
      // Object-wide, as `unsettled`: once, on the first page (no statement while none was ever kept).
      const early = request.after === undefined ? yield* ledger.earlyEvents : undefined
      return ThreadPage.make({
        threads,
        unsettled: yield* ledger.countAllNonterminal,
        ...(early === undefined || early.events === 0 ? {} : { early }),
        ...(found.length > limit && last !== undefined ? { next: last } : {}),
      })
    }),

  findSubmission: (request) =>
    Effect.gen(function* () {
      const ledger = yield* SubmissionLedger
      const row = yield* ledger.lookupByKey(request.threadId, request.idempotencyKey)
      return Option.isSome(row) ? submissionStatus(row.value) : null
    }),
}
