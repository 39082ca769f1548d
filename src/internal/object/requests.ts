/**
 * The RPC protocol between a Worker and a `ThreadObject`: request Schemas the Object decodes
 * before anything runs, and the result envelope that carries a success value or an encoded
 * tagged error across the boundary (Workers RPC keeps only the message of a thrown error).
 */
import { Schema } from "effect"
import { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { ApprovalDecision, UnknownResolution } from "../../core/DurableAgentRuntime.ts"
import { Caller } from "./authorization.ts"

/** Who asks for a privileged entry point; the application's check decides. */
const caller = Schema.optionalKey(Caller)

/** A request the Object refused before doing anything: malformed, oversized or misaddressed. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  entryPoint: Schema.String,
  message: Schema.String,
}) {}

const Millis = (maximum: number) =>
  Schema.Int.check(
    Schema.isBetween(
      { minimum: 0, maximum },
      { expected: `an integer number of milliseconds up to ${maximum}` },
    ),
  )

/** Longest wait an `awaitSettlement` call may ask for: one RPC must stay well inside limits. */
export const MAX_AWAIT_MILLIS = 60_000
/** Largest history page. */
export const MAX_HISTORY_PAGE = 500

/** @internal */
export const SubmissionAddress = Schema.Struct({ threadId: ThreadId, submissionId: SubmissionId })

/** @internal A privileged action on one Submission (abort, retry). */
export const SubmissionCommand = Schema.Struct({ threadId: ThreadId, submissionId: SubmissionId, caller })

/** @internal */
export const ApprovalInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  decision: ApprovalDecision,
  caller,
})

/** @internal */
export const UnknownInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  resolution: UnknownResolution,
  caller,
})

/** @internal */
export const ThreadAddress = Schema.Struct({ threadId: ThreadId })

/** A page of one Thread: a position to start after, and a page size up to `maximum`. */
const ThreadPage = (maximum: number) =>
  Schema.Struct({
    threadId: ThreadId,
    after: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
    limit: Schema.optionalKey(
      Schema.Int.check(
        Schema.isBetween({ minimum: 1, maximum }, { expected: `a page size of 1 to ${maximum}` }),
      ),
    ),
  })

/** @internal */
export const HistoryInput = ThreadPage(MAX_HISTORY_PAGE)

/** @internal */
export const AwaitInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  timeoutMillis: Millis(MAX_AWAIT_MILLIS),
})

/** @internal */
export const RepairInput = Schema.Struct({ threadId: ThreadId, caller })

/** Largest page of a lane's Submissions. */
export const MAX_SUBMISSIONS_PAGE = 200

/** @internal */
export const SubmissionsInput = ThreadPage(MAX_SUBMISSIONS_PAGE)

/** @internal */
export const ProgressInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  /** The token of a previous answer; without it the current progress returns at once. */
  after: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
  timeoutMillis: Millis(MAX_AWAIT_MILLIS),
})

/** The envelope of every RPC result. @internal */
export type RpcResult =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }
