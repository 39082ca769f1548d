/**
 * Schemas, errors and request types of the Submission Ledger, kept apart from the service so
 * that its implementations can import them without a cycle. Re-exported by `SubmissionLedger`.
 */
import { Context, Schema } from "effect"
import {
  AgentId,
  AttemptId,
  IdempotencyKey,
  OwnershipToken,
  ReceiptId,
  SubmissionId,
  ThreadId,
} from "../../Identifiers.ts"
import { ParentLink } from "../outbox/parentLink.ts"
import { MAX_INPUT_BYTES_CEILING } from "../rowBytes.ts"

/**
 * Lifecycle states of a Submission. `joining`: admitted as input of its lane's running head
 * (its host), not yet read by it; `joined`: read by the host, settles with it. `waiting`:
 * parked until its due time (`dueAt`), which ends the wait by itself; `suspended`: parked in a
 * wait only an outside actor ends.
 */
export const SubmissionState = Schema.Literals([
  "admitted",
  "ready",
  "joining",
  "joined",
  "running",
  "suspended",
  "waiting",
  "unknown",
  "terminalizing",
  "settled",
])
export type SubmissionState = typeof SubmissionState.Type

/** How a Submission ended. */
export const SettlementOutcome = Schema.Literals(["completed", "failed", "aborted"])
export type SettlementOutcome = typeof SettlementOutcome.Type

/** The one durable ending of a Submission. */
export class Settlement extends Schema.Class<Settlement>(
  "@effect-agent/platform-cloudflare/SubmissionLedger/Settlement",
)({
  submissionId: SubmissionId,
  threadId: ThreadId,
  outcome: SettlementOutcome,
  /** `completed`: the output, encoded by the agent's output Schema. */
  output: Schema.optionalKey(Schema.Json),
  /**
   * `failed`: why (the `AgentFailure`'s message, `approval denied[: note]`, or `set aside: …` for
   * a head that kept killing its Object).
   */
  error: Schema.optionalKey(Schema.String),
  settledAt: Schema.Finite,
  /** A joined Submission settles with its host and names it here. */
  host: Schema.optionalKey(SubmissionId),
}) {}

/**
 * The owner of a running Submission. `incarnation` names the process (one Durable Object
 * incarnation) that took the Claim: a later incarnation treats the Claim as expired, since a
 * Durable Object has one live incarnation and the producer epoch fences out a stale owner,
 * while an earlier one (replaced, still running) does not. Without it (a Claim taken without
 * one) only the lease protects the Claim.
 */
export class Ownership extends Schema.Class<Ownership>(
  "@effect-agent/platform-cloudflare/SubmissionLedger/Ownership",
)({
  attemptId: AttemptId,
  ownershipToken: OwnershipToken,
  leaseExpiresAt: Schema.Finite,
  incarnation: Schema.optionalKey(Schema.String),
}) {}

/**
 * What a parked Submission waits for, recorded by the park that started the wait (its end is
 * journaled). `step` is the call position of the waiting call; `since` when the wait began.
 */
export const WaitRecord = Schema.Union([
  Schema.TaggedStruct("Sleep", {
    step: Schema.Int,
    name: Schema.String,
    dueAt: Schema.Finite,
    since: Schema.Finite,
  }),
  /** The backoff before attempt `attempt + 1` of a step whose attempt `attempt` failed. */
  Schema.TaggedStruct("Retry", {
    step: Schema.Int,
    name: Schema.String,
    attempt: Schema.Int,
    /** The attempts the step's policy allows, when it counts them. */
    attempts: Schema.optionalKey(Schema.Int),
    dueAt: Schema.Finite,
    since: Schema.Finite,
  }),
  Schema.TaggedStruct("Event", {
    step: Schema.Int,
    event: Schema.String,
    dueAt: Schema.optionalKey(Schema.Finite),
    since: Schema.Finite,
  }),
  Schema.TaggedStruct("Approval", { step: Schema.Int, dueAt: Schema.Finite, since: Schema.Finite }),
  /** The wait before a failed reconcile of the uncertain step at `step` runs again. */
  Schema.TaggedStruct("Reconcile", { step: Schema.Int, dueAt: Schema.Finite, since: Schema.Finite }),
  /** A Submission admitted with `notBefore`. */
  Schema.TaggedStruct("Delayed", { notBefore: Schema.Finite }),
  Schema.TaggedStruct("Workflow", {
    since: Schema.Finite,
    clocks: Schema.Array(Schema.Struct({ name: Schema.String, dueAt: Schema.Finite })),
    events: Schema.Array(Schema.String),
    children: Schema.Array(Schema.Int),
  }),
])
export type WaitRecord = typeof WaitRecord.Type

/** A Submission row as the ledger stores it. */
export class SubmissionSnapshot extends Schema.Class<SubmissionSnapshot>(
  "@effect-agent/platform-cloudflare/SubmissionLedger/SubmissionSnapshot",
)({
  submissionId: SubmissionId,
  threadId: ThreadId,
  queueSequence: Schema.Int,
  idempotencyKey: IdempotencyKey,
  agentId: AgentId,
  agentDigest: Schema.String,
  /** The input, JSON-encoded by the agent's input Schema. */
  inputPayload: Schema.String,
  inputDigest: Schema.String,
  receiptId: ReceiptId,
  state: SubmissionState,
  producerEpoch: Schema.Int,
  ownership: Schema.optionalKey(Ownership),
  abortRequested: Schema.Boolean,
  /** Present once settlement is reserved (`terminalizing`) and after it is final. */
  settlement: Schema.optionalKey(Settlement),
  createdAt: Schema.Finite,
  readyAt: Schema.optionalKey(Schema.Finite),
  /** A child Submission's parent: where its settlement goes. */
  parent: Schema.optionalKey(ParentLink),
  /** The host of a `joining` or `joined` Submission. */
  host: Schema.optionalKey(SubmissionId),
  /**
   * When a timed wait is due: set on a parked row (`waiting`, or `running` when claimed in place
   * by `claimDue`), and on a queued row admitted with a later `notBefore`.
   */
  dueAt: Schema.optionalKey(Schema.Finite),
  /** What the last park waited for (kept after the wait ended, until the next park). */
  wait: Schema.optionalKey(WaitRecord),
}) {}

/** Ownership of one Attempt, granted by `claim` or `claimDue`. */
export class Claim extends Schema.Class<Claim>("@effect-agent/platform-cloudflare/SubmissionLedger/Claim")({
  submissionId: SubmissionId,
  threadId: ThreadId,
  attemptId: AttemptId,
  ownershipToken: OwnershipToken,
  producerEpoch: Schema.Int,
  leaseExpiresAt: Schema.Finite,
  inputPayload: Schema.String,
  incarnation: Schema.optionalKey(Schema.String),
  /** Set when `claimDue` claimed the row in place: its due time then (the lane stays parked). */
  dueAt: Schema.optionalKey(Schema.Finite),
}) {}

/**
 * The authority a write presents: an owner's Claim, or a recovery fence that holds only while
 * the epoch is unchanged and no lease is live at `now`. A recovery fence that names its
 * `incarnation` treats a Claim of an earlier incarnation as expired.
 */
export type Fence =
  | { readonly _tag: "Owner"; readonly claim: Claim }
  | {
      readonly _tag: "Unowned"
      readonly submissionId: SubmissionId
      readonly producerEpoch: number
      readonly now: number
      readonly incarnation?: string
    }

/** A recovery fence. */
export type UnownedFence = Extract<Fence, { readonly _tag: "Unowned" }>

/** What `claim` grants: a new Attempt's identity, its lease, and the incarnation claiming. */
export interface ClaimGrant {
  readonly attemptId: AttemptId
  readonly ownershipToken: OwnershipToken
  readonly now: number
  readonly leaseDurationMillis: number
  /**
   * The claiming incarnation (`SubmissionLedger.beginIncarnation`); a Claim of an earlier
   * incarnation is then expired, one of a later incarnation is not.
   */
  readonly incarnation?: string
}

/**
 * The authority of a history append: a `Fence`, or an input fence for a record that arrives
 * from outside while the Submission may be running (a child's settlement). An input fence
 * holds while the row is still in the `state` at the `producerEpoch` its sender read, and
 * neither settling nor settled: a writer that parked or settled the row meanwhile makes it
 * fail, so the sender decides again on the current row. Its record occupies no call position
 * of the journal, so it never contends with the owner's records.
 */
export type AppendFence =
  | Fence
  | {
      readonly _tag: "Input"
      readonly submissionId: SubmissionId
      readonly producerEpoch: number
      readonly state: SubmissionState
    }

/** An input fence: the epoch and state a sender read. */
export type InputFence = Extract<AppendFence, { readonly _tag: "Input" }>

/**
 * What a park checks for in its transaction: the settlement of the child started at `child`,
 * or more than `seen` events named `event` (one arrived since the Attempt read its journal).
 * With `after`, the Thread sequence of the last record the Attempt's read covered, a settlement or
 * an event counts only if recorded after it: every record up to it was in the read, so the check
 * reads the Thread from there rather than from the Submission's acceptance.
 */
export type ParkCheck =
  | { readonly child: number; readonly after?: number }
  | { readonly event: string; readonly seen: number; readonly after?: number }

/** The position of a due row in the due order, to read the rows after it. */
export interface DueCursor {
  readonly dueAt: number
  readonly submissionId: SubmissionId
}

/** A Submission's place in a schedule: the schedule and the occurrence it was admitted for. */
export const ScheduleOccurrence = Schema.Struct({ scheduleId: Schema.String, occurrence: Schema.Finite })
export type ScheduleOccurrence = typeof ScheduleOccurrence.Type

/** What a caller asks the ledger to admit. */
export interface AdmissionRequest {
  readonly threadId: ThreadId
  readonly idempotencyKey: IdempotencyKey
  readonly agentId: AgentId
  readonly agentDigest: string
  readonly inputPayload: string
  readonly inputDigest: string
  readonly now: number
  /** Admits a child Submission linked to its parent. */
  readonly parent?: ParentLink
  /**
   * Admits a join of this host: the row is `joining` when the host is still a lane head that
   * is neither settling nor aborting, otherwise ordinary `ready` input.
   */
  readonly host?: SubmissionId
  /**
   * Admits a Submission that runs no earlier than this instant (epoch ms). Later than `now`,
   * it keeps its place in the lane and its head waits (`waiting`, `wait` `Delayed`) until then.
   */
  readonly notBefore?: number
  /** The schedule occurrence this Submission is, recorded in its acceptance. */
  readonly schedule?: ScheduleOccurrence
}

/** What admission checks before it writes: everything it is asked but the time. */
export type AdmissionCheck = Omit<AdmissionRequest, "now">

/** The result of admission: a new row, or the original row of a replayed key. */
export type Admission =
  | { readonly _tag: "Admitted"; readonly snapshot: SubmissionSnapshot }
  | { readonly _tag: "Replayed"; readonly snapshot: SubmissionSnapshot }

/** A storage failure of the ledger. */
export class LedgerError extends Schema.TaggedError<LedgerError>()("LedgerError", {
  operation: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect()),
}) {}

/** A write whose epoch is stale, or that needs an unowned row while a lease is live. */
export class FenceRejected extends Schema.TaggedError<FenceRejected>()("FenceRejected", {
  submissionId: SubmissionId,
  expectedEpoch: Schema.Int,
  actualEpoch: Schema.Int,
  message: Schema.String,
}) {}

/** An owner's write after its ownership was taken or ended. */
export class OwnershipLost extends Schema.TaggedError<OwnershipLost>()("OwnershipLost", {
  submissionId: SubmissionId,
  attemptId: AttemptId,
  message: Schema.String,
}) {}

/** Admission refused before any row was written. */
export class AdmissionRefused extends Schema.TaggedError<AdmissionRefused>()("AdmissionRefused", {
  threadId: ThreadId,
  reason: Schema.Literals([
    "queue-depth",
    "input-bytes",
    "database-bytes",
    "malformed-input",
    "unknown-agent",
    "reserved-key",
  ]),
  message: Schema.String,
}) {}

/** An idempotency key reused with a different payload or agent. */
export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()("IdempotencyConflict", {
  threadId: ThreadId,
  idempotencyKey: IdempotencyKey,
  submissionId: SubmissionId,
  message: Schema.String,
}) {}

/** A transition asked of a Submission that is not in a state that allows it. */
export class InvalidTransition extends Schema.TaggedError<InvalidTransition>()("InvalidTransition", {
  submissionId: SubmissionId,
  from: SubmissionState,
  to: SubmissionState,
  message: Schema.String,
}) {}

/** No Submission with this id exists in this Object. */
export class SubmissionNotFound extends Schema.TaggedError<SubmissionNotFound>()("SubmissionNotFound", {
  submissionId: SubmissionId,
  message: Schema.String,
}) {}

/** The deepest lane a limit allows: an admission to a full lane counts up to this many rows. */
const MAX_QUEUE_DEPTH = 100_000

/** Limits checked before admission writes anything. */
export const LedgerLimits = Schema.Struct({
  /**
   * Unsettled Submissions per Thread: 1 to 100,000 (an admission to a lane that deep counts its
   * rows, up to the limit, to refuse the next).
   */
  maxQueueDepthPerLane: Schema.Int.check(
    Schema.isBetween(
      { minimum: 1, maximum: MAX_QUEUE_DEPTH },
      { expected: `an integer between 1 and ${MAX_QUEUE_DEPTH}` },
    ),
  ),
  /**
   * The encoded input, in UTF-8 bytes of its canonical JSON: at most 1,934,464 (Cloudflare's
   * 2 MB row less what a Submission's row holds besides).
   */
  maxInputBytes: Schema.Int.check(
    Schema.isBetween(
      { minimum: 1, maximum: MAX_INPUT_BYTES_CEILING },
      {
        expected: `an integer number of bytes between 1 and ${MAX_INPUT_BYTES_CEILING} (what one SQLite row holds besides a Submission's other columns)`,
      },
    ),
  ),
})
export type LedgerLimits = typeof LedgerLimits.Type

/** The defaults of every limit. */
export const LEDGER_LIMIT_DEFAULTS: LedgerLimits = { maxQueueDepthPerLane: 256, maxInputBytes: 1_048_576 }

/** The limits the ledger enforces; override with `Layer.succeed(SubmissionLedgerLimits)(…)`. */
export const SubmissionLedgerLimits = Context.Reference<LedgerLimits>(
  "@effect-agent/platform-cloudflare/SubmissionLedger/SubmissionLedgerLimits",
  { defaultValue: () => LEDGER_LIMIT_DEFAULTS },
)

/**
 * Whether retention may remove this ledger's settled Submissions. When it may not, a settlement
 * leaves its row out of the retention index (one billed row less), and the retention reads do
 * not find it until the ledger opens again with retention on, which dates every such row from
 * its settlement. On by default; a `ThreadObject` sets it from `retention.settledForMillis`.
 */
export const SubmissionLedgerRetention = Context.Reference<{ readonly enabled: boolean }>(
  "@effect-agent/platform-cloudflare/SubmissionLedger/SubmissionLedgerRetention",
  { defaultValue: () => ({ enabled: true }) },
)

/** Why a fenced write was refused. */
export type FenceFailure = FenceRejected | OwnershipLost | SubmissionNotFound | LedgerError
