/**
 * Admission on the SQLite ledger, before any write: the row a key was admitted under (its
 * derived id, or a key an older release stored) and the verdict on a request (replay, refusal
 * or the next queue sequence). `admit` runs the verdict in its transaction; `checkAdmission`
 * and `lookupByKey` answer from it alone.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option } from "effect"
import type { KeyReads } from "./parts.ts"
import type { IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import { idCollision, inputBytesRefusal, queueDepthRefusal, replayOf, submissionIdFor } from "./admission.ts"
import type { AdmissionCheck, LedgerLimits } from "./model.ts"
import { numberOr, type SqlQueries } from "./sqlQueries.ts"
import { laneKey, statements } from "./sqlStatements.ts"
import type { StorageClock } from "../directRows.ts"

/** What the admission part needs from the opened ledger. @internal */
export interface SqlAdmissionOptions {
  readonly queries: SqlQueries
  readonly limits: LedgerLimits
  /** The stored salt of derived Submission ids. */
  readonly salt: string
  /** Whether an older release stored keys of its own. */
  readonly legacyKeys: boolean
  /** The storage's clock: a verdict stands while nothing was written. */
  readonly clock: StorageClock | undefined
}

/** A verdict to admit, with the storage's writes when it was reached. */
interface Reached {
  readonly writes: number
  readonly verdict: NewVerdict
}

interface NewVerdict {
  readonly _tag: "New"
  readonly submissionId: SubmissionId
  readonly queueSequence: number
  readonly laneEmpty: boolean
}

/** Builds the admission verdict and the key reads over an opened ledger. @internal */
export const makeSqlAdmission = ({ queries, limits, salt, legacyKeys, clock }: SqlAdmissionOptions) => {
  const { query, byId } = queries
  /**
   * The last verdict to admit. A submit checks admission before the maintenance gate and again
   * in its transaction; when no statement wrote in between, the lane and the key are as they
   * were, and the second check is the first one's answer (five rows read fewer).
   */
  let reached: Reached | undefined

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
      const [exact] = yield* query(operation, statements.laneDepth(limit), [lane, lane])
      return Number(exact?.depth ?? limit)
    })

  /**
   * The row admitted under a key: its derived id (`submissionId`, derived by the caller), or a
   * key an older release stored.
   */
  const byKey = (
    operation: string,
    threadId: ThreadId,
    idempotencyKey: IdempotencyKey,
    submissionId: SubmissionId,
  ) =>
    Effect.gen(function* () {
      const existing = yield* byId(operation, submissionId)
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
      const standing =
        reached !== undefined &&
        reached.verdict.submissionId === submissionId &&
        reached.writes === clock?.writes
          ? reached.verdict
          : undefined
      if (standing !== undefined) {
        const tooLarge = inputBytesRefusal(request, limits)
        if (tooLarge !== undefined) return yield* tooLarge
        return standing
      }
      const lane = laneKey(request.threadId)
      const used = yield* byKey(operation, request.threadId, request.idempotencyKey, submissionId)
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
      const verdict: NewVerdict = {
        _tag: "New",
        submissionId,
        queueSequence: Math.max(lastLive, numberOr(counters?.lane_tail, 0)) + 1,
        laneEmpty: heads.length === 0,
      }
      reached = clock === undefined ? undefined : { writes: clock.writes, verdict }
      return verdict
    })

  const reads: KeyReads = {
    checkAdmission: spanned("SubmissionLedger.checkAdmission")(function* (request) {
      const verdict = yield* admissionVerdict("SubmissionLedger.checkAdmission", request)
      return verdict._tag === "Replayed" ? Option.some(verdict.admission.snapshot) : Option.none()
    }),

    lookupByKey: spanned("SubmissionLedger.lookupByKey")(function* (threadId, idempotencyKey) {
      const submissionId = submissionIdFor(salt, threadId, idempotencyKey)
      return Option.fromUndefinedOr(
        yield* byKey("SubmissionLedger.lookupByKey", threadId, idempotencyKey, submissionId),
      )
    }),
  }

  return { admissionVerdict, reads }
}
