/**
 * The Submission Ledger on Durable Object SQLite through `SqlClient`.
 *
 * Each transition is one `UPDATE … RETURNING` whose `WHERE` carries the fence and the allowed
 * source states, so the common path is one statement. When it returns no row, the ledger reads
 * the row and lets the shared rules name the failure (or recognise an idempotent repeat); if
 * the rules would now allow the write, another fiber changed the row in between and the
 * operation runs again. Admission, settlement and a recorded resolution also append their
 * canonical records, in the same transaction.
 */
import { Effect, Option, Result, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import {
  idCollision,
  inputBytesRefusal,
  newReceiptId,
  queueDepthRefusal,
  replayOf,
  submissionIdFor,
} from "./admission.ts"
import {
  InvalidTransition,
  LedgerError,
  Settlement,
  SubmissionLedgerLimits,
  SubmissionSnapshot,
} from "./model.ts"
import type { AdmissionCheck, Claim, Fence, SubmissionNotFound } from "./model.ts"
import { ParentLink } from "../outbox/parentLink.ts"
import * as Rules from "./rules.ts"
import { runMigrations } from "../migrations.ts"
import { META_KEYS, META_TABLE, storeMigrations } from "../schema.ts"
import { encodeEntry } from "../history/codec.ts"
import type { HistoryEntry } from "../history/model.ts"
import { rowStatements, writeRow } from "../history/sqlRows.ts"
import { decodeRow, laneKey, statements } from "./sqlStatements.ts"
import type { Row } from "./sqlStatements.ts"

const SCAN_PAGE_SIZE = 128
const RACE_RETRIES = 3

const encodeSettlementJson = Schema.encodeEffect(Schema.fromJsonString(Settlement))
const encodeParentJson = Schema.encodeEffect(Schema.fromJsonString(ParentLink))

/** @internal */
export const storageError = (operation: string) => (cause: SqlError | Schema.SchemaError) =>
  new LedgerError({ operation, message: `storage failed: ${cause.message}`, cause })

/** A failure of the canonical records a ledger write appends. */
const recordsError = (operation: string) => (cause: { readonly message: string }) =>
  new LedgerError({ operation, message: `the records did not append: ${cause.message}`, cause })

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
    : [
        fence.submissionId,
        fence.producerEpoch,
        fence.now,
        fence.incarnation ?? null,
        fence.incarnation ?? null,
      ]

const numberOr = (value: unknown, fallback: number) =>
  value === null || value === undefined ? fallback : Number(value)

/** Builds the SQLite ledger and runs its migrations. @internal */
export const makeSqlLedger = Effect.gen(function* () {
  const sql = yield* SqlClient
  const limits = yield* SubmissionLedgerLimits
  yield* runMigrations(storeMigrations).pipe(Effect.mapError(storageError("SubmissionLedger.migrate")))

  const query = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    sql.unsafe<Row>(text, params).pipe(Effect.mapError(storageError(operation)))

  const meta = (key: string) =>
    Effect.map(query("SubmissionLedger.open", statements.salt, [key]), (rows) => rows[0]?.value)
  const storedSalt = yield* meta(META_KEYS.salt)
  if (typeof storedSalt !== "string" || storedSalt === "") {
    return yield* new LedgerError({
      operation: "SubmissionLedger.open",
      message: `the Submission id salt is missing from ${META_TABLE}; Submission ids cannot be derived`,
    })
  }
  const salt = storedSalt
  const countedBefore = {
    admitted: numberOr(yield* meta(META_KEYS.admittedBefore), 0),
    settled: numberOr(yield* meta(META_KEYS.settledBefore), 0),
  }
  const legacyKeys = (yield* query("SubmissionLedger.open", statements.hasLegacyKeys, [])).length > 0

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
  ) =>
    Effect.flatMap(encodeSettlementJson(settlement).pipe(Effect.mapError(storageError(operation))), (json) =>
      fencedWrite(operation, text, [json], fence, [settlement.submissionId, settlement.threadId]),
    )

  const ownerFence = (claim: Claim): Fence => ({ _tag: "Owner", claim })

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

  const transaction = <A, E>(
    operation: string,
    effect: Effect.Effect<A, E>,
  ): Effect.Effect<A, E | LedgerError> =>
    sql
      .withTransaction(effect)
      .pipe(
        Effect.mapError((error): E | LedgerError =>
          isSqlError(error) ? storageError(operation)(error) : (error as E),
        ),
      )

  /**
   * The lane's live depth as the admission limit needs it: exact once it reaches the limit (a
   * refusal names it), otherwise some figure below the limit. The head-to-tail span of live
   * rows bounds the depth, so a lane counts rows only when its span reaches the limit.
   */
  const laneDepth = (operation: string, lane: string, head: number | undefined, last: number) =>
    Effect.gen(function* () {
      const limit = limits.maxQueueDepthPerLane
      if (head === undefined) return 0
      const span = last - head + 1
      if (span < limit) return span
      const [exact] = yield* query(operation, statements.laneDepth, [lane, limit, lane])
      return Number(exact?.depth ?? limit)
    })

  /** The row admitted under a key: its derived id, or a key an older release stored. */
  const byKey = (operation: string, threadId: ThreadId, idempotencyKey: IdempotencyKey) =>
    Effect.gen(function* () {
      const existing = yield* byId(operation, submissionIdFor(salt, threadId, idempotencyKey))
      if (existing !== undefined || !legacyKeys) return existing
      const [legacy] = yield* query(operation, statements.legacyKey, [laneKey(threadId), idempotencyKey])
      return legacy === undefined
        ? undefined
        : yield* byId(operation, String(legacy.submission_id) as SubmissionId)
    })

  /**
   * What admission would do, without writing: replay a used key (or refuse it for another
   * input), refuse a new Submission over a limit, or admit it after the lane's last sequence.
   */
  const admissionVerdict = (operation: string, request: AdmissionCheck) =>
    Effect.gen(function* () {
      const submissionId = submissionIdFor(salt, request.threadId, request.idempotencyKey)
      const lane = laneKey(request.threadId)
      const used = yield* byKey(operation, request.threadId, request.idempotencyKey)
      if (used !== undefined) {
        const collision = idCollision(operation, request, used)
        if (collision !== undefined) return yield* collision
        const admission = yield* Effect.fromResult(replayOf(request, used))
        return { _tag: "Replayed" as const, admission }
      }
      const tooLarge = inputBytesRefusal(request, limits)
      if (tooLarge !== undefined) return yield* tooLarge
      const [counters] = yield* query(operation, statements.laneCounters, [
        lane,
        lane,
        lane,
        lane,
        request.threadId,
        request.threadId,
      ])
      const heads = [counters?.open_head, counters?.parked_head].filter(
        (value) => value !== null && value !== undefined,
      )
      const lastLive = Math.max(numberOr(counters?.open_last, 0), numberOr(counters?.parked_last, 0))
      const depth = yield* laneDepth(
        operation,
        lane,
        heads.length === 0 ? undefined : Math.min(...heads.map(Number)),
        lastLive,
      )
      const full = queueDepthRefusal(request, limits, depth)
      if (full !== undefined) return yield* full
      return {
        _tag: "New" as const,
        submissionId,
        queueSequence: Math.max(lastLive, numberOr(counters?.lane_tail, 0)) + 1,
      }
    })

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

  /** The first open lane head after `after` whose lane no wait parks: skipped lanes cost two seeks. */
  const nextRunnableHead = (operation: string, after: string) =>
    Effect.gen(function* () {
      let from = after
      while (true) {
        const [row] = yield* query(operation, statements.nextOpen, [from])
        if (row === undefined) return Option.none<SubmissionSnapshot>()
        const parked = yield* query(operation, statements.parkedBefore, [row.lane_key, row.queue_sequence])
        if (parked.length === 0) return Option.some(yield* decodeRow(operation)(row))
        from = String(row.lane_key)
      }
    })

  const service: typeof SubmissionLedger.Service = {
    admit: Effect.fn("SubmissionLedger.admit")(function* (request) {
      const operation = "SubmissionLedger.admit"
      yield* requireFinite(operation, { now: request.now })
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
              new SubmissionSnapshot({
                submissionId: verdict.submissionId,
                threadId: request.threadId,
                queueSequence: verdict.queueSequence,
                idempotencyKey: request.idempotencyKey,
                agentId: request.agentId,
                agentDigest: request.agentDigest,
                inputPayload: request.inputPayload,
                inputDigest: request.inputDigest,
                receiptId: newReceiptId(),
                state: host === undefined ? "ready" : "joining",
                producerEpoch: 0,
                abortRequested: false,
                createdAt: request.now,
                readyAt: request.now,
                ...(request.parent === undefined ? {} : { parent: request.parent }),
                ...(host === undefined ? {} : { host }),
              }),
            catch: (cause) =>
              new LedgerError({
                operation,
                message: `the admission does not validate: ${String(cause)}`,
                cause,
              }),
          })
          // The acceptance record first: its sequence is where the Submission's records start.
          const [accepted] = yield* record(
            operation,
            snapshot,
            [Rules.acceptedEntry(snapshot, input)],
            request.now,
            1,
          )
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
            snapshot.createdAt,
            request.now,
            accepted?.sequence ?? null,
            parentJson,
            host ?? null,
          ])
          return { _tag: "Admitted" as const, snapshot }
        }),
      )
    }),

    checkAdmission: Effect.fn("SubmissionLedger.checkAdmission")(function* (request) {
      const verdict = yield* admissionVerdict("SubmissionLedger.checkAdmission", request)
      return verdict._tag === "Replayed" ? Option.some(verdict.admission.snapshot) : Option.none()
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
      return Option.fromUndefinedOr(yield* byKey("SubmissionLedger.lookupByKey", threadId, idempotencyKey))
    }),

    head: Effect.fn("SubmissionLedger.head")(function* (threadId) {
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

    countNonterminal: Effect.fn("SubmissionLedger.countNonterminal")(function* (threadId) {
      const lane = laneKey(threadId)
      const [row] = yield* query("SubmissionLedger.countNonterminal", statements.count, [lane, lane])
      return Number(row?.depth ?? 0)
    }),

    claim: Effect.fn("SubmissionLedger.claim")(function* (threadId, grant) {
      const operation = "SubmissionLedger.claim"
      yield* requireFinite(operation, { now: grant.now, leaseDurationMillis: grant.leaseDurationMillis })
      const lane = laneKey(threadId)
      const incarnation = grant.incarnation ?? null
      const claimed = yield* first(operation, statements.claim, [
        grant.attemptId,
        grant.ownershipToken,
        grant.now + grant.leaseDurationMillis,
        incarnation,
        lane,
        lane,
        grant.now,
        incarnation,
        incarnation,
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
        fencedWrite(operation, statements.release, [], fence),
        (current) => Rules.relinquishRule(fence, current, "ready"),
      )
    }),

    park: Effect.fn("SubmissionLedger.park")(function* (claim, state, awaiting) {
      const operation = "SubmissionLedger.park"
      const fence = ownerFence(claim)
      const end = (to: "ready" | "suspended" | "unknown") =>
        guarded(
          operation,
          claim.submissionId,
          to === "ready"
            ? fencedWrite(operation, statements.release, [], fence)
            : fencedWrite(operation, statements.park, [to], fence),
          (current) => Rules.relinquishRule(fence, current, to),
        ).pipe(Effect.as(to))
      if (awaiting === undefined) return yield* end(state)
      // The check and the park commit together: a settlement recorded before them resumes the
      // row instead, and one recorded after them finds the row parked (see `transition`).
      return yield* transaction(
        operation,
        Effect.flatMap(
          query(operation, statements.childSettled, [claim.submissionId, awaiting.child]),
          (found) => end(found.length > 0 ? "ready" : state),
        ),
      )
    }),

    transition: Effect.fn("SubmissionLedger.transition")(function* (fence, to, recorded) {
      const operation = "SubmissionLedger.transition"
      yield* requireFinite(operation, {
        ...Rules.fenceInstants(fence),
        ...(recorded === undefined ? {} : { now: recorded.now }),
      })
      const write =
        to === "ready"
          ? fencedWrite(operation, statements.toReady, [fence._tag === "Unowned" ? fence.now : null], fence)
          : fencedWrite(operation, statements.toUnknown, [], fence)
      const change = guardedChange(operation, Rules.fenceSubmissionId(fence), write, (current) =>
        Rules.transitionRule(fence, current, to),
      )
      if (recorded === undefined) return (yield* change).row
      return yield* transaction(
        operation,
        Effect.gen(function* () {
          const { row, changed } = yield* change
          if (!changed) {
            return yield* new InvalidTransition({
              submissionId: row.submissionId,
              from: row.state,
              to,
              message: `submission ${row.submissionId} is already ${row.state}: the resolution is not recorded`,
            })
          }
          yield* record(operation, row, recorded.entries, recorded.now, 0)
          return row
        }),
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
      return yield* guarded(
        operation,
        Rules.fenceSubmissionId(fence),
        settlementWrite(operation, statements.reserve, fence, settlement),
        (current) => Rules.reserveRule(fence, current, settlement),
      )
    }),

    settle: Effect.fn("SubmissionLedger.settle")(function* (fence, settlement, preceding = []) {
      const operation = "SubmissionLedger.settle"
      yield* requireFinite(operation, Rules.fenceInstants(fence))
      return yield* transaction(
        operation,
        Effect.gen(function* () {
          const { row, changed } = yield* guardedChange(
            operation,
            Rules.fenceSubmissionId(fence),
            settlementWrite(operation, statements.settle, fence, settlement),
            (current) => Rules.settleRule(fence, current, settlement),
          )
          if (changed) {
            yield* record(
              operation,
              row,
              [...preceding, Rules.settledEntry(settlement)],
              settlement.settledAt,
              0,
            )
          }
          return row
        }),
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
    scanNonterminal: pages("SubmissionLedger.scanNonterminal", statements.scanPage, (after) => [
      ...after,
      SCAN_PAGE_SIZE,
      ...after,
      SCAN_PAGE_SIZE,
      SCAN_PAGE_SIZE,
    ]),

    scanRecoveryCandidates: pages(
      "SubmissionLedger.scanRecoveryCandidates",
      statements.recoveryPage,
      (after) => [...after, SCAN_PAGE_SIZE],
    ),

    // One seek per lane with work (two for a lane parked behind a wait), never the waits.
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
    }).pipe(Effect.withSpan("SubmissionLedger.laneHeads")),

    nextLaneHead: Effect.fn("SubmissionLedger.nextLaneHead")(function* (after) {
      return yield* nextRunnableHead(
        "SubmissionLedger.nextLaneHead",
        after === undefined ? "" : laneKey(after),
      )
    }),

    countAllNonterminal: Effect.map(
      query("SubmissionLedger.countAllNonterminal", rowStatements.counts, []),
      (rows) =>
        countedBefore.admitted +
        numberOr(rows[0]?.admitted, 0) -
        countedBefore.settled -
        numberOr(rows[0]?.settled, 0),
    ).pipe(Effect.withSpan("SubmissionLedger.countAllNonterminal")),

    scanAll: Stream.paginate("", (after: string) =>
      Effect.flatMap(query("SubmissionLedger.scanAll", statements.allPage, [after, SCAN_PAGE_SIZE]), (rows) =>
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

    lanePage: Effect.fn("SubmissionLedger.lanePage")(function* (threadId, options) {
      const operation = "SubmissionLedger.lanePage"
      const rows = yield* query(operation, statements.lanePage, [threadId, options.after, options.limit])
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
    }).pipe(Effect.withSpan("SubmissionLedger.threadIds")),
  }
  return service
})
