/**
 * Fixtures of the ledger conformance suite: the harness contract and small builders that
 * state each case's instants and identifiers explicitly.
 */
import { expect } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import type { ThreadStoreError } from "../../src/core/DurableAgentRuntime.ts"
import { AgentId, AttemptId, IdempotencyKey, OwnershipToken, ThreadId } from "../../src/core/Identifiers.ts"
import type { SubmissionId } from "../../src/core/Identifiers.ts"
import {
  Settlement,
  SubmissionLedger,
  type AdmissionRequest,
  type Claim,
  type Fence,
  type LedgerError,
  type LedgerLimits,
  type SubmissionSnapshot,
} from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import { settledEntry } from "../../src/core/internal/ledger/rules.ts"

/** Runs one case against a fresh ledger and history. */
export interface LedgerHarness {
  readonly run: <A, E>(
    body: Effect.Effect<A, E, SubmissionLedger | ThreadHistory>,
    options?: {
      readonly limits?: LedgerLimits
      /** Whether retention is on (`SubmissionLedgerRetention`); on by default. */
      readonly retention?: boolean
    },
  ) => Effect.Effect<A, E | LedgerError | ThreadStoreError>
}

/** An admission request with sensible defaults. */
export const request = (
  threadId: string,
  key: string,
  overrides: Partial<Omit<AdmissionRequest, "threadId" | "idempotencyKey">> = {},
): AdmissionRequest => ({
  threadId: ThreadId.make(threadId),
  idempotencyKey: IdempotencyKey.make(key),
  agentId: AgentId.make("echo"),
  agentDigest: "echo-digest-1",
  inputPayload: JSON.stringify({ key }),
  inputDigest: `input-${key}`,
  now: 1_000,
  ...overrides,
})

/** A claim grant for attempt `n`, by `incarnation` when given. */
export const grant = (n: number, now: number, leaseDurationMillis = 1_000, incarnation?: string) => ({
  attemptId: AttemptId.make(`attempt-${n}`),
  ownershipToken: OwnershipToken.make(`token-${n}`),
  now,
  leaseDurationMillis,
  ...(incarnation === undefined ? {} : { incarnation }),
})

/** Admits a request and returns the new row. */
export const admitNew = (req: AdmissionRequest) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const admission = yield* ledger.admit(req)
    expect(admission._tag).toBe("Admitted")
    return admission.snapshot
  })

/** Admits a request: the row is ready at once. */
export const admitReady = admitNew

/** Claims the head of a lane, which must be claimable. */
export const claimHead = (threadId: string, g: ReturnType<typeof grant>) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const claim = yield* ledger.claim(ThreadId.make(threadId), g)
    expect(Option.isSome(claim)).toBe(true)
    return Option.getOrThrow(claim)
  })

/** Claims the head of a lane and parks it waiting: the Claim and the suspended row. */
export const parkHead = (threadId: string, g: ReturnType<typeof grant>) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const claim = yield* claimHead(threadId, g)
    yield* ledger.park(claim, "suspended")
    return { claim, suspended: yield* rowOf(claim.submissionId) }
  })

/** A settlement for a snapshot or claim. */
export const settlementOf = (
  row: { readonly submissionId: SubmissionId; readonly threadId: ThreadId },
  outcome: "completed" | "failed" | "aborted" = "completed",
  settledAt = 5_000,
) =>
  new Settlement({
    submissionId: row.submissionId,
    threadId: row.threadId,
    outcome,
    ...(outcome === "completed" ? { output: { ok: true, items: [1, 2] } } : { error: "it failed" }),
    settledAt,
  })

/** The fence of a Claim's owner. */
export const owner = (claim: Claim): Fence => ({ _tag: "Owner", claim })

/** A recovery fence at the row's epoch, of `incarnation` when given. */
export const unowned = (row: SubmissionSnapshot, now: number, incarnation?: string): Fence => ({
  _tag: "Unowned",
  submissionId: row.submissionId,
  producerEpoch: row.producerEpoch,
  now,
  ...(incarnation === undefined ? {} : { incarnation }),
})

/** Claims and settles the head of a lane. */
export const settleHead = (threadId: string, now: number) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const claim = yield* claimHead(threadId, grant(now, now))
    return yield* ledger.settle(owner(claim), settlementOf(claim))
  })

/**
 * Settles the way an older release did, in three writes: reserve, record, finalize. The
 * settlement counts once its record is in the history.
 */
export const settleInSteps = (fence: Fence, settlement: Settlement) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const history = yield* ThreadHistory
    const reserved = yield* ledger.reserveSettlement(fence, settlement)
    yield* history.append(
      reserved.submissionId,
      settledEntry(settlement),
      { _tag: "Unowned", submissionId: reserved.submissionId, producerEpoch: reserved.producerEpoch, now: 0 },
      settlement.settledAt,
    )
    return yield* ledger.finalizeSettlement(reserved.submissionId)
  })

/** The tags of a Submission's records. */
export const recordTags = (submissionId: SubmissionId) =>
  Effect.gen(function* () {
    const history = yield* ThreadHistory
    return (yield* history.forSubmission(submissionId)).map((record) => record.entry._tag)
  })

/** Every row `scanNonterminal` streams. */
export const scanAll = Effect.gen(function* () {
  const ledger = yield* SubmissionLedger
  return yield* Stream.runCollect(ledger.scanNonterminal)
})

/** The stored row, which must exist. */
export const rowOf = (submissionId: SubmissionId) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    return Option.getOrThrow(yield* ledger.lookup(submissionId))
  })
