/**
 * Admission on the in-memory ledger, before any write: the verdict on a request (replay,
 * refusal, or a new Submission) and the reads by key, over the derived Submission ids as the
 * SQLite ledger derives them.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option, Result } from "effect"
import type { KeyReads } from "./parts.ts"
import { idCollision, inputBytesRefusal, queueDepthRefusal, replayOf, submissionIdFor } from "./admission.ts"
import type {
  Admission,
  AdmissionCheck,
  AdmissionRefused,
  IdempotencyConflict,
  LedgerError,
  LedgerLimits,
} from "./model.ts"
import { atomically, type MemoryStore } from "./memoryStore.ts"

/** Builds the admission verdict and the key reads over a store. @internal */
export const makeMemoryAdmission = (store: MemoryStore, limits: LedgerLimits) => {
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

  const reads: KeyReads = {
    checkAdmission: spanned("SubmissionLedger.checkAdmission")(function* (request) {
      const checked = yield* atomically("SubmissionLedger.checkAdmission", () =>
        verdict("SubmissionLedger.checkAdmission", request),
      )
      return Option.fromUndefinedOr(checked?.snapshot)
    }),

    lookupByKey: spanned("SubmissionLedger.lookupByKey")(function* (threadId, idempotencyKey) {
      return yield* Effect.sync(() =>
        Option.fromUndefinedOr(store.rows.get(submissionIdFor(store.salt, threadId, idempotencyKey))),
      )
    }),
  }

  return { verdict, reads }
}
