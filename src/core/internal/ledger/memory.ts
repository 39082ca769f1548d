/**
 * The in-memory Submission Ledger: the same rules as the SQLite ledger over plain maps.
 *
 * Every operation reads and writes the store inside one synchronous block, so no other fiber
 * can observe or interleave with a half-done write. The in-memory history shares the store
 * (found through `memoryStoreOf`); a ledger write that records canonical records (admission,
 * settlement, a recorded resolution) appends them in the same block.
 */
import { Effect, Option, Result, Schema, Stream } from "effect"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { SubmissionId, ThreadId } from "../../Identifiers.ts"
import { encodeEntry } from "../history/codec.ts"
import { type HistoryEntry, HistoryRecord } from "../history/model.ts"
import type { OutboxMessage, ThreadMessageReply } from "../outbox/model.ts"
import {
  idCollision,
  inputBytesRefusal,
  newReceiptId,
  newSalt,
  queueDepthRefusal,
  replayOf,
  submissionIdFor,
} from "./admission.ts"
import { Claim, InvalidTransition, LedgerError, SubmissionLedgerLimits, SubmissionSnapshot } from "./model.ts"
import type {
  Admission,
  AdmissionCheck,
  AppendFence,
  AdmissionRefused,
  AdmissionRequest,
  Fence,
  IdempotencyConflict,
  LedgerLimits,
  SubmissionNotFound,
} from "./model.ts"
import * as Rules from "./rules.ts"

interface Lane {
  lastSequence: number
  /** Nonterminal Submissions in queue order. */
  readonly nonterminal: Array<SubmissionId>
}

/** The shared state of the in-memory ledger and history. @internal */
export interface MemoryStore {
  /** Salts derived Submission ids, as the SQLite ledger's stored salt does. */
  readonly salt: string
  readonly rows: Map<SubmissionId, SubmissionSnapshot>
  readonly lanes: Map<ThreadId, Lane>
  readonly history: Map<ThreadId, Array<HistoryRecord>>
  readonly historyBySubmission: Map<SubmissionId, Array<HistoryRecord>>
  /** Every record of the Object in commit order; a record's feed position is its index + 1. */
  readonly historyFeed: Array<HistoryRecord>
  /** The outbox, in insertion order. */
  readonly outbox: Map<string, OutboxMessage>
  /** Answers the receiver remembers, by message id. */
  readonly answers: Map<string, ThreadMessageReply>
}

const stores = new WeakMap<object, MemoryStore>()

/** The store behind an in-memory ledger service, if it is one. @internal */
export const memoryStoreOf = (ledger: object): MemoryStore | undefined => stores.get(ledger)

const laneOf = (store: MemoryStore, threadId: ThreadId): Lane => {
  let lane = store.lanes.get(threadId)
  if (lane === undefined) {
    lane = { lastSequence: 0, nonterminal: [] }
    store.lanes.set(threadId, lane)
  }
  return lane
}

const headOf = (store: MemoryStore, threadId: ThreadId): SubmissionSnapshot | undefined => {
  const id = store.lanes.get(threadId)?.nonterminal[0]
  return id === undefined ? undefined : store.rows.get(id)
}

const put = (store: MemoryStore, next: SubmissionSnapshot): void => {
  store.rows.set(next.submissionId, next)
  if (next.state === "settled") {
    const order = laneOf(store, next.threadId).nonterminal
    const index = order.indexOf(next.submissionId)
    if (index >= 0) order.splice(index, 1)
  }
}

/** Applies a rule's change and returns the resulting row. */
const apply = (store: MemoryStore, change: Rules.Change): SubmissionSnapshot => {
  if (change._tag === "Unchanged") return change.snapshot
  put(store, change.next)
  return change.next
}

/** Checks an append fence against the current row, synchronously. @internal */
export const checkFenceNow = (store: MemoryStore, fence: AppendFence) =>
  Rules.verifyAppendFence(fence, store.rows.get(Rules.fenceSubmissionId(fence)))

/** Appends records of one Submission of `thread`, synchronously; the caller checked the fence. @internal */
export const appendNow = (
  store: MemoryStore,
  threadId: ThreadId,
  submissionId: SubmissionId,
  entries: ReadonlyArray<HistoryEntry>,
  now: number,
): ReadonlyArray<HistoryRecord> => {
  const records = store.history.get(threadId) ?? []
  const own = store.historyBySubmission.get(submissionId) ?? []
  const appended = entries.map((entry) => {
    const record = new HistoryRecord({
      threadId,
      sequence: records.length + 1,
      submissionId,
      recordedAt: now,
      entry,
    })
    records.push(record)
    own.push(record)
    store.historyFeed.push(record)
    return record
  })
  store.history.set(threadId, records)
  store.historyBySubmission.set(submissionId, own)
  return appended
}

const ownerFence = (claim: Claim): Fence => ({ _tag: "Owner", claim })

/** An empty store. @internal */
export const makeMemoryStore = (): MemoryStore => ({
  salt: newSalt(),
  rows: new Map(),
  lanes: new Map(),
  history: new Map(),
  historyBySubmission: new Map(),
  historyFeed: [],
  outbox: new Map(),
  answers: new Map(),
})

/**
 * Runs a read-decide-write step as one synchronous block. Building a row validates it; a
 * value that does not validate fails the operation instead of escaping as a defect.
 */
const atomically = <A, E>(
  operation: string,
  body: () => Result.Result<A, E>,
): Effect.Effect<A, E | LedgerError> =>
  Effect.suspend((): Effect.Effect<A, E | LedgerError> => {
    try {
      return Effect.fromResult(body())
    } catch (cause) {
      return Effect.fail(
        new LedgerError({ operation, message: `the write does not validate: ${String(cause)}`, cause }),
      )
    }
  })

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

/** Builds an in-memory ledger over a fresh store. @internal */
export const makeMemoryLedger = Effect.gen(function* () {
  const limits: LedgerLimits = yield* SubmissionLedgerLimits
  const store = makeMemoryStore()

  const existing = <A, E>(
    operation: string,
    submissionId: SubmissionId,
    body: (row: SubmissionSnapshot) => Result.Result<A, E>,
  ): Effect.Effect<A, E | SubmissionNotFound | LedgerError> =>
    atomically(operation, (): Result.Result<A, E | SubmissionNotFound> => {
      const row = store.rows.get(submissionId)
      return row === undefined ? Result.fail(Rules.notFound(submissionId)) : body(row)
    })

  const applied = <E>(change: Result.Result<Rules.Change, E>): Result.Result<SubmissionSnapshot, E> =>
    Result.map(change, (c) => apply(store, c))

  /** The replayed admission of a used key, a refusal, or `undefined` for a new Submission. */
  const verdict = (
    operation: string,
    request: AdmissionCheck,
  ): Result.Result<Admission | undefined, AdmissionRefused | IdempotencyConflict | LedgerError> => {
    const used = store.rows.get(submissionIdFor(store.salt, request.threadId, request.idempotencyKey))
    if (used !== undefined) {
      const collision = idCollision(operation, request, used)
      return collision === undefined ? replayOf(request, used) : Result.fail(collision)
    }
    const lane = store.lanes.get(request.threadId)
    const refusal =
      inputBytesRefusal(request, limits) ?? queueDepthRefusal(request, limits, lane?.nonterminal.length ?? 0)
    return refusal === undefined ? Result.succeed(undefined) : Result.fail(refusal)
  }

  const admitNow = (
    operation: string,
    request: AdmissionRequest,
    accepted: (row: SubmissionSnapshot) => HistoryEntry,
  ): Result.Result<Admission, AdmissionRefused | IdempotencyConflict | LedgerError> => {
    const checked = verdict(operation, request)
    if (Result.isFailure(checked) || checked.success !== undefined) {
      return checked as Result.Result<Admission, AdmissionRefused | IdempotencyConflict | LedgerError>
    }
    const submissionId = submissionIdFor(store.salt, request.threadId, request.idempotencyKey)
    const target = laneOf(store, request.threadId)
    // A join whose host ended (or is aborting) meanwhile is ordinary input.
    const host =
      request.host !== undefined && Rules.takesJoins(store.rows.get(request.host)) ? request.host : undefined
    const snapshot = new SubmissionSnapshot({
      submissionId,
      threadId: request.threadId,
      queueSequence: target.lastSequence + 1,
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
    })
    target.lastSequence = snapshot.queueSequence
    target.nonterminal.push(snapshot.submissionId)
    store.rows.set(snapshot.submissionId, snapshot)
    appendNow(store, snapshot.threadId, snapshot.submissionId, [accepted(snapshot)], request.now)
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

  // JavaScript string order, which the SQLite ledger's lane key reproduces.
  const sortedLanes = () => [...store.lanes.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

  /** Every row of a lane, settled ones included, in queue order. */
  const laneRows = (threadId: ThreadId) =>
    [...store.rows.values()]
      .filter((row) => row.threadId === threadId)
      .sort((a, b) => a.queueSequence - b.queueSequence)

  const nonterminalRows = () =>
    sortedLanes().flatMap(([, lane]) => lane.nonterminal.flatMap((id) => store.rows.get(id) ?? []))

  /** Heads of lanes with work to run, in lane order: a lane parked behind a wait is left out. */
  const runnableHeads = () =>
    sortedLanes().flatMap(([threadId]) => {
      const head = headOf(store, threadId)
      return head === undefined || Rules.isParked(head) ? [] : [head]
    })

  const service: typeof SubmissionLedger.Service = {
    admit: Effect.fn("SubmissionLedger.admit")(function* (request) {
      const operation = "SubmissionLedger.admit"
      const input = yield* Effect.try({
        try: () => JSON.parse(request.inputPayload) as Schema.Json,
        catch: (cause) => new LedgerError({ operation, message: "the input payload is not JSON", cause }),
      })
      // The host is named only when the admission takes it (see `admitNow`).
      const { host: _host, ...unhosted } = request
      const [accepted] = yield* storedEntries(operation, [Rules.acceptedEntry(unhosted, input)])
      return yield* atomically(operation, () =>
        refuse(Rules.nonFinite(operation, { now: request.now }), () =>
          admitNow(operation, request, (row) =>
            row.host === undefined
              ? (accepted as HistoryEntry)
              : { ...(accepted as HistoryEntry), host: row.host },
          ),
        ),
      )
    }),

    checkAdmission: Effect.fn("SubmissionLedger.checkAdmission")(function* (request) {
      const checked = yield* atomically("SubmissionLedger.checkAdmission", () =>
        verdict("SubmissionLedger.checkAdmission", request),
      )
      return Option.fromUndefinedOr(checked?.snapshot)
    }),

    markReady: Effect.fn("SubmissionLedger.markReady")(function* (submissionId, now) {
      const operation = "SubmissionLedger.markReady"
      return yield* existing(operation, submissionId, (row) =>
        refuse(Rules.nonFinite(operation, { now }), () => applied(Rules.markReadyRule(row, now))),
      )
    }),

    lookup: Effect.fn("SubmissionLedger.lookup")(function* (submissionId) {
      return yield* Effect.sync(() => Option.fromUndefinedOr(store.rows.get(submissionId)))
    }),

    lookupByKey: Effect.fn("SubmissionLedger.lookupByKey")(function* (threadId, idempotencyKey) {
      return yield* Effect.sync(() =>
        Option.fromUndefinedOr(store.rows.get(submissionIdFor(store.salt, threadId, idempotencyKey))),
      )
    }),

    head: Effect.fn("SubmissionLedger.head")(function* (threadId) {
      return yield* Effect.sync(() => Option.fromUndefinedOr(headOf(store, threadId)))
    }),

    countNonterminal: Effect.fn("SubmissionLedger.countNonterminal")(function* (threadId) {
      return yield* Effect.sync(() => store.lanes.get(threadId)?.nonterminal.length ?? 0)
    }),

    claim: Effect.fn("SubmissionLedger.claim")(function* (threadId, grant) {
      const operation = "SubmissionLedger.claim"
      return yield* atomically(operation, () =>
        refuse(
          Rules.nonFinite(operation, { now: grant.now, leaseDurationMillis: grant.leaseDurationMillis }),
          () => {
            const head = headOf(store, threadId)
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

    renew: Effect.fn("SubmissionLedger.renew")(function* (claim, leaseExpiresAt) {
      return yield* fenced(
        "SubmissionLedger.renew",
        ownerFence(claim),
        (row) => Rules.renewRule(claim, row, leaseExpiresAt),
        { leaseExpiresAt },
      ).pipe(Effect.map(() => new Claim({ ...claim, leaseExpiresAt })))
    }),

    release: Effect.fn("SubmissionLedger.release")(function* (claim) {
      const fence = ownerFence(claim)
      yield* fenced("SubmissionLedger.release", fence, (row) => Rules.relinquishRule(fence, row, "ready"))
    }),

    park: Effect.fn("SubmissionLedger.park")(function* (claim, state, awaiting) {
      const fence = ownerFence(claim)
      // The check and the park in one block: a child's settlement recorded first resumes the row.
      const to = (): "ready" | "suspended" | "unknown" =>
        awaiting !== undefined &&
        (store.historyBySubmission.get(claim.submissionId) ?? []).some((record) =>
          Rules.settlesChild(record.entry, awaiting.child),
        )
          ? "ready"
          : state
      const parked = yield* fenced("SubmissionLedger.park", fence, (row) =>
        Rules.relinquishRule(fence, row, to()),
      )
      return parked.state === "ready" ? "ready" : state
    }),

    transition: Effect.fn("SubmissionLedger.transition")(function* (fence, to, recorded) {
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

    markJoined: Effect.fn("SubmissionLedger.markJoined")(function* (submissionId) {
      return yield* existing("SubmissionLedger.markJoined", submissionId, (row) =>
        applied(Rules.markJoinedRule(row)),
      )
    }),

    revertJoining: Effect.fn("SubmissionLedger.revertJoining")(function* (submissionId, now) {
      const operation = "SubmissionLedger.revertJoining"
      return yield* existing(operation, submissionId, (row) =>
        refuse(Rules.nonFinite(operation, { now }), () => applied(Rules.revertJoiningRule(row, now))),
      )
    }),

    joinsOf: Effect.fn("SubmissionLedger.joinsOf")(function* (threadId, host) {
      return yield* Effect.sync(() =>
        (store.lanes.get(threadId)?.nonterminal ?? []).flatMap((id) => {
          const row = store.rows.get(id)
          return row !== undefined && row.host === host && (row.state === "joining" || row.state === "joined")
            ? [row]
            : []
        }),
      )
    }),

    requestAbort: Effect.fn("SubmissionLedger.requestAbort")(function* (submissionId) {
      return yield* existing("SubmissionLedger.requestAbort", submissionId, (row) =>
        Result.succeed(apply(store, Rules.requestAbortRule(row))),
      )
    }),

    reserveSettlement: Effect.fn("SubmissionLedger.reserveSettlement")(function* (fence, settlement) {
      return yield* fenced("SubmissionLedger.reserveSettlement", fence, (row) =>
        Rules.reserveRule(fence, row, settlement),
      )
    }),

    settle: Effect.fn("SubmissionLedger.settle")(function* (fence, settlement, preceding = []) {
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

    finalizeSettlement: Effect.fn("SubmissionLedger.finalizeSettlement")(function* (submissionId) {
      return yield* existing("SubmissionLedger.finalizeSettlement", submissionId, (row) =>
        applied(Rules.finalizeRule(row)),
      )
    }),

    checkFence: Effect.fn("SubmissionLedger.checkFence")(function* (fence) {
      const operation = "SubmissionLedger.checkFence"
      return yield* atomically(operation, () =>
        refuse(Rules.nonFinite(operation, Rules.appendFenceInstants(fence)), () =>
          checkFenceNow(store, fence),
        ),
      )
    }),

    scanNonterminal: Stream.fromIterableEffect(Effect.sync(() => nonterminalRows())),

    scanRecoveryCandidates: Stream.fromIterableEffect(
      Effect.sync(() => nonterminalRows().filter(Rules.isRecoveryCandidate)),
    ),

    laneHeads: Effect.sync(runnableHeads),

    nextLaneHead: Effect.fn("SubmissionLedger.nextLaneHead")(function* (after) {
      return yield* Effect.sync(() =>
        Option.fromUndefinedOr(runnableHeads().find((head) => after === undefined || head.threadId > after)),
      )
    }),

    countAllNonterminal: Effect.sync(() =>
      [...store.lanes.values()].reduce((sum, lane) => sum + lane.nonterminal.length, 0),
    ),

    scanAll: Stream.fromIterableEffect(
      Effect.sync(() => sortedLanes().flatMap(([threadId]) => laneRows(threadId))),
    ),

    lanePage: Effect.fn("SubmissionLedger.lanePage")(function* (threadId, options) {
      return yield* Effect.sync(() =>
        laneRows(threadId)
          .filter((row) => row.queueSequence > options.after)
          .slice(0, options.limit),
      )
    }),

    threadIds: Effect.sync(() =>
      sortedLanes()
        .filter(([, lane]) => lane.lastSequence > 0)
        .map(([threadId]) => threadId),
    ),
  }
  stores.set(service, store)
  return service
})
