/**
 * Admission on the SQLite ledger: the verdict (`sqlAdmission.ts`) in the transaction that writes
 * the acceptance record and the row, so a replay, a refusal and an admission see the same lane.
 */
import { Effect, Schema } from "effect"
import { spanned } from "../spanned.ts"
import { ParentLink } from "../outbox/parentLink.ts"
import type { HistoryEntry, HistoryRecord } from "../history/model.ts"
import { admittedRow, delayedJoin } from "./admission.ts"
import { type AdmissionRequest, LedgerError, type SubmissionSnapshot, WaitRecord } from "./model.ts"
import * as Rules from "./rules.ts"
import type { NothingStored } from "../nothingStored.ts"
import type { makeSqlAdmission } from "./sqlAdmission.ts"
import { type LedgerTransaction, type SqlQueries, storageError } from "./sqlQueries.ts"
import { laneKey, statements } from "./sqlStatements.ts"
import { requireFinite } from "./sqlWrites.ts"

const encodeParentJson = Schema.encodeEffect(Schema.fromJsonString(ParentLink))
const encodeWaitJson = Schema.encodeEffect(Schema.fromJsonString(WaitRecord))

/** A wait as its stored JSON. @internal */
export const encodeWait = (operation: string, wait: WaitRecord) =>
  encodeWaitJson(wait).pipe(Effect.mapError(storageError(operation)))

/** What `admit` needs from the opened ledger. @internal */
export interface SqlAdmitOptions {
  readonly queries: SqlQueries
  readonly transaction: LedgerTransaction
  readonly admissionVerdict: ReturnType<typeof makeSqlAdmission>["admissionVerdict"]
  readonly record: (
    operation: string,
    row: SubmissionSnapshot,
    entries: ReadonlyArray<HistoryEntry>,
    now: number,
    admits: 0 | 1,
  ) => Effect.Effect<ReadonlyArray<HistoryRecord>, LedgerError>
  /** The ledger's knowledge that no timed wait is stored; an admission with a due time clears it. */
  readonly timers: NothingStored
  /**
   * The events kept for the Submission before its admission, removed (`sqlEarly.ts`): recorded
   * with its acceptance. Runs in the admission's transaction: its statements are synchronous.
   */
  readonly takeEarly: (
    admitted: SubmissionSnapshot,
  ) => Effect.Effect<ReadonlyArray<HistoryEntry>, LedgerError>
}

/** The ledger's `admit`. @internal */
export const makeSqlAdmit = ({
  queries,
  transaction,
  admissionVerdict,
  record,
  timers,
  takeEarly,
}: SqlAdmitOptions) => {
  const { query, byId } = queries
  return spanned("SubmissionLedger.admit")(function* (request: AdmissionRequest) {
    const operation = "SubmissionLedger.admit"
    yield* requireFinite(operation, { now: request.now })
    const delayed = delayedJoin(operation, request)
    if (delayed !== undefined) return yield* delayed
    const lane = laneKey(request.threadId)
    const input = yield* Effect.try({
      try: () => JSON.parse(request.inputPayload) as Schema.Json,
      catch: (cause) => new LedgerError({ operation, message: "the input payload is not JSON", cause }),
    })
    const parentJson =
      request.parent === undefined
        ? null
        : yield* encodeParentJson(request.parent).pipe(Effect.mapError(storageError(operation)))
    return yield* transaction(
      operation,
      Effect.gen(function* () {
        const verdict = yield* admissionVerdict(operation, request)
        if (verdict._tag === "Replayed") return verdict.admission
        // A join whose host ended (or is aborting) meanwhile is ordinary input.
        const host =
          request.host !== undefined && Rules.takesJoins(yield* byId(operation, request.host))
            ? request.host
            : undefined
        const snapshot = yield* Effect.try({
          try: () =>
            admittedRow(request, {
              submissionId: verdict.submissionId,
              queueSequence: verdict.queueSequence,
              laneEmpty: verdict.laneEmpty,
              ...(host === undefined ? {} : { host }),
            }),
          catch: (cause) =>
            new LedgerError({
              operation,
              message: `the admission does not validate: ${String(cause)}`,
              cause,
            }),
        })
        // What arrived before it is taken in this transaction: it is recorded with the
        // acceptance, in the same history row, or stays kept if the admission fails.
        const arrived = yield* takeEarly(snapshot)
        // The acceptance record first: its sequence is where the Submission's records start.
        const [accepted] = yield* record(
          operation,
          snapshot,
          [Rules.acceptedEntry(snapshot, input, request), ...arrived],
          request.now,
          1,
        )
        if (snapshot.dueAt !== undefined) timers.writing()
        // The new row is known from what was inserted: reading it back would bill a row.
        yield* query(operation, statements.insert, [
          snapshot.submissionId,
          snapshot.threadId,
          lane,
          snapshot.queueSequence,
          snapshot.idempotencyKey,
          snapshot.agentId,
          snapshot.agentDigest,
          snapshot.inputPayload,
          snapshot.inputDigest,
          snapshot.receiptId,
          snapshot.state,
          Rules.isParked(snapshot) ? "parked" : "open",
          snapshot.createdAt,
          snapshot.readyAt ?? request.now,
          accepted?.sequence ?? null,
          parentJson,
          host ?? null,
          snapshot.dueAt ?? null,
          snapshot.wait === undefined ? null : yield* encodeWait(operation, snapshot.wait),
        ])
        return { _tag: "Admitted" as const, snapshot }
      }),
    )
  })
}
