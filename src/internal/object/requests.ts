/**
 * The requests of a `ThreadObject`'s calls: the Schemas the Object decodes before anything
 * runs. Every request addresses a Thread (`threadId`), and one that acts on a Submission names
 * it (`submissionId`): authorization decides on these. The caller travels beside the request.
 */
import { Schema } from "effect"
import { AgentId, IdempotencyKey, SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { ApprovalDecision, UnknownResolution } from "../../core/DurableAgentRuntime.ts"
import { EventText } from "../../core/internal/eventNames.ts"
import { ScheduleId, SubmissionState } from "../../core/SubmissionLedger.ts"
import { WaitingKind } from "./pageViews.ts"

/** Who calls, as the Worker vouches for them: a subject and, optionally, a credential to check. */
export class Caller extends Schema.Class<Caller>("@effect-agent/platform-cloudflare/Caller")({
  subject: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)),
  credential: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4_096))),
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

/**
 * The call position of the request a decision answers (`explain` reports it): a decision that
 * names another one than the open request is `NotPending`, so a decision sent again never
 * answers the program's next request.
 */
const DecidedStep = Schema.optionalKey(
  Schema.Int.check(
    Schema.isGreaterThanOrEqualTo(0, { expected: "a call position (an integer of 0 or more)" }),
  ),
)

/** @internal */
export const ApprovalInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  decision: ApprovalDecision,
  step: DecidedStep,
})

/** @internal */
export const UnknownInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  resolution: UnknownResolution,
  step: DecidedStep,
})

/** @internal */
export const ThreadAddress = Schema.Struct({ threadId: ThreadId })

/** @internal */
export const UnscheduleInput = Schema.Struct({ threadId: ThreadId, scheduleId: ScheduleId })

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
export const CompletedStepInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  step: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
})

/** @internal */
export const AwaitInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  timeoutMillis: Millis(MAX_AWAIT_MILLIS),
  /** The agent the caller expects; a Submission of another agent is not found. */
  agentId: Schema.optionalKey(AgentId),
})

/** Largest page of a lane's Submissions. */
export const MAX_SUBMISSIONS_PAGE = 200

/** @internal */
export const SubmissionsInput = ThreadPage(MAX_SUBMISSIONS_PAGE)

/** @internal */
export const ProgressInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  /**
   * The token of a previous answer; without it the current progress returns at once. Only the
   * shape answers have (`<sequence>.<epoch>.<state>.<0|1>`): another is refused, not read as
   * "from the start".
   */
  after: Schema.optionalKey(
    Schema.String.check(
      Schema.isPattern(/^\d{1,16}\.\d{1,16}\.[a-z]{1,20}\.[01]$/, {
        expected: "a token an answer gave (<sequence>.<epoch>.<state>.<0|1>)",
      }),
    ),
  ),
  timeoutMillis: Millis(MAX_AWAIT_MILLIS),
})

/** @internal */
export const EventInput = Schema.Struct({
  threadId: ThreadId,
  submissionId: SubmissionId,
  event: EventText("an event name"),
  /** The event's identity: a repeat of an id already recorded changes nothing. */
  eventId: EventText("an event id"),
  /** The payload in its encoded (JSON) form. */
  payload: Schema.Json,
  /** The agent the caller expects; a Submission of another agent is not found. */
  agentId: Schema.optionalKey(AgentId),
})
/** Largest page of the operator pages (`submissionPage`, `threadPage`). */
export const MAX_OPERATOR_PAGE = 100

const OperatorPageSize = Schema.Int.check(
  Schema.isBetween(
    { minimum: 1, maximum: MAX_OPERATOR_PAGE },
    { expected: `a page size of 1 to ${MAX_OPERATOR_PAGE}` },
  ),
)

/** @internal */
export const SubmissionPageInput = Schema.Struct({
  threadId: ThreadId,
  /** Any of these states; every state when absent. */
  states: Schema.optionalKey(Schema.Array(SubmissionState).check(Schema.isMaxLength(16))),
  agentId: Schema.optionalKey(AgentId),
  /** Only Submissions that are where they are for this reason. */
  waiting: Schema.optionalKey(WaitingKind),
  /** The `next` of the previous page of the same filter. */
  cursor: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  limit: Schema.optionalKey(OperatorPageSize),
})

/** @internal */
export const ThreadPageInput = Schema.Struct({
  threadId: ThreadId,
  /** The `next` of the previous page. */
  after: Schema.optionalKey(ThreadId),
  limit: Schema.optionalKey(OperatorPageSize),
})

/** Largest page of `schedulePage`. */
export const MAX_SCHEDULE_PAGE = 100

/** @internal */
export const SchedulePageInput = Schema.Struct({
  threadId: ThreadId,
  /** The `next` of the previous page. */
  after: Schema.optionalKey(ScheduleId),
  limit: Schema.optionalKey(
    Schema.Int.check(
      Schema.isBetween(
        { minimum: 1, maximum: MAX_SCHEDULE_PAGE },
        { expected: `a page size of 1 to ${MAX_SCHEDULE_PAGE}` },
      ),
    ),
  ),
})

/** @internal */
export const FindSubmissionInput = Schema.Struct({ threadId: ThreadId, idempotencyKey: IdempotencyKey })
