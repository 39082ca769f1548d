/**
 * The due source of a pass: the rows whose timed wait is due, in due order, read a page of
 * `maxTimersPerEvent` rows at a time from the ledger's due index, so a pass reads rows in
 * proportion to the timers due, never to the rows waiting.
 */
import { Effect } from "effect"
import type {
  DueCursor,
  LedgerError,
  SubmissionLedger,
  SubmissionSnapshot,
} from "../../core/SubmissionLedger.ts"

/** @internal */
export interface DueSource {
  /** The next due row at `now` that `skip` does not pass over, or `undefined` when none is left. */
  readonly next: (
    now: number,
    skip: (row: SubmissionSnapshot) => boolean,
  ) => Effect.Effect<SubmissionSnapshot | undefined, LedgerError>
  /** Whether the last page read was the last one. */
  readonly exhausted: () => boolean
}

/** @internal A due source over `ledger`, reading pages of `pageSize` rows. */
export const makeDueSource = (ledger: SubmissionLedger["Service"], pageSize: number): DueSource => {
  let page: Array<SubmissionSnapshot> = []
  let after: DueCursor | undefined
  let done = false
  return {
    exhausted: () => done && page.length === 0,
    next: (now, skip) =>
      Effect.gen(function* () {
        while (true) {
          if (page.length === 0) {
            if (done) return undefined
            const rows = yield* ledger.nextDue(now, {
              limit: pageSize,
              ...(after === undefined ? {} : { after }),
            })
            done = rows.length < pageSize
            const last = rows.at(-1)
            if (last?.dueAt !== undefined) after = { dueAt: last.dueAt, submissionId: last.submissionId }
            page = [...rows]
            if (page.length === 0) return undefined
          }
          const row = page.shift() as SubmissionSnapshot
          if (!skip(row)) return row
        }
      }),
  }
}
