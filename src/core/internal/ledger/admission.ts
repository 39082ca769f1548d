/**
 * Admission checks shared by both ledgers, in the order they apply: a used idempotency key
 * replays (or conflicts) before any limit, so a replay is exempt from the queue-depth limit.
 */
import { Result } from "effect"
import { ReceiptId, SubmissionId } from "../../Identifiers.ts"
import { AdmissionRefused, IdempotencyConflict } from "./model.ts"
import type { Admission, AdmissionRequest, LedgerLimits, SubmissionSnapshot } from "./model.ts"
import { utf8ByteLength } from "./rules.ts"

/** Fresh identifiers for a new Submission. @internal */
export const newAdmissionIds = () => ({
  submissionId: SubmissionId.make(crypto.randomUUID()),
  receiptId: ReceiptId.make(crypto.randomUUID()),
})

/** The answer for a used key: the original row, or a conflict. @internal */
export const replayOf = (
  request: AdmissionRequest,
  existing: SubmissionSnapshot,
): Result.Result<Admission, IdempotencyConflict> =>
  existing.agentId === request.agentId && existing.inputDigest === request.inputDigest
    ? Result.succeed({ _tag: "Replayed", snapshot: existing })
    : Result.fail(
        new IdempotencyConflict({
          threadId: request.threadId,
          idempotencyKey: request.idempotencyKey,
          submissionId: existing.submissionId,
          message:
            existing.agentId === request.agentId
              ? `idempotency key ${request.idempotencyKey} was used for a different input`
              : `idempotency key ${request.idempotencyKey} was used for agent ${existing.agentId}`,
        }),
      )

/** Refuses an input larger than the limit. @internal */
export const inputBytesRefusal = (
  request: AdmissionRequest,
  limits: LedgerLimits,
): AdmissionRefused | undefined => {
  const bytes = utf8ByteLength(request.inputPayload)
  return bytes > limits.maxInputBytes
    ? new AdmissionRefused({
        threadId: request.threadId,
        reason: "input-bytes",
        message: `the input is ${bytes} bytes; the limit is ${limits.maxInputBytes}`,
      })
    : undefined
}

/** Refuses a new Submission in a full lane. @internal */
export const queueDepthRefusal = (
  request: AdmissionRequest,
  limits: LedgerLimits,
  depth: number,
): AdmissionRefused | undefined =>
  depth >= limits.maxQueueDepthPerLane
    ? new AdmissionRefused({
        threadId: request.threadId,
        reason: "queue-depth",
        message: `thread ${request.threadId} already has ${depth} unsettled submissions; the limit is ${limits.maxQueueDepthPerLane}`,
      })
    : undefined
