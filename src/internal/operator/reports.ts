/**
 * What the operator entry points answer: why a Submission is not moving, what the Object owes
 * and when, what the stored state violates, and how a Submission progressed. Plain Schema
 * values, safe to send to any operator (no ownership tokens, no stored inputs).
 */
import { Schema } from "effect"
import { OpenUncertainStep, RecoveryDecision, ReconcileState } from "../../core/DurableAgentRuntime.ts"
import { AgentId, SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { Settlement, SubmissionState } from "../../core/SubmissionLedger.ts"
import { HistoryRecord } from "../../core/ThreadHistory.ts"

/** The one decisive reason a Submission is where it is, with its evidence. */
export const Reason = Schema.Union([
  /**
   * Settled; `expiresAt` is when retention may remove it at the earliest (absent while retention
   * keeps settled Submissions forever).
   */
  Schema.TaggedStruct("Settled", { settlement: Settlement, expiresAt: Schema.optionalKey(Schema.Finite) }),
  /** Nothing runs until an operator repairs the maintenance record. */
  Schema.TaggedStruct("MaintenanceRecordDamaged", { field: Schema.String, message: Schema.String }),
  /** FIFO: the lane's head must settle first. */
  Schema.TaggedStruct("QueuedBehind", {
    head: SubmissionId,
    headState: SubmissionState,
    /** Nonterminal Submissions ahead of it in the lane. */
    ahead: Schema.Int,
  }),
  /**
   * A follow-up joined to a running Submission (its host): the host reads it at a step
   * boundary (`read` once it did) and it settles with the host; one the host never read runs
   * as ordinary input once the host ends. It never waits for its turn in the lane.
   */
  Schema.TaggedStruct("JoinedTo", {
    host: SubmissionId,
    hostState: SubmissionState,
    read: Schema.Boolean,
  }),
  Schema.TaggedStruct("WaitingForApproval", {
    step: Schema.Int,
    since: Schema.Finite,
    payload: Schema.Json,
    /** A request with a timeout closes undecided at this instant. */
    timesOutAt: Schema.optionalKey(Schema.Finite),
  }),
  /** Parked on a wait for an event of this name, until one is sent (or the wait times out). */
  Schema.TaggedStruct("WaitingForEvent", {
    step: Schema.Int,
    event: Schema.String,
    since: Schema.Finite,
    timesOutAt: Schema.optionalKey(Schema.Finite),
  }),
  /**
   * Parked until the child it started at call `child` settles (its `ChildStarted` record names
   * the child's Object, Thread and key): a stable wait that keeps no alarm, ended by the child's
   * settlement arriving as a message.
   */
  Schema.TaggedStruct("WaitingForChild", { child: Schema.Int }),
  /** An uncertain step cut by a crash; `waitingFor` says whether its reconcile or a person settles it. */
  Schema.TaggedStruct("UnknownOutcome", {
    step: Schema.Int,
    name: Schema.String,
    since: Schema.Finite,
    waitingFor: Schema.Literals(["reconciliation", "operator"]),
    reconcile: ReconcileState,
  }),
  /** A durable sleep at call `step`: it resumes at `until`. */
  Schema.TaggedStruct("Sleeping", {
    step: Schema.Int,
    name: Schema.String,
    until: Schema.Finite,
    since: Schema.Finite,
  }),
  /** A retried step between attempts: `attempt` of `attempts` failed, the next runs at `nextAttemptAt`. */
  Schema.TaggedStruct("RetryBackoff", {
    step: Schema.Int,
    name: Schema.String,
    attempt: Schema.Int,
    attempts: Schema.optionalKey(Schema.Int),
    nextAttemptAt: Schema.Finite,
    lastError: Schema.String,
  }),
  /** Admitted with `notBefore`: it starts then. */
  Schema.TaggedStruct("Delayed", { notBefore: Schema.Finite }),
  /** The running code has no compatible agent; the next try is at `nextTryAt`. */
  Schema.TaggedStruct("BindingWait", {
    agentId: AgentId,
    agentDigest: Schema.String,
    attempts: Schema.Int,
    nextTryAt: Schema.Finite,
    /** Why registered code with the same digest cannot run it (`RunJournalError`'s message). */
    reason: Schema.optionalKey(Schema.String),
  }),
  /** Maintenance of this Object made no progress and backs off until `until`. */
  Schema.TaggedStruct("LaneBackoff", { until: Schema.Finite, stalls: Schema.Int }),
  /** A live Attempt holds it; if that Attempt died, recovery takes over after `leaseExpiresAt`. */
  Schema.TaggedStruct("HeldByAttempt", { attemptId: Schema.String, leaseExpiresAt: Schema.Finite }),
  /**
   * Runnable: the next maintenance pass serves it (the alarm is `at`, null when none is set).
   * `objectKills` (counted only with `maxObjectKillsPerHead` set): the events in a row that died
   * with its Attempt in flight (a step out of memory or CPU, or the host killed); that many set
   * it aside.
   */
  Schema.TaggedStruct("WaitingForAlarm", {
    at: Schema.NullOr(Schema.Finite),
    abortRequested: Schema.Boolean,
    objectKills: Schema.optionalKey(Schema.Int),
  }),
])
export type Reason = typeof Reason.Type

/** `explain`: the reason and what it rests on. */
export class SubmissionExplanation extends Schema.Class<SubmissionExplanation>(
  "@effect-agent/platform-cloudflare/SubmissionExplanation",
)({
  submissionId: SubmissionId,
  threadId: ThreadId,
  queueSequence: Schema.Int,
  state: SubmissionState,
  /** What recovery would decide for it now. */
  decision: RecoveryDecision,
  reason: Reason,
  /** The uncertain step whose outcome is not known, if any. */
  openUncertain: Schema.optionalKey(OpenUncertainStep),
  explainedAt: Schema.Finite,
}) {}

/** Where a due time comes from. */
export const ObligationSource = Schema.Literals([
  /** A lane head that a pass can serve now. */
  "lane-head",
  /** A mutation advanced the generation and no pass has acknowledged it. */
  "generation-owed",
  /** The durable backoff of failed or stalled maintenance. */
  "maintenance-retry",
  /** A Submission waiting for compatible code. */
  "binding-wait",
  /** A running Attempt's lease; recovery can release it once it expires. */
  "lease-expiry",
  /** A failed reconcile of an Unknown Outcome runs again after this. */
  "reconcile-retry",
  /** A timed wait (a sleep, a retry's backoff, a reconcile's next try, a delayed start) is due. */
  "timer",
  /** The next occurrence of a schedule, admitted as a Submission by the first pass at or after it. */
  "schedule",
  /** Host maintenance, message delivery or projection deadline. */
  "host-deadline",
  /** Required publication must drain before native work. */
  "publication-deadline",
  /** Settled Submissions expire: retention removes them (coalesced to its window). */
  "retention",
])
export type ObligationSource = typeof ObligationSource.Type

/** One due time the Object owes. */
export class Obligation extends Schema.Class<Obligation>("@effect-agent/platform-cloudflare/Obligation")({
  source: ObligationSource,
  dueAt: Schema.Finite,
  threadId: Schema.optionalKey(ThreadId),
  submissionId: Schema.optionalKey(SubmissionId),
  detail: Schema.String,
}) {}

/** A disagreement between the alarm the rules imply and the one scheduled. */
export const AlarmMismatch = Schema.Struct({
  /** `missing`: work is owed and no alarm is set; `late`: the alarm is later than the rules allow; `extra`: an alarm with nothing owed (a billed wake, harmless). */
  kind: Schema.Literals(["missing", "late", "extra"]),
  message: Schema.String,
})

/**
 * A hook whose pending deadline could not be read (it failed, answered a time that is not
 * finite, or did not answer within 5 s): what it owes is unknown, the rest is still answered.
 * `hook` names it (a `ThreadHostMaintenanceError`'s own `hook`, else which hook or lane).
 */
export const UnreadDeadline = Schema.Struct({
  source: ObligationSource,
  hook: Schema.String,
  message: Schema.String,
})
export type UnreadDeadline = typeof UnreadDeadline.Type

/** `obligations`: every due time, the alarm they imply, the alarm scheduled. */
export class ObjectObligations extends Schema.Class<ObjectObligations>(
  "@effect-agent/platform-cloudflare/ObjectObligations",
)({
  obligations: Schema.Array(Obligation),
  /** The latest alarm the maintenance rules allow (null when nothing is owed). */
  impliedAlarm: Schema.NullOr(Schema.Finite),
  scheduledAlarm: Schema.NullOr(Schema.Finite),
  mismatch: Schema.optionalKey(AlarmMismatch),
  dirty: Schema.optionalKey(Schema.String),
  processed: Schema.optionalKey(Schema.String),
  damaged: Schema.optionalKey(Schema.Struct({ field: Schema.String, message: Schema.String })),
  /**
   * Hooks whose deadline could not be read. Their obligations are missing from the list and
   * from `impliedAlarm`, and no `extra` mismatch is claimed while any is unread.
   */
  unreadDeadlines: Schema.optionalKey(Schema.Array(UnreadDeadline)),
  /** A pass runs in the Object now: an empty slot is not missing, the pass writes it at its finish. */
  passRunning: Schema.Boolean,
  observedAt: Schema.Finite,
}) {}

/** The invariants `verify` checks. */
export const Invariant = Schema.Literals([
  "maintenance-record",
  "one-settlement",
  "history-gap-free",
  "fifo",
  "nonterminal-counted",
  "dirty-at-least-processed",
  "owed-work-has-alarm",
  "binding-waits-nonterminal",
  "settlement-agreement",
  /** A waiting Submission has a due time. */
  "timed-wait-shape",
  /** The maintenance record's due bound is no later than any timed wait (or a generation is owed). */
  "timer-covered",
  /** A timed wait has an alarm by its due time (plus the coalescing window). */
  "timer-has-alarm",
  /** A retried step's failed attempts count up from 1 and their due times never move earlier. */
  "retry-monotone",
  /** Each event is recorded once per Submission and taken at most once, by a wait for its name. */
  "event-once",
  /** A schedule's next occurrence is later than its last one. */
  "schedule-advances",
  /** The due bound and the alarm cover every schedule's next occurrence (or a generation is owed). */
  "schedule-covered",
  /** No two Submissions were admitted for the same occurrence of a schedule. */
  "occurrence-once",
])
export type Invariant = typeof Invariant.Type

/** One violation, with the rows involved. */
export class Violation extends Schema.Class<Violation>("@effect-agent/platform-cloudflare/Violation")({
  invariant: Invariant,
  message: Schema.String,
  threadId: Schema.optionalKey(ThreadId),
  submissionIds: Schema.Array(SubmissionId),
  /** The stored values that show it. */
  evidence: Schema.Json,
}) {}

/** `verify`: what was read and every violation found. */
export class VerifyReport extends Schema.Class<VerifyReport>(
  "@effect-agent/platform-cloudflare/VerifyReport",
)({
  submissions: Schema.Int,
  historyRecords: Schema.Int,
  invariants: Schema.Array(Invariant),
  violations: Schema.Array(Violation),
  /** A pass ran while `verify` read: a transient state may show (an empty alarm slot). */
  passRunning: Schema.Boolean,
  verifiedAt: Schema.Finite,
}) {}

/**
 * `awaitProgress`: where a Submission is now, and the records it gained after `after`, oldest
 * first. Records together over what one answer carries (about 8 million characters of JSON) are
 * answered a part at a time: `more` is then set, and `token` continues after the last record
 * returned, so passing it back answers the next part at once, without waiting.
 */
export class SubmissionProgress extends Schema.Class<SubmissionProgress>(
  "@effect-agent/platform-cloudflare/SubmissionProgress",
)({
  /**
   * Pass it back as `after` to wait for the next change, or, with `more`, to read the records
   * that follow at once.
   */
  token: Schema.String,
  /** False when the wait timed out with nothing new. */
  changed: Schema.Boolean,
  state: SubmissionState,
  producerEpoch: Schema.Int,
  records: Schema.Array(HistoryRecord),
  /**
   * True when more records already follow these (the answer was cut short by size): a follower
   * that stops at `state: "settled"` reads on with `token` while `more` is set. Absent otherwise.
   */
  more: Schema.optionalKey(Schema.Boolean),
  settlement: Schema.optionalKey(Settlement),
}) {}
