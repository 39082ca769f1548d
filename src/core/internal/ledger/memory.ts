/**
 * The in-memory Submission Ledger: the same rules as the SQLite ledger over plain maps.
 *
 * Every operation reads and writes the store inside one synchronous block, so no other fiber
 * can observe or interleave with a half-done write. The in-memory history shares the store
 * (found through `memoryStoreOf`) to append atomically with its fence check.
 */
import { Effect, Option, Result, Stream } from "effect"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import type { HistoryRecord } from "../history/model.ts"
import type { OutboxMessage, ThreadMessageReply } from "../outbox/model.ts"
import { inputBytesRefusal, newAdmissionIds, queueDepthRefusal, replayOf } from "./admission.ts"
import { Claim, LedgerError, SubmissionLedgerLimits, SubmissionSnapshot } from "./model.ts"
import type {
  Admission,
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
  readonly keys: Map<IdempotencyKey, SubmissionId>
}

/** The shared state of the in-memory ledger and history. @internal */
export interface MemoryStore {
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
    lane = { lastSequence: 0, nonterminal: [], keys: new Map() }
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

const ownerFence = (claim: Claim): Fence => ({ _tag: "Owner", claim })

/** An empty store. @internal */
export const makeMemoryStore = (): MemoryStore => ({
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

  const admitNow = (
    request: AdmissionRequest,
    ids: ReturnType<typeof newAdmissionIds>,
  ): Result.Result<Admission, AdmissionRefused | IdempotencyConflict> => {
    const lane = store.lanes.get(request.threadId)
    const usedId = lane?.keys.get(request.idempotencyKey)
    const used = usedId === undefined ? undefined : store.rows.get(usedId)
    if (used !== undefined) return replayOf(request, used)
    const refusal =
      inputBytesRefusal(request, limits) ?? queueDepthRefusal(request, limits, lane?.nonterminal.length ?? 0)
    if (refusal !== undefined) return Result.fail(refusal)
    const target = laneOf(store, request.threadId)
    const snapshot = new SubmissionSnapshot({
      submissionId: ids.submissionId,
      threadId: request.threadId,
      queueSequence: target.lastSequence + 1,
      idempotencyKey: request.idempotencyKey,
      agentId: request.agentId,
      agentDigest: request.agentDigest,
      inputPayload: request.inputPayload,
      inputDigest: request.inputDigest,
      receiptId: ids.receiptId,
      state: "admitted",
      producerEpoch: 0,
      abortRequested: false,
      createdAt: request.now,
      ...(request.parent === undefined ? {} : { parent: request.parent }),
      ...(request.host === undefined ? {} : { host: request.host }),
    })
    target.lastSequence = snapshot.queueSequence
    target.nonterminal.push(snapshot.submissionId)
    target.keys.set(snapshot.idempotencyKey, snapshot.submissionId)
    store.rows.set(snapshot.submissionId, snapshot)
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

  const nonterminalRows = () =>
    sortedLanes().flatMap(([, lane]) => lane.nonterminal.flatMap((id) => store.rows.get(id) ?? []))

  const service: typeof SubmissionLedger.Service = {
    admit: Effect.fn("SubmissionLedger.admit")(function* (request) {
      const operation = "SubmissionLedger.admit"
      const ids = newAdmissionIds()
      return yield* atomically(operation, () =>
        refuse(Rules.nonFinite(operation, { now: request.now }), () => admitNow(request, ids)),
      )
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
      return yield* Effect.sync(() => {
        const id = store.lanes.get(threadId)?.keys.get(idempotencyKey)
        return Option.fromUndefinedOr(id === undefined ? undefined : store.rows.get(id))
      })
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
        refuse(Rules.nonFinite(operation, { now: grant.now, leaseDuration: grant.leaseDuration }), () => {
          const head = headOf(store, threadId)
          if (head === undefined || !Rules.isClaimable(head, grant.now)) return Result.succeed(Option.none())
          const next = Rules.claimRow(head, grant)
          put(store, next)
          return Result.succeed(
            Option.fromUndefinedOr(next.ownership).pipe(Option.map((o) => Rules.claimOf(next, o))),
          )
        }),
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

    park: Effect.fn("SubmissionLedger.park")(function* (claim, state) {
      const fence = ownerFence(claim)
      yield* fenced("SubmissionLedger.park", fence, (row) => Rules.relinquishRule(fence, row, state))
    }),

    transition: Effect.fn("SubmissionLedger.transition")(function* (fence, to) {
      return yield* fenced("SubmissionLedger.transition", fence, (row) =>
        Rules.transitionRule(fence, row, to),
      )
    }),

    claimJoining: Effect.fn("SubmissionLedger.claimJoining")(function* (submissionId, host) {
      return yield* existing("SubmissionLedger.claimJoining", submissionId, (row) =>
        applied(Rules.claimJoiningRule(row, host)),
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

    laneHeads: Effect.sync(() =>
      sortedLanes().flatMap(([, lane]) => {
        const head = lane.nonterminal[0]
        return head === undefined ? [] : (store.rows.get(head) ?? [])
      }),
    ),

    nextLaneHead: Effect.fn("SubmissionLedger.nextLaneHead")(function* (after) {
      return yield* Effect.sync(() => {
        for (const [threadId, lane] of sortedLanes()) {
          if (after !== undefined && threadId <= after) continue
          const head = lane.nonterminal[0]
          const row = head === undefined ? undefined : store.rows.get(head)
          if (row !== undefined) return Option.some(row)
        }
        return Option.none<SubmissionSnapshot>()
      })
    }),

    countAllNonterminal: Effect.sync(() =>
      [...store.lanes.values()].reduce((sum, lane) => sum + lane.nonterminal.length, 0),
    ),
  }
  stores.set(service, store)
  return service
})
