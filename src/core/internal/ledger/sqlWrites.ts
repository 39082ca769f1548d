/**
 * The write machinery under the SQLite ledger's transitions: a guarded `UPDATE … RETURNING`
 * that asks the shared rules to explain a missing row (and runs again if another fiber changed
 * the row in between), fenced writes, and the canonical records a write appends in its
 * caller's transaction.
 */
import { Effect, Option, Result, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SubmissionId } from "../../Identifiers.ts"
import { LedgerError, Settlement } from "./model.ts"
import type { Claim, Fence, SubmissionSnapshot } from "./model.ts"
import * as Rules from "./rules.ts"
import { encodeEntry } from "../history/codec.ts"
import type { HistoryEntry } from "../history/model.ts"
import { writeRow } from "../history/sqlRows.ts"
import { type SqlQueries, storageError } from "./sqlQueries.ts"

const RACE_RETRIES = 3

const encodeSettlementJson = Schema.encodeEffect(Schema.fromJsonString(Settlement))

/** A failure of the canonical records a ledger write appends. */
const recordsError = (operation: string) => (cause: { readonly message: string }) =>
  new LedgerError({ operation, message: `the records did not append: ${cause.message}`, cause })

/** The Claim of a row just claimed or renewed; a row without ownership there is corrupt. @internal */
export const claimFrom = (operation: string) => (row: SubmissionSnapshot) =>
  row.ownership === undefined
    ? Effect.fail(
        new LedgerError({
          operation,
          message: `submission ${row.submissionId} has no owner after the write`,
        }),
      )
    : Effect.succeed(Rules.claimOf(row, row.ownership))

/** Fails with the first instant that is not finite. @internal */
export const requireFinite = (operation: string, values: Readonly<Record<string, number>>) => {
  const invalid = Rules.nonFinite(operation, values)
  return invalid === undefined ? Effect.void : Effect.fail(invalid)
}

/** The fence parameters in the order `statements.*.Owner|Unowned` expect. */
const fenceParams = (fence: Fence): ReadonlyArray<unknown> =>
  fence._tag === "Owner"
    ? [fence.claim.submissionId, fence.claim.producerEpoch, fence.claim.ownershipToken]
    : [
        fence.submissionId,
        fence.producerEpoch,
        fence.now,
        fence.incarnation ?? null,
        fence.incarnation ?? null,
      ]

/** @internal */
export const ownerFence = (claim: Claim): Fence => ({ _tag: "Owner", claim })

/** Builds the guarded and fenced writes over one `SqlClient`. @internal */
export const makeSqlWrites = (sql: SqlClient, { first, byId }: SqlQueries) => {
  /**
   * Runs a guarded update; on no row, reads the row and applies `rule` to explain it. An
   * `Update` verdict means the row changed between the two statements: try again. `changed`
   * tells a written row from an idempotent repeat.
   */
  const guardedChange = <E>(
    operation: string,
    submissionId: SubmissionId,
    write: Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError>,
    rule: (row: SubmissionSnapshot | undefined) => Result.Result<Rules.Change, E>,
  ): Effect.Effect<{ readonly row: SubmissionSnapshot; readonly changed: boolean }, E | LedgerError> => {
    const attempt = (
      left: number,
    ): Effect.Effect<{ readonly row: SubmissionSnapshot; readonly changed: boolean }, E | LedgerError> =>
      Effect.flatMap(write, (written) => {
        if (Option.isSome(written)) return Effect.succeed({ row: written.value, changed: true })
        return Effect.flatMap(byId(operation, submissionId), (row) => {
          const verdict = rule(row)
          if (Result.isFailure(verdict)) return Effect.fail(verdict.failure)
          if (verdict.success._tag === "Unchanged")
            return Effect.succeed({ row: verdict.success.snapshot, changed: false })
          return left > 0
            ? attempt(left - 1)
            : Effect.fail(
                new LedgerError({
                  operation,
                  message: `submission ${submissionId} kept changing under the write`,
                }),
              )
        })
      })
    return attempt(RACE_RETRIES)
  }

  const guarded = <E>(
    operation: string,
    submissionId: SubmissionId,
    write: Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError>,
    rule: (row: SubmissionSnapshot | undefined) => Result.Result<Rules.Change, E>,
  ) => Effect.map(guardedChange(operation, submissionId, write, rule), ({ row }) => row)

  const fencedWrite = (
    operation: string,
    text: { readonly Owner: string; readonly Unowned: string },
    set: ReadonlyArray<unknown>,
    fence: Fence,
    extra: ReadonlyArray<unknown> = [],
  ) => first(operation, text[fence._tag], [...set, ...fenceParams(fence), ...extra])

  /** A fenced write that stores `settlement` for the Submission and Thread it names. */
  const settlementWrite = (
    operation: string,
    text: { readonly Owner: string; readonly Unowned: string },
    fence: Fence,
    settlement: Settlement,
    setAfter: ReadonlyArray<unknown> = [],
  ) =>
    Effect.flatMap(encodeSettlementJson(settlement).pipe(Effect.mapError(storageError(operation))), (json) =>
      fencedWrite(operation, text, [json, ...setAfter], fence, [
        settlement.submissionId,
        settlement.threadId,
      ]),
    )

  /** Appends the records of a ledger write for `row`, in the caller's transaction. */
  const record = (
    operation: string,
    row: SubmissionSnapshot,
    entries: ReadonlyArray<HistoryEntry>,
    now: number,
    admits: 0 | 1,
  ) =>
    Effect.gen(function* () {
      const encoded = yield* Effect.forEach(entries, (entry) => encodeEntry(operation, entry))
      return yield* writeRow(sql, operation, {
        threadId: row.threadId,
        submissionId: row.submissionId,
        queueSequence: row.queueSequence,
        entries: encoded,
        now,
        admits,
      })
    }).pipe(Effect.mapError(recordsError(operation)))

  return { guardedChange, guarded, fencedWrite, settlementWrite, record }
}
