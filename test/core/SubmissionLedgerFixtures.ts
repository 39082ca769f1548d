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
import type { ThreadHistory } from "../../src/core/ThreadHistory.ts"

/** Runs one case against a fresh ledger and history. */
export interface LedgerHarness {
  readonly run: <A, E>(
    body: Effect.Effect<A, E, SubmissionLedger | ThreadHistory>,
    options?: { readonly limits?: LedgerLimits },
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

/** A claim grant for attempt `n`. */
export const grant = (n: number, now: number, leaseDurationMillis = 1_000) => ({
  attemptId: AttemptId.make(`attempt-${n}`),
  ownershipToken: OwnershipToken.make(`token-${n}`),
  now,
  leaseDurationMillis,
})

/** Admits a request and returns the new row. */
export const admitNew = (req: AdmissionRequest) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const admission = yield* ledger.admit(req)
    expect(admission._tag).toBe("Admitted")
    return admission.snapshot
  })

/** Admits a request and marks it ready. */
export const admitReady = (req: AdmissionRequest) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const admitted = yield* admitNew(req)
    return yield* ledger.markReady(admitted.submissionId, req.now + 1)
  })

/** Claims the head of a lane, which must be claimable. */
export const claimHead = (threadId: string, g: ReturnType<typeof grant>) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const claim = yield* ledger.claim(ThreadId.make(threadId), g)
    expect(Option.isSome(claim)).toBe(true)
    return Option.getOrThrow(claim)
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

/** A recovery fence at the row's epoch. */
export const unowned = (row: SubmissionSnapshot, now: number): Fence => ({
  _tag: "Unowned",
  submissionId: row.submissionId,
  producerEpoch: row.producerEpoch,
  now,
})

/** Claims, reserves and finalizes the head of a lane. */
export const settleHead = (threadId: string, now: number) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const claim = yield* claimHead(threadId, grant(now, now))
    yield* ledger.reserveSettlement(owner(claim), settlementOf(claim))
    return yield* ledger.finalizeSettlement(claim.submissionId)
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
