/**
 * The in-memory Submission Ledger: the same rules as the SQLite ledger over plain maps.
 *
 * Every operation reads and writes the store inside one synchronous block, so no other fiber
 * can observe or interleave with a half-done write. The in-memory history shares the store
 * (`memoryStore.ts`, found through `memoryStoreOf`); a ledger write that records canonical
 * records (admission, settlement, a recorded resolution) appends them in the same block. The
 * transitions live here; the admission verdict and the reads mirror the SQLite ledger's parts
 * (`memoryAdmission.ts`, `memoryReads.ts`).
 */
import { spanned } from "../spanned.ts"
import { Effect, Option, Random, Result, Schema } from "effect"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { SubmissionId } from "../../Identifiers.ts"
import { encodeEntry } from "../history/codec.ts"
import type { HistoryEntry } from "../history/model.ts"
import { admittedRow, delayedJoin, submissionIdFor } from "./admission.ts"
import {
  Claim,
  InvalidTransition,
  LedgerError,
  type Ownership,
  type ParkCheck,
  SubmissionLedgerLimits,
  SubmissionLedgerRetention,
  type SubmissionSnapshot,
} from "./model.ts"
import type {
  Admission,
  AdmissionRefused,
  AdmissionRequest,
  Fence,
  IdempotencyConflict,
  LedgerLimits,
  SubmissionNotFound,
} from "./model.ts"
import { EarlyEventAgents } from "./early.ts"
import { makeMemoryAdmission } from "./memoryAdmission.ts"
import { makeMemoryEarly } from "./memoryEarly.ts"
import { makeMemoryPages } from "./memoryPages.ts"
import { makeMemoryReads } from "./memoryReads.ts"
import { makeMemoryRetention } from "./memoryRetention.ts"
import {
  appendNow,
  apply,
  atomically,
  attachStore,
  checkFenceNow,
  headOf,
  laneOf,
  makeMemoryStore,
  put,
} from "./memoryStore.ts"
import * as Rules from "./rules.ts"
import * as Timed from "./timedRules.ts"
import { incarnationId } from "./fences.ts"
import { makeMemorySchedules } from "../schedule/memory.ts"

const ownerFence = (claim: Claim): Fence => ({ _tag: "Owner", claim })

const refuse = <A, E>(
  failure: LedgerError | undefined,
  body: () => Result.Result<A, E>,
): Result.Result<A, E | LedgerError> => (failure === undefined ? body() : Result.fail(failure))

/** Entries as stored (encoded and decoded again), before the synchronous block that appends them. */
const storedEntries = (operation: string, entries: ReadonlyArray<HistoryEntry>) =>
  Effect.forEach(entries, (entry) =>
    Effect.map(encodeEntry(operation, entry), ({ stored }) => stored).pipe(
      Effect.mapError((cause) => new LedgerError({ operation, message: cause.message, cause })),
    ),
  )

/**
 * The salt of an in-memory store, from Effect's `Random`: a seeded run (the simulation) derives
 * the same Submission and message ids every time, so the order of equal-time deliveries, which
 * ties on message ids, replays too. A store that lives in memory keeps no secret worth more.
 */
const seededSalt = Effect.map(Effect.all(Array.from({ length: 4 }, () => Random.nextInt)), (words) =>
  words.map((word) => (word >>> 0).toString(16).padStart(8, "0")).join(""),
)

/** Builds an in-memory ledger over a fresh store. @internal */
export const makeMemoryLedger = Effect.gen(function* () {
  const limits: LedgerLimits = yield* SubmissionLedgerLimits
  const store = makeMemoryStore(yield* seededSalt, (yield* SubmissionLedgerRetention).enabled)
  const early = makeMemoryEarly(store, yield* EarlyEventAgents)

  const existing = <A, E>(
    operation: string,
    submissionId: SubmissionId,
    body: (row: SubmissionSnapshot) => Result.Result<A, E>,
  ): Effect.Effect<A, E | SubmissionNotFound | LedgerError> =>
    atomically(operation, (): Result.Result<A, E | SubmissionNotFound> => {
      const row = store.rows.get(submissionId)
      return row === undefined ? Result.fail(Rules.notFound(submissionId)) : body(row)
    })

  /** Whether what a park awaits is already recorded. */
  const arrived = (submissionId: SubmissionId, awaiting: ParkCheck | undefined): boolean => {
    if (awaiting === undefined) return false
    const records = store.historyBySubmission.get(submissionId) ?? []
    // Like the SQL check: only records after `after`, when given.
    const { after } = awaiting
    const since = after === undefined ? records : records.filter((record) => record.sequence > after)
    if ("child" in awaiting) return since.some((record) => Rules.settlesChild(record.entry, awaiting.child))
    const received = since.filter((record) => Rules.receivesEvent(record.entry, awaiting.event)).length
    return received > (after === undefined ? awaiting.seen : 0)
  }

  const applied = <E>(change: Result.Result<Rules.Change, E>): Result.Result<SubmissionSnapshot, E> =>
    Result.map(change, (c) => apply(store, c))

  const { verdict, reads: admissionReads } = makeMemoryAdmission(store, limits)

  const admitNow = (
    operation: string,
    request: AdmissionRequest,
    accepted: (row: SubmissionSnapshot) => HistoryEntry,
  ): Result.Result<Admission, AdmissionRefused | IdempotencyConflict | LedgerError> => {
    const checked = verdict(operation, request)
    if (Result.isFailure(checked) || checked.success !== undefined) {
      return checked as Result.Result<Admission, AdmissionRefused | IdempotencyConflict | LedgerError>
    }
    const delayed = delayedJoin(operation, request)
    if (delayed !== undefined) return Result.fail(delayed)
    const submissionId = submissionIdFor(store.salt, request.threadId, request.idempotencyKey)
    const target = laneOf(store, request.threadId)
    // A join whose host ended (or is aborting) meanwhile is ordinary input.
    const host =
      request.host !== undefined && Rules.takesJoins(store.rows.get(request.host)) ? request.host : undefined
    const snapshot = admittedRow(request, {
      submissionId,
      queueSequence: target.lastSequence + 1,
      laneEmpty: target.nonterminal.length === 0,
      ...(host === undefined ? {} : { host }),
    })
    // Taken first: a kept payload that does not parse throws out of the block before any write.
    const arrived = early.takeNow(snapshot)
    target.lastSequence = snapshot.queueSequence
    target.nonterminal.push(snapshot.submissionId)
    put(store, snapshot)
    appendNow(store, snapshot.threadId, snapshot.submissionId, [accepted(snapshot), ...arrived], request.now)
    return Result.succeed({ _tag: "Admitted", snapshot })
  }

  const fenced = <E>(
    operation: string,
    fence: Fence,
    rule: (row: SubmissionSnapshot | undefined) => Result.Result<Rules.Change, E>,
    instants: Readonly<Record<string, number>> = {},
  ) =>
    atomically(operation, () =>
      refuse(Rules.nonFinite(operation, { ...Rules.fenceInstants(fence), ...instants }), () =>
        applied(rule(store.rows.get(Rules.fenceSubmissionId(fence)))),
      ),
    )

  /**
   * An admission made ready outside the synchronous block (its acceptance record encoded), and
   * the block that writes it: a schedule's advance runs that block inside its own.
   */
  const prepareAdmission = Effect.fnUntraced(function* (request: AdmissionRequest) {
    const operation = "SubmissionLedger.admit"
    const input = yield* Effect.try({
      try: () => JSON.parse(request.inputPayload) as Schema.Json,
      catch: (cause) => new LedgerError({ operation, message: "the input payload is not JSON", cause }),
    })
    // The host is named only when the admission takes it (see `admitNow`).
    const { host: _host, ...unhosted } = request
    const [accepted] = yield* storedEntries(operation, [Rules.acceptedEntry(unhosted, input, request)])
    return (): Result.Result<Admission, AdmissionRefused | IdempotencyConflict | LedgerError> => {
      try {
        return refuse(Rules.nonFinite(operation, { now: request.now }), () =>
          admitNow(operation, request, (row) =>
            row.host === undefined
              ? (accepted as HistoryEntry)
              : { ...(accepted as HistoryEntry), host: row.host },
          ),
        )
      } catch (cause) {
        return Result.fail(
          new LedgerError({ operation, message: `the write does not validate: ${String(cause)}`, cause }),
        )
      }
    }
  })

  const service: typeof SubmissionLedger.Service = {
    beginIncarnation: Effect.sync(() => incarnationId(++store.incarnations)),

    admit: spanned("SubmissionLedger.admit")(function* (request) {
      const block = yield* prepareAdmission(request)
      return yield* Effect.fromResult(block())
    }),

    keepEarly: spanned("SubmissionLedger.keepEarly")(function* (event) {
      const operation = "SubmissionLedger.keepEarly"
      return yield* atomically(operation, () =>
        refuse(Rules.nonFinite(operation, { now: event.now }), () =>
          early.keepNow(
            event,
            store.rows.get(submissionIdFor(store.salt, event.threadId, event.idempotencyKey)),
          ),
        ),
      )
    }),

    earlyEvents: Effect.sync(() => early.viewNow()),

    forgetEarly: spanned("SubmissionLedger.forgetEarly")(function* (threadId, idempotencyKey) {
      yield* Effect.sync(() => early.forgetNow(threadId, idempotencyKey))
    }),

    markReady: spanned("SubmissionLedger.markReady")(function* (submissionId, now) {
      const operation = "SubmissionLedger.markReady"
      return yield* existing(operation, submissionId, (row) =>
        refuse(Rules.nonFinite(operation, { now }), () => applied(Rules.markReadyRule(row, now))),
      )
    }),

    claim: spanned("SubmissionLedger.claim")(function* (threadId, grant) {
      const operation = "SubmissionLedger.claim"
      return yield* atomically(operation, () =>
        refuse(
          Rules.nonFinite(operation, { now: grant.now, leaseDurationMillis: grant.leaseDurationMillis }),
          () => {
            const head = headOf(store, threadId)
            // A parked head (a wait, or a row the due path claimed in place) blocks its lane.
            if (head === undefined || !Rules.isClaimable(head, grant.now, grant.incarnation)) {
              return Result.succeed(Option.none())
            }
            const next = Rules.claimRow(head, grant)
            put(store, next)
            return Result.succeed(
              Option.fromUndefinedOr(next.ownership).pipe(Option.map((o) => Rules.claimOf(next, o))),
            )
          },
        ),
      )
    }),

    renew: spanned("SubmissionLedger.renew")(function* (claim, leaseExpiresAt) {
      return yield* fenced(
        "SubmissionLedger.renew",
        ownerFence(claim),
        (row) => Rules.renewRule(claim, row, leaseExpiresAt),
        { leaseExpiresAt },
      ).pipe(Effect.map(() => new Claim({ ...claim, leaseExpiresAt })))
    }),

    release: spanned("SubmissionLedger.release")(function* (claim) {
      const fence = ownerFence(claim)
      yield* fenced("SubmissionLedger.release", fence, (row) => Rules.relinquishRule(fence, row, "ready"))
    }),

    park: spanned("SubmissionLedger.park")(function* (claim, state, awaiting, wait) {
      const fence = ownerFence(claim)
      // The check and the park in one block: a child's settlement recorded first resumes the row.
      const to = (): "ready" | "suspended" | "unknown" =>
        arrived(claim.submissionId, awaiting) ? "ready" : state
      const parked = yield* fenced("SubmissionLedger.park", fence, (row) =>
        Rules.relinquishRule(fence, row, to(), wait),
      )
      return parked.state === state ? state : "ready"
    }),

    parkTimed: spanned("SubmissionLedger.parkTimed")(function* (fence, park) {
      const operation = "SubmissionLedger.parkTimed"
      const entries = yield* storedEntries(operation, park.entries ?? [])
      return yield* atomically(operation, () =>
        refuse(
          Rules.nonFinite(operation, { ...Rules.fenceInstants(fence), dueAt: park.dueAt, now: park.now }),
          () => {
            const submissionId = Rules.fenceSubmissionId(fence)
            const dueAt = arrived(submissionId, park.awaiting) ? park.now : park.dueAt
            return Result.map(
              Timed.parkTimedRule(fence, store.rows.get(submissionId), dueAt, park.wait),
              (change) => {
                const row = apply(store, change)
                if (entries.length > 0) appendNow(store, row.threadId, row.submissionId, entries, park.now)
                return row
              },
            )
          },
        ),
      )
    }),

    claimDue: spanned("SubmissionLedger.claimDue")(function* (submissionId, grant) {
      const operation = "SubmissionLedger.claimDue"
      return yield* atomically(operation, () =>
        refuse(
          Rules.nonFinite(operation, { now: grant.now, leaseDurationMillis: grant.leaseDurationMillis }),
          () =>
            Result.succeed(
              Option.map(Timed.claimDueRule(store.rows.get(submissionId), grant), (next) => {
                put(store, next)
                return Rules.claimOf(next, next.ownership as Ownership)
              }),
            ),
        ),
      )
    }),

    wake: spanned("SubmissionLedger.wake")(function* (fence, dueAt, recorded) {
      const operation = "SubmissionLedger.wake"
      const entries = yield* storedEntries(operation, recorded?.entries ?? [])
      return yield* atomically(operation, () =>
        refuse(
          Rules.nonFinite(operation, { dueAt, ...(recorded === undefined ? {} : { now: recorded.now }) }),
          () =>
            Result.map(Timed.wakeRule(fence, store.rows.get(fence.submissionId), dueAt), (change) => {
              const row = apply(store, change)
              if (recorded !== undefined && entries.length > 0)
                appendNow(store, row.threadId, row.submissionId, entries, recorded.now)
              return row
            }),
        ),
      )
    }),

    deferHead: spanned("SubmissionLedger.deferHead")(function* (fence) {
      return yield* fenced("SubmissionLedger.deferHead", fence, (row) =>
        Timed.deferHeadRule(
          fence,
          row,
          row !== undefined && headOf(store, row.threadId)?.submissionId === row.submissionId,
        ),
      )
    }),

    transition: spanned("SubmissionLedger.transition")(function* (fence, to, recorded) {
      const operation = "SubmissionLedger.transition"
      if (recorded === undefined) {
        return yield* fenced(operation, fence, (row) => Rules.transitionRule(fence, row, to))
      }
      const entries = yield* storedEntries(operation, recorded.entries)
      return yield* atomically(operation, () =>
        refuse(Rules.nonFinite(operation, { ...Rules.fenceInstants(fence), now: recorded.now }), () =>
          Result.flatMap(
            Rules.transitionRule(fence, store.rows.get(Rules.fenceSubmissionId(fence)), to),
            (change): Result.Result<SubmissionSnapshot, InvalidTransition> => {
              if (change._tag === "Unchanged") {
                const row = change.snapshot
                return Result.fail(
                  new InvalidTransition({
                    submissionId: row.submissionId,
                    from: row.state,
                    to,
                    message: `submission ${row.submissionId} is already ${row.state}: the resolution is not recorded`,
                  }),
                )
              }
              const row = apply(store, change)
              appendNow(store, row.threadId, row.submissionId, entries, recorded.now)
              return Result.succeed(row)
            },
          ),
        ),
      )
    }),

    markJoined: spanned("SubmissionLedger.markJoined")(function* (submissionId) {
      return yield* existing("SubmissionLedger.markJoined", submissionId, (row) =>
        applied(Rules.markJoinedRule(row)),
      )
    }),

    revertJoining: spanned("SubmissionLedger.revertJoining")(function* (submissionId, now) {
      const operation = "SubmissionLedger.revertJoining"
      return yield* existing(operation, submissionId, (row) =>
        refuse(Rules.nonFinite(operation, { now }), () => applied(Rules.revertJoiningRule(row, now))),
      )
    }),

    requestAbort: spanned("SubmissionLedger.requestAbort")(function* (submissionId) {
      return yield* existing("SubmissionLedger.requestAbort", submissionId, (row) =>
        Result.succeed(apply(store, Rules.requestAbortRule(row))),
      )
    }),

    reserveSettlement: spanned("SubmissionLedger.reserveSettlement")(function* (fence, settlement) {
      return yield* fenced("SubmissionLedger.reserveSettlement", fence, (row) =>
        Rules.reserveRule(fence, row, settlement),
      )
    }),

    settle: spanned("SubmissionLedger.settle")(function* (fence, settlement, preceding = []) {
      const operation = "SubmissionLedger.settle"
      const entries = yield* storedEntries(operation, [...preceding, Rules.settledEntry(settlement)])
      return yield* atomically(operation, () =>
        refuse(Rules.nonFinite(operation, Rules.fenceInstants(fence)), () =>
          Result.map(
            Rules.settleRule(fence, store.rows.get(Rules.fenceSubmissionId(fence)), settlement),
            (change) => {
              const row = apply(store, change)
              if (change._tag === "Update") {
                appendNow(store, row.threadId, row.submissionId, entries, settlement.settledAt)
              }
              return row
            },
          ),
        ),
      )
    }),

    finalizeSettlement: spanned("SubmissionLedger.finalizeSettlement")(function* (submissionId) {
      return yield* existing("SubmissionLedger.finalizeSettlement", submissionId, (row) =>
        applied(Rules.finalizeRule(row)),
      )
    }),

    // Untraced like the point reads: it runs before every append.
    checkFence: Effect.fnUntraced(function* (fence) {
      const operation = "SubmissionLedger.checkFence"
      return yield* atomically(operation, () =>
        refuse(Rules.nonFinite(operation, Rules.appendFenceInstants(fence)), () =>
          checkFenceNow(store, fence),
        ),
      )
    }),

    ...admissionReads,
    ...makeMemorySchedules(store.schedules, prepareAdmission),
    ...makeMemoryReads(store),
    ...makeMemoryRetention(store, early.forgetNow),
    ...makeMemoryPages(store),
  }
  attachStore(service, store)
  return service
})
