/**
 * The Submission Ledger on Durable Object SQLite through `SqlClient`.
 *
 * Each transition is one `UPDATE … RETURNING` whose `WHERE` carries the fence and the allowed
 * source states, so the common path is one statement. When it returns no row, the ledger reads
 * the row and lets the shared rules name the failure (or recognise an idempotent repeat); if
 * the rules would now allow the write, another fiber changed the row in between and the
 * operation runs again. Only admission needs several statements, in one transaction.
 */
import { Effect, Option, Result, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { SubmissionId } from "../../Identifiers.ts"
import { inputBytesRefusal, newAdmissionIds, queueDepthRefusal, replayOf } from "./admission.ts"
import { LedgerError, Settlement, SubmissionLedgerLimits } from "./model.ts"
import { ParentLink } from "../outbox/parentLink.ts"
import type { Claim, Fence, InvalidTransition, SubmissionNotFound, SubmissionSnapshot } from "./model.ts"
import * as Rules from "./rules.ts"
import { runMigrations } from "../migrations.ts"
import { decodeRow, laneKey, ledgerMigrations, statements } from "./sqlStatements.ts"
import type { Row } from "./sqlStatements.ts"

const scanPageSize = 128
const raceRetries = 3

const encodeSettlementJson = Schema.encodeEffect(Schema.fromJsonString(Settlement))
const encodeParentJson = Schema.encodeEffect(Schema.fromJsonString(ParentLink))

/** @internal */
export const storageError = (operation: string) => (cause: SqlError | Schema.SchemaError) =>
  new LedgerError({ operation, message: `storage failed: ${cause.message}`, cause })

/** The Claim of a row just claimed or renewed; a row without ownership there is corrupt. */
const claimFrom = (operation: string) => (row: SubmissionSnapshot) =>
  row.ownership === undefined
    ? Effect.fail(
        new LedgerError({
          operation,
          message: `submission ${row.submissionId} has no owner after the write`,
        }),
      )
    : Effect.succeed(Rules.claimOf(row, row.ownership))

/** Fails with the first instant that is not finite. */
const requireFinite = (operation: string, values: Readonly<Record<string, number>>) => {
  const invalid = Rules.nonFinite(operation, values)
  return invalid === undefined ? Effect.void : Effect.fail(invalid)
}

/** The fence parameters in the order `statements.*.Owner|Unowned` expect. */
const fenceParams = (fence: Fence): ReadonlyArray<unknown> =>
  fence._tag === "Owner"
    ? [fence.claim.submissionId, fence.claim.producerEpoch, fence.claim.ownershipToken]
    : [fence.submissionId, fence.producerEpoch, fence.now]

/** Builds the SQLite ledger and runs its migrations. @internal */
export const makeSqlLedger = Effect.gen(function* () {
  const sql = yield* SqlClient
  const limits = yield* SubmissionLedgerLimits
  yield* runMigrations(ledgerMigrations).pipe(Effect.mapError(storageError("SubmissionLedger.migrate")))

  const query = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    sql.unsafe<Row>(text, params).pipe(Effect.mapError(storageError(operation)))

  const first = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    Effect.flatMap(query(operation, text, params), (rows) =>
      rows[0] === undefined
        ? Effect.succeed(Option.none<SubmissionSnapshot>())
        : Effect.map(decodeRow(operation)(rows[0]), Option.some),
    )

  const byId = (operation: string, submissionId: SubmissionId) =>
    Effect.map(first(operation, statements.byId, [submissionId]), Option.getOrUndefined)

  /**
   * Runs a guarded update; on no row, reads the row and applies `rule` to explain it. An
   * `Update` verdict means the row changed between the two statements: try again.
   */
  const guarded = <E>(
    operation: string,
    submissionId: SubmissionId,
    write: Effect.Effect<Option.Option<SubmissionSnapshot>, LedgerError>,
    rule: (row: SubmissionSnapshot | undefined) => Result.Result<Rules.Change, E>,
  ): Effect.Effect<SubmissionSnapshot, E | LedgerError> => {
    const attempt = (left: number): Effect.Effect<SubmissionSnapshot, E | LedgerError> =>
      Effect.flatMap(write, (written) => {
        if (Option.isSome(written)) return Effect.succeed(written.value)
        return Effect.flatMap(byId(operation, submissionId), (row) => {
          const verdict = rule(row)
          if (Result.isFailure(verdict)) return Effect.fail(verdict.failure)
          if (verdict.success._tag === "Unchanged") return Effect.succeed(verdict.success.snapshot)
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
    return attempt(raceRetries)
  }

  const fencedWrite = (
    operation: string,
    text: { readonly Owner: string; readonly Unowned: string },
    set: ReadonlyArray<unknown>,
    fence: Fence,
    extra: ReadonlyArray<unknown> = [],
  ) => first(operation, text[fence._tag], [...set, ...fenceParams(fence), ...extra])

  const ownerFence = (claim: Claim): Fence => ({ _tag: "Owner", claim })

  /**
   * The lane's nonterminal depth as the admission limit needs it: exact once it reaches the
   * limit (a refusal names it), otherwise some figure below the limit. The head-to-tail span
   * bounds the depth, so a lane reads rows only when its span reaches the limit (settlements
   * out of queue order left gaps in it), and then one seek past `limit` rows first.
   */
  const laneDepth = (operation: string, lane: string, counters: Row | undefined) =>
    Effect.gen(function* () {
      const limit = limits.maxQueueDepthPerLane
      const head = counters?.head_sequence
      if (head === null || head === undefined) return 0
      const span = Number(counters?.last_sequence ?? head) - Number(head) + 1
      if (span < limit) return span
      const atLimit = yield* query(operation, statements.laneRowAt, [lane, limit - 1])
      if (atLimit.length === 0) return limit - 1
      const [exact] = yield* query(operation, statements.count, [lane])
      return Number(exact?.depth ?? limit)
    })

  const pages = (operation: string, text: string): Stream.Stream<SubmissionSnapshot, LedgerError> =>
    Stream.paginate(["", 0] as readonly [string, number], (after: readonly [string, number]) =>
      Effect.flatMap(query(operation, text, [...after, scanPageSize]), (rows) =>
        Effect.map(
          Effect.forEach(rows, decodeRow(operation)),
          (page): readonly [ReadonlyArray<SubmissionSnapshot>, Option.Option<readonly [string, number]>] => {
            const last = rows[rows.length - 1]
            return [
              page,
              rows.length < scanPageSize || last === undefined
                ? Option.none()
                : Option.some([String(last.lane_key), Number(last.queue_sequence)] as const),
            ]
          },
        ),
      ),
    )

  const service: typeof SubmissionLedger.Service = {
    admit: Effect.fn("SubmissionLedger.admit")(function* (request) {
      const operation = "SubmissionLedger.admit"
      yield* requireFinite(operation, { now: request.now })
      const ids = newAdmissionIds()
      const lane = laneKey(request.threadId)
      const parentJson =
        request.parent === undefined
          ? null
          : yield* encodeParentJson(request.parent).pipe(Effect.mapError(storageError(operation)))
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const used = yield* first(operation, statements.byKey, [lane, request.idempotencyKey])
            if (Option.isSome(used)) return yield* Effect.fromResult(replayOf(request, used.value))
            const tooLarge = inputBytesRefusal(request, limits)
            if (tooLarge !== undefined) return yield* tooLarge
            const [counters] = yield* query(operation, statements.laneCounters, [lane, lane])
            const depth = yield* laneDepth(operation, lane, counters)
            const full = queueDepthRefusal(request, limits, depth)
            if (full !== undefined) return yield* full
            // The new row is known from what was inserted: reading it back would bill a row.
            const row = {
              submission_id: ids.submissionId,
              thread_id: request.threadId,
              lane_key: lane,
              queue_sequence: Number(counters?.last_sequence ?? 0) + 1,
              idempotency_key: request.idempotencyKey,
              agent_id: request.agentId,
              agent_digest: request.agentDigest,
              input_payload: request.inputPayload,
              input_digest: request.inputDigest,
              receipt_id: ids.receiptId,
              state: "admitted",
              producer_epoch: 0,
              abort_requested: 0,
              created_at: request.now,
              attempt_id: null,
              ownership_token: null,
              lease_expires_at: null,
              settlement: null,
              ready_at: null,
              parent_link: parentJson,
              host_submission_id: request.host ?? null,
            }
            yield* query(operation, statements.insert, [
              row.submission_id,
              row.thread_id,
              row.lane_key,
              row.queue_sequence,
              row.idempotency_key,
              row.agent_id,
              row.agent_digest,
              row.input_payload,
              row.input_digest,
              row.receipt_id,
              row.created_at,
              row.parent_link,
              row.host_submission_id,
            ])
            const inserted = yield* decodeRow(operation)(row)
            return { _tag: "Admitted" as const, snapshot: inserted }
          }),
        )
        .pipe(Effect.catchTag("SqlError", (cause) => Effect.fail(storageError(operation)(cause))))
    }),

    markReady: Effect.fn("SubmissionLedger.markReady")(function* (submissionId, now) {
      const operation = "SubmissionLedger.markReady"
      yield* requireFinite(operation, { now })
      return yield* guarded(
        operation,
        submissionId,
        first(operation, statements.markReady, [now, submissionId]),
        (row): Result.Result<Rules.Change, InvalidTransition | SubmissionNotFound> =>
          row === undefined ? Result.fail(Rules.notFound(submissionId)) : Rules.markReadyRule(row, now),
      )
    }),

    lookup: Effect.fn("SubmissionLedger.lookup")(function* (submissionId) {
      return yield* first("SubmissionLedger.lookup", statements.byId, [submissionId])
    }),

    lookupByKey: Effect.fn("SubmissionLedger.lookupByKey")(function* (threadId, idempotencyKey) {
      return yield* first("SubmissionLedger.lookupByKey", statements.byKey, [
        laneKey(threadId),
        idempotencyKey,
      ])
    }),

    head: Effect.fn("SubmissionLedger.head")(function* (threadId) {
      return yield* first("SubmissionLedger.head", statements.head, [laneKey(threadId)])
    }),

    countNonterminal: Effect.fn("SubmissionLedger.countNonterminal")(function* (threadId) {
      const [row] = yield* query("SubmissionLedger.countNonterminal", statements.count, [laneKey(threadId)])
      return Number(row?.depth ?? 0)
    }),

    claim: Effect.fn("SubmissionLedger.claim")(function* (threadId, grant) {
      const operation = "SubmissionLedger.claim"
      yield* requireFinite(operation, { now: grant.now, leaseDuration: grant.leaseDuration })
      const claimed = yield* first(operation, statements.claim, [
        grant.attemptId,
        grant.ownershipToken,
        grant.now + grant.leaseDuration,
        laneKey(threadId),
        grant.now,
      ])
      return Option.isNone(claimed) ? Option.none() : Option.some(yield* claimFrom(operation)(claimed.value))
    }),

    renew: Effect.fn("SubmissionLedger.renew")(function* (claim, leaseExpiresAt) {
      const operation = "SubmissionLedger.renew"
      yield* requireFinite(operation, { leaseExpiresAt })
      const fence = ownerFence(claim)
      const row = yield* guarded(
        operation,
        claim.submissionId,
        fencedWrite(operation, statements.renew, [leaseExpiresAt], fence),
        (current) => Rules.renewRule(claim, current, leaseExpiresAt),
      )
      return yield* claimFrom(operation)(row)
    }),

    release: Effect.fn("SubmissionLedger.release")(function* (claim) {
      const operation = "SubmissionLedger.release"
      const fence = ownerFence(claim)
      yield* guarded(
        operation,
        claim.submissionId,
        fencedWrite(operation, statements.relinquish, ["ready"], fence),
        (current) => Rules.relinquishRule(fence, current, "ready"),
      )
    }),

    park: Effect.fn("SubmissionLedger.park")(function* (claim, state) {
      const operation = "SubmissionLedger.park"
      const fence = ownerFence(claim)
      yield* guarded(
        operation,
        claim.submissionId,
        fencedWrite(operation, statements.relinquish, [state], fence),
        (current) => Rules.relinquishRule(fence, current, state),
      )
    }),

    transition: Effect.fn("SubmissionLedger.transition")(function* (fence, to) {
      const operation = "SubmissionLedger.transition"
      yield* requireFinite(operation, Rules.fenceInstants(fence))
      const write =
        to === "ready"
          ? fencedWrite(operation, statements.toReady, [fence._tag === "Unowned" ? fence.now : null], fence)
          : fencedWrite(operation, statements.toUnknown, [], fence)
      return yield* guarded(operation, Rules.fenceSubmissionId(fence), write, (current) =>
        Rules.transitionRule(fence, current, to),
      )
    }),

    claimJoining: Effect.fn("SubmissionLedger.claimJoining")(function* (submissionId, host) {
      const operation = "SubmissionLedger.claimJoining"
      return yield* guarded(
        operation,
        submissionId,
        first(operation, statements.claimJoining, [host, submissionId]),
        (row): Result.Result<Rules.Change, InvalidTransition | SubmissionNotFound> =>
          row === undefined ? Result.fail(Rules.notFound(submissionId)) : Rules.claimJoiningRule(row, host),
      )
    }),

    markJoined: Effect.fn("SubmissionLedger.markJoined")(function* (submissionId) {
      const operation = "SubmissionLedger.markJoined"
      return yield* guarded(
        operation,
        submissionId,
        first(operation, statements.markJoined, [submissionId]),
        (row): Result.Result<Rules.Change, InvalidTransition | SubmissionNotFound> =>
          row === undefined ? Result.fail(Rules.notFound(submissionId)) : Rules.markJoinedRule(row),
      )
    }),

    revertJoining: Effect.fn("SubmissionLedger.revertJoining")(function* (submissionId, now) {
      const operation = "SubmissionLedger.revertJoining"
      yield* requireFinite(operation, { now })
      return yield* guarded(
        operation,
        submissionId,
        first(operation, statements.revertJoining, [now, submissionId]),
        (row): Result.Result<Rules.Change, InvalidTransition | SubmissionNotFound> =>
          row === undefined ? Result.fail(Rules.notFound(submissionId)) : Rules.revertJoiningRule(row, now),
      )
    }),

    joinsOf: Effect.fn("SubmissionLedger.joinsOf")(function* (threadId, host) {
      const operation = "SubmissionLedger.joinsOf"
      const rows = yield* query(operation, statements.joinsOf, [laneKey(threadId), host])
      return yield* Effect.forEach(rows, decodeRow(operation))
    }),

    requestAbort: Effect.fn("SubmissionLedger.requestAbort")(function* (submissionId) {
      const operation = "SubmissionLedger.requestAbort"
      return yield* guarded(
        operation,
        submissionId,
        first(operation, statements.requestAbort, [submissionId]),
        (row): Result.Result<Rules.Change, SubmissionNotFound> =>
          row === undefined
            ? Result.fail(Rules.notFound(submissionId))
            : Result.succeed(Rules.requestAbortRule(row)),
      )
    }),

    reserveSettlement: Effect.fn("SubmissionLedger.reserveSettlement")(function* (fence, settlement) {
      const operation = "SubmissionLedger.reserveSettlement"
      yield* requireFinite(operation, Rules.fenceInstants(fence))
      const json = yield* encodeSettlementJson(settlement).pipe(Effect.mapError(storageError(operation)))
      return yield* guarded(
        operation,
        Rules.fenceSubmissionId(fence),
        fencedWrite(operation, statements.reserve, [json], fence, [
          settlement.submissionId,
          settlement.threadId,
        ]),
        (current) => Rules.reserveRule(fence, current, settlement),
      )
    }),

    finalizeSettlement: Effect.fn("SubmissionLedger.finalizeSettlement")(function* (submissionId) {
      const operation = "SubmissionLedger.finalizeSettlement"
      return yield* guarded(
        operation,
        submissionId,
        first(operation, statements.finalize, [submissionId]),
        (row): Result.Result<Rules.Change, InvalidTransition | SubmissionNotFound> =>
          row === undefined ? Result.fail(Rules.notFound(submissionId)) : Rules.finalizeRule(row),
      )
    }),

    checkFence: Effect.fn("SubmissionLedger.checkFence")(function* (fence) {
      yield* requireFinite("SubmissionLedger.checkFence", Rules.appendFenceInstants(fence))
      const row = yield* byId("SubmissionLedger.checkFence", Rules.fenceSubmissionId(fence))
      return yield* Effect.fromResult(Rules.verifyAppendFence(fence, row))
    }),

    // Keyset pages: no cursor stays open while the consumer writes to the ledger.
    scanNonterminal: pages("SubmissionLedger.scanNonterminal", statements.scanPage),

    scanRecoveryCandidates: pages("SubmissionLedger.scanRecoveryCandidates", statements.recoveryPage),

    // One seek per lane over the nonterminal index: lanes × O(log n), never the queued rows.
    laneHeads: Effect.gen(function* () {
      const operation = "SubmissionLedger.laneHeads"
      const heads: Array<SubmissionSnapshot> = []
      let after = ""
      while (true) {
        const [row] = yield* query(operation, statements.nextHead, [after])
        if (row === undefined) return heads
        heads.push(yield* decodeRow(operation)(row))
        after = String(row.lane_key)
      }
    }).pipe(Effect.withSpan("SubmissionLedger.laneHeads")),

    nextLaneHead: Effect.fn("SubmissionLedger.nextLaneHead")(function* (after) {
      return yield* first("SubmissionLedger.nextLaneHead", statements.nextHead, [
        after === undefined ? "" : laneKey(after),
      ])
    }),

    countAllNonterminal: Effect.map(
      query("SubmissionLedger.countAllNonterminal", statements.nonterminalTotal, []),
      (rows) => Number(rows[0]?.total ?? 0),
    ).pipe(Effect.withSpan("SubmissionLedger.countAllNonterminal")),
  }
  return service
})
