/**
 * The Submission Ledger on Durable Object SQLite through `SqlClient`.
 *
 * Each transition is one `UPDATE … RETURNING` whose `WHERE` carries the fence and the allowed
 * source states, so the common path is one statement. When it returns no row, the ledger reads
 * the row and lets the shared rules name the failure (or recognise an idempotent repeat); if
 * the rules would now allow the write, another fiber changed the row in between and the
 * operation runs again. Admission, settlement and a recorded resolution also append their
 * canonical records, in the same transaction. The transitions live here; the admission verdict
 * (`sqlAdmission.ts`), the reads (`sqlReads.ts`) and the guarded writes (`sqlWrites.ts`) are
 * built over the query helpers of `sqlQueries.ts`.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option, Result } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError } from "effect/sql/SqlError"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import { InvalidTransition, LedgerError, SubmissionLedgerLimits, SubmissionLedgerRetention } from "./model.ts"
import type { ParkCheck, SubmissionNotFound } from "./model.ts"
import type { SubmissionId } from "../../Identifiers.ts"
import * as Rules from "./rules.ts"
import * as Timed from "./timedRules.ts"
import { incarnationId } from "./fences.ts"
import { runMigrations } from "../migrations.ts"
import { storageClock } from "../directRows.ts"
import { freshStoreSchema, META_KEYS, META_TABLE, storeMigrations } from "../schema.ts"
import { EarlyEventAgents } from "./early.ts"
import { makeSqlAdmission } from "./sqlAdmission.ts"
import { encodeWait, makeSqlAdmit } from "./sqlAdmit.ts"
import { makeSqlSchedules } from "../schedule/sql.ts"
import { makeSqlQueries, numberOr, storageError } from "./sqlQueries.ts"
import { nothingStored } from "../nothingStored.ts"
import { makeSqlPages } from "./sqlPages.ts"
import { makeSqlReads } from "./sqlReads.ts"
import { makeSqlEarly } from "./sqlEarly.ts"
import { makeSqlRetention, openRetention } from "./sqlRetention.ts"
import { laneKey, statements } from "./sqlStatements.ts"
import { claimFrom, makeSqlWrites, ownerFence, requireFinite } from "./sqlWrites.ts"

/** Builds the SQLite ledger and runs its migrations. @internal */
export const makeSqlLedger = Effect.gen(function* () {
  const sql = yield* SqlClient
  const limits = yield* SubmissionLedgerLimits
  const earlyAgents = yield* EarlyEventAgents
  const retention = yield* SubmissionLedgerRetention
  yield* runMigrations(storeMigrations, freshStoreSchema).pipe(
    Effect.mapError(storageError("SubmissionLedger.migrate")),
  )

  const queries = makeSqlQueries(sql)
  const { query, first, byId } = queries

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
  // Read once: while no timed wait is stored, the due reads run no statement. Every write that
  // can store one clears it and counts itself; `earliestDue` sets it again when it finds none
  // and no such write began meanwhile (its fiber may yield between its statement and its answer).
  const timers = nothingStored((yield* query("SubmissionLedger.open", statements.anyDue, [])).length === 0)

  const { guardedChange, guarded, fencedWrite, settlementWrite, record } = makeSqlWrites(sql, queries)

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

  /** Whether what a park awaits is already recorded; in the caller's transaction. */
  const arrived = (operation: string, submissionId: SubmissionId, awaiting: ParkCheck) =>
    "child" in awaiting
      ? Effect.map(
          query(operation, statements.childSettled, [awaiting.after ?? 0, submissionId, awaiting.child]),
          (found) => found.length > 0,
        )
      : Effect.map(
          query(operation, statements.eventsReceived, [awaiting.after ?? 0, submissionId, awaiting.event]),
          (found) => Number(found[0]?.found ?? 0) > (awaiting.after === undefined ? awaiting.seen : 0),
        )

  /**
   * Incarnations are counted when they first stamp a Claim, not when they begin: an incarnation
   * that only answers reads writes no row. One that began after another recorded its number
   * takes the next, so it sorts after every incarnation whose Claims it can meet; two that began
   * before either recorded share a number and see each other's Claims as live (only the lease
   * ends them), the safe side of the rule.
   */
  const clock = storageClock(sql)
  // What was recorded counts only while no rollback could have undone it.
  const incarnations = { issued: 0, recorded: 0, rollbacks: clock?.rollbacks ?? 0 }
  const recordIncarnation = (operation: string, incarnation: string | undefined) => {
    const sequence = incarnation === undefined ? Number.NaN : Number(incarnation)
    const standing = clock === undefined || clock.rollbacks === incarnations.rollbacks
    if (!Number.isSafeInteger(sequence) || (standing && sequence <= incarnations.recorded)) return Effect.void
    return Effect.map(
      query(operation, statements.recordIncarnation, [META_KEYS.incarnations, String(sequence)]),
      () => {
        incarnations.recorded = sequence
        incarnations.rollbacks = clock?.rollbacks ?? 0
      },
    )
  }

  yield* openRetention(queries, {
    enabled: retention.enabled,
    dated: (yield* meta(META_KEYS.settledDated)) !== undefined,
    transaction,
  })

  const admission = makeSqlAdmission({ queries, limits, salt, legacyKeys, clock })
  const { admissionVerdict } = admission
  const early = makeSqlEarly(sql, { salt, agents: earlyAgents })

  const service: typeof SubmissionLedger.Service = {
    beginIncarnation: Effect.map(meta(META_KEYS.incarnations), (stored) => {
      incarnations.issued = Math.max(numberOr(stored, 0), incarnations.issued) + 1
      return incarnationId(incarnations.issued)
    }),

    admit: makeSqlAdmit({ queries, transaction, admissionVerdict, record, timers, takeEarly: early.take }),

    keepEarly: spanned("SubmissionLedger.keepEarly")(function* (event) {
      yield* requireFinite("SubmissionLedger.keepEarly", { now: event.now })
      return yield* early.keep((threadId, key) => service.lookupByKey(threadId, key), event)
    }),

    earlyEvents: early.view,

    forgetEarly: spanned("SubmissionLedger.forgetEarly")(function* (threadId, idempotencyKey) {
      yield* early.forgetKey("SubmissionLedger.forgetEarly", threadId, idempotencyKey)
    }),

    markReady: spanned("SubmissionLedger.markReady")(function* (submissionId, now) {
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

    claim: spanned("SubmissionLedger.claim")(function* (threadId, grant) {
      const operation = "SubmissionLedger.claim"
      yield* requireFinite(operation, { now: grant.now, leaseDurationMillis: grant.leaseDurationMillis })
      const lane = laneKey(threadId)
      yield* recordIncarnation(operation, grant.incarnation)
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
        grant.now,
      ])
      return Option.isNone(claimed) ? Option.none() : Option.some(yield* claimFrom(operation)(claimed.value))
    }),

    renew: spanned("SubmissionLedger.renew")(function* (claim, leaseExpiresAt) {
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

    release: spanned("SubmissionLedger.release")(function* (claim) {
      const operation = "SubmissionLedger.release"
      const fence = ownerFence(claim)
      yield* guarded(
        operation,
        claim.submissionId,
        fencedWrite(operation, statements.release, [], fence),
        (current) => Rules.relinquishRule(fence, current, "ready"),
      )
    }),

    park: spanned("SubmissionLedger.park")(function* (claim, state, awaiting, wait) {
      const operation = "SubmissionLedger.park"
      const fence = ownerFence(claim)
      const waitJson = wait === undefined ? null : yield* encodeWait(operation, wait)
      // A row claimed in place has its lane parked already: leave the lane's entry as it is.
      const parkStatement = claim.dueAt === undefined ? statements.park : statements.parkInPlace
      const end = (to: "ready" | "suspended" | "unknown") =>
        guarded(
          operation,
          claim.submissionId,
          to === "ready"
            ? fencedWrite(operation, statements.release, [], fence)
            : fencedWrite(operation, parkStatement, [to, waitJson], fence),
          (current) => Rules.relinquishRule(fence, current, to, wait),
        ).pipe(Effect.as(to))
      if (awaiting === undefined) return yield* end(state)
      // The check and the park commit together: a settlement recorded before them resumes the
      // row instead, and one recorded after them finds the row parked (see `transition`).
      return yield* transaction(
        operation,
        Effect.flatMap(arrived(operation, claim.submissionId, awaiting), (found) =>
          end(found ? "ready" : state),
        ),
      )
    }),

    parkTimed: spanned("SubmissionLedger.parkTimed")(function* (fence, park) {
      const operation = "SubmissionLedger.parkTimed"
      yield* requireFinite(operation, { ...Rules.fenceInstants(fence), dueAt: park.dueAt, now: park.now })
      const waitJson = yield* encodeWait(operation, park.wait)
      const submissionId = Rules.fenceSubmissionId(fence)
      const step = fence._tag === "Unowned" ? 1 : 0
      const write = (dueAt: number) => {
        const parked = fencedWrite(operation, statements.parkTimedParked, [dueAt, waitJson, step], fence)
        const open = fencedWrite(operation, statements.parkTimedOpen, [dueAt, waitJson, step], fence)
        // An owner knows which lane status its Claim left; a recovery fence tries both.
        return fence._tag === "Owner"
          ? fence.claim.dueAt === undefined
            ? open
            : parked
          : Effect.flatMap(parked, (row) => (Option.isSome(row) ? Effect.succeed(row) : open))
      }
      timers.writing()
      return yield* transaction(
        operation,
        Effect.gen(function* () {
          const found =
            park.awaiting !== undefined && (yield* arrived(operation, submissionId, park.awaiting))
          const dueAt = found ? park.now : park.dueAt
          const row = yield* guarded(operation, submissionId, write(dueAt), (current) =>
            Timed.parkTimedRule(fence, current, dueAt, park.wait),
          )
          if (park.entries !== undefined && park.entries.length > 0)
            yield* record(operation, row, park.entries, park.now, 0)
          return row
        }),
      )
    }),

    claimDue: spanned("SubmissionLedger.claimDue")(function* (submissionId, grant) {
      const operation = "SubmissionLedger.claimDue"
      yield* requireFinite(operation, { now: grant.now, leaseDurationMillis: grant.leaseDurationMillis })
      yield* recordIncarnation(operation, grant.incarnation)
      const incarnation = grant.incarnation ?? null
      const owner = [
        grant.attemptId,
        grant.ownershipToken,
        grant.now + grant.leaseDurationMillis,
        incarnation,
      ]
      const due = yield* first(operation, statements.claimDue, [...owner, submissionId, grant.now])
      const claimed = Option.isSome(due)
        ? due
        : yield* first(operation, statements.takeOverDue, [
            ...owner,
            grant.now,
            submissionId,
            grant.now,
            incarnation,
            incarnation,
          ])
      return Option.isNone(claimed) ? Option.none() : Option.some(yield* claimFrom(operation)(claimed.value))
    }),

    wake: spanned("SubmissionLedger.wake")(function* (fence, dueAt, recorded) {
      const operation = "SubmissionLedger.wake"
      yield* requireFinite(operation, { dueAt, ...(recorded === undefined ? {} : { now: recorded.now }) })
      timers.writing()
      const write = first(operation, statements.wake, [
        dueAt,
        fence.submissionId,
        fence.producerEpoch,
        fence.state,
      ])
      const change = guardedChange(operation, fence.submissionId, write, (current) =>
        Timed.wakeRule(fence, current, dueAt),
      )
      if (recorded === undefined || recorded.entries.length === 0) return (yield* change).row
      return yield* transaction(
        operation,
        Effect.gen(function* () {
          const { row } = yield* change
          yield* record(operation, row, recorded.entries, recorded.now, 0)
          return row
        }),
      )
    }),

    deferHead: spanned("SubmissionLedger.deferHead")(function* (fence) {
      const operation = "SubmissionLedger.deferHead"
      yield* requireFinite(operation, Rules.fenceInstants(fence))
      timers.writing()
      return yield* transaction(
        operation,
        guarded(
          operation,
          fence.submissionId,
          fencedWrite(operation, statements.deferHead, [], fence, [fence.now]),
          (current) => {
            const verdict = Timed.deferHeadRule(fence, current, true)
            // The head check is the statement's: a row that passes every other rule has an open
            // row before it.
            return Result.isSuccess(verdict) && verdict.success._tag === "Update"
              ? Result.fail(
                  new InvalidTransition({
                    submissionId: fence.submissionId,
                    from: "ready",
                    to: "waiting",
                    message: `${fence.submissionId} is not a queued lane head`,
                  }),
                )
              : verdict
          },
        ),
      )
    }),

    transition: spanned("SubmissionLedger.transition")(function* (fence, to, recorded) {
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

    markJoined: spanned("SubmissionLedger.markJoined")(function* (submissionId) {
      const operation = "SubmissionLedger.markJoined"
      return yield* guarded(
        operation,
        submissionId,
        first(operation, statements.markJoined, [submissionId]),
        (row): Result.Result<Rules.Change, InvalidTransition | SubmissionNotFound> =>
          row === undefined ? Result.fail(Rules.notFound(submissionId)) : Rules.markJoinedRule(row),
      )
    }),

    revertJoining: spanned("SubmissionLedger.revertJoining")(function* (submissionId, now) {
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

    requestAbort: spanned("SubmissionLedger.requestAbort")(function* (submissionId) {
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

    reserveSettlement: spanned("SubmissionLedger.reserveSettlement")(function* (fence, settlement) {
      const operation = "SubmissionLedger.reserveSettlement"
      yield* requireFinite(operation, Rules.fenceInstants(fence))
      return yield* guarded(
        operation,
        Rules.fenceSubmissionId(fence),
        settlementWrite(operation, statements.reserve, fence, settlement),
        (current) => Rules.reserveRule(fence, current, settlement),
      )
    }),

    settle: spanned("SubmissionLedger.settle")(function* (fence, settlement, preceding = []) {
      const operation = "SubmissionLedger.settle"
      yield* requireFinite(operation, Rules.fenceInstants(fence))
      return yield* transaction(
        operation,
        Effect.gen(function* () {
          const { row, changed } = yield* guardedChange(
            operation,
            Rules.fenceSubmissionId(fence),
            settlementWrite(operation, statements.settle, fence, settlement, [
              // Undated while retention is off: the row then adds no retention index entry.
              retention.enabled ? settlement.settledAt : null,
              settlement.threadId,
              settlement.threadId,
            ]),
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

    finalizeSettlement: spanned("SubmissionLedger.finalizeSettlement")(function* (submissionId) {
      const operation = "SubmissionLedger.finalizeSettlement"
      return yield* guarded(
        operation,
        submissionId,
        first(operation, statements.finalize, [retention.enabled ? 1 : 0, submissionId]),
        (row): Result.Result<Rules.Change, InvalidTransition | SubmissionNotFound> =>
          row === undefined ? Result.fail(Rules.notFound(submissionId)) : Rules.finalizeRule(row),
      )
    }),

    // Untraced like the point reads: it runs before every append.
    checkFence: Effect.fnUntraced(function* (fence) {
      yield* requireFinite("SubmissionLedger.checkFence", Rules.appendFenceInstants(fence))
      const row = yield* byId("SubmissionLedger.checkFence", Rules.fenceSubmissionId(fence))
      return yield* Effect.fromResult(Rules.verifyAppendFence(fence, row))
    }),

    ...admission.reads,
    ...makeSqlSchedules({ sql, queries, admit: (request) => service.admit(request) }),
    ...makeSqlReads(queries, countedBefore, timers),
    ...makeSqlRetention(queries, { legacyKeys, transaction, clock, forgetEarly: early.forgetKey }),
    ...makeSqlPages(queries),
  }
  return service
})
