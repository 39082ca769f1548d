/**
 * The row of a Submission a call addresses: it must belong to the addressed Thread (and agent,
 * when one is named), or it is not found, so a caller learns nothing of another Thread's work.
 */
import { Effect, Option } from "effect"
import type { AgentId, SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { SubmissionLedger, SubmissionNotFound } from "../../core/SubmissionLedger.ts"

/** @internal What a call names a Submission by. */
export interface Address {
  readonly threadId: ThreadId
  readonly submissionId: SubmissionId
  readonly agentId?: AgentId
}

/** @internal The row of an addressed Submission, refused when it belongs to another Thread (or agent). */
export const addressed = (address: Address) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const row = yield* ledger.lookup(address.submissionId)
    if (
      Option.isNone(row) ||
      row.value.threadId !== address.threadId ||
      (address.agentId !== undefined && row.value.agentId !== address.agentId)
    ) {
      return yield* notFound(address)
    }
    return row.value
  })

/** @internal The error for an addressed Submission that is not in its Thread (or not at all). */
export const notFound = (address: Address) =>
  new SubmissionNotFound({
    submissionId: address.submissionId,
    message: `no submission ${address.submissionId}${address.agentId === undefined ? "" : ` of agent ${address.agentId}`} in thread ${address.threadId}`,
  })
