/**
 * Schedules as the ledger stores them: what makes the occurrences (a cron expression in a time
 * zone, or a fixed interval), the agent and input of each occurrence, the next occurrence due,
 * and what became of the last one. Each occurrence is admitted as one Submission whose
 * idempotency key names the schedule and the occurrence, in the transaction that advances the
 * schedule.
 */
import { Schema } from "effect"
import { AgentId, IdempotencyKey, MAX_IDENTIFIER_LENGTH, SubmissionId, ThreadId } from "../../Identifiers.ts"
import { isWellFormed } from "../wellFormed.ts"

/** The prefix of every occurrence's idempotency key; a submit may not use it. */
export const OCCURRENCE_KEY_PREFIX = "schedule:"

/** Longest schedule id: its occurrence keys (`schedule:<id>:<epoch ms>`) stay identifiers. */
export const MAX_SCHEDULE_ID_LENGTH = MAX_IDENTIFIER_LENGTH - OCCURRENCE_KEY_PREFIX.length - 1 - 16

/** Shortest and longest `everyMillis`: a second, and a year. */
export const EVERY_MILLIS_RANGE = { min: 1_000, max: 31_536_000_000 } as const

/** How long after its instant a missed occurrence still runs under `skip` (a late delivery). */
export const SKIP_GRACE_MILLIS = 60_000

/** A schedule's name, unique in its Object. */
export const ScheduleId = Schema.String.check(
  Schema.isNonEmpty({ expected: "a non-empty schedule id" }),
  Schema.isMaxLength(MAX_SCHEDULE_ID_LENGTH, {
    expected: `a schedule id of at most ${MAX_SCHEDULE_ID_LENGTH} characters`,
  }),
  // oxlint-disable-next-line no-control-regex
  Schema.makeFilter((value: string) => !/[\u0000-\u001f\u007f-\u009f]/.test(value), {
    expected: "a schedule id without control characters",
  }),
  Schema.makeFilter(isWellFormed, { expected: "a schedule id without a lone surrogate" }),
).pipe(Schema.brand("ScheduleId"))
export type ScheduleId = typeof ScheduleId.Type

/** When occurrences happen: a cron expression (Effect's `Cron`, in `timeZone`, UTC by default), or every `everyMillis` from the schedule's creation. */
export const ScheduleSpec = Schema.Union([
  Schema.TaggedStruct("Cron", { cron: Schema.String, timeZone: Schema.optionalKey(Schema.String) }),
  Schema.TaggedStruct("Every", { everyMillis: Schema.Int }),
])
export type ScheduleSpec = typeof ScheduleSpec.Type

/**
 * After downtime: `latest` runs the latest missed occurrence once; `skip` runs none that is more
 * than a minute late and waits for the next one.
 */
export const MissedPolicy = Schema.Literals(["latest", "skip"])
export type MissedPolicy = typeof MissedPolicy.Type

/**
 * An occurrence that falls due while the schedule's previous occurrence has not settled: `queue`
 * admits it behind that one (the default), `skip` records it as refused (`overlap`) and waits for
 * the next occurrence, so work that outlasts its interval never builds a backlog.
 */
export const OverlapPolicy = Schema.Literals(["queue", "skip"])
export type OverlapPolicy = typeof OverlapPolicy.Type

/** Why an occurrence was not admitted: its input or agent no longer fits, or its lane refused it. */
export const ScheduleRefusal = Schema.Struct({
  occurrence: Schema.Finite,
  at: Schema.Finite,
  reason: Schema.String,
  message: Schema.String,
})
export type ScheduleRefusal = typeof ScheduleRefusal.Type

/** A stored schedule. */
export class ScheduleInfo extends Schema.Class<ScheduleInfo>(
  "@effect-agent/platform-cloudflare/SubmissionLedger/ScheduleInfo",
)({
  scheduleId: ScheduleId,
  /** The lane each occurrence is admitted to. */
  threadId: ThreadId,
  agentId: AgentId,
  /** The input of every occurrence, as the agent's Schema encoded it when scheduled. */
  input: Schema.Json,
  spec: ScheduleSpec,
  missed: MissedPolicy,
  /** What an occurrence due while the last one has not settled does; absent: `queue`. */
  overlap: Schema.optionalKey(OverlapPolicy),
  /** The next occurrence (epoch ms): admitted by the first pass at or after it. */
  nextAt: Schema.Finite,
  createdAt: Schema.Finite,
  /** The last occurrence admitted or refused. */
  lastOccurrence: Schema.optionalKey(Schema.Finite),
  /** The Submission the last admitted occurrence is. */
  lastSubmissionId: Schema.optionalKey(SubmissionId),
  /** The last occurrence that was refused, and why. */
  lastRefusal: Schema.optionalKey(ScheduleRefusal),
}) {}

/** The idempotency key of one occurrence. */
export const occurrenceKey = (scheduleId: string, occurrence: number): IdempotencyKey =>
  IdempotencyKey.make(`${OCCURRENCE_KEY_PREFIX}${scheduleId}:${occurrence}`)

/**
 * How one due schedule moves on (`SubmissionLedger.advanceSchedule`): from `expectedNextAt` (a
 * schedule replaced or removed meanwhile is left alone) to `nextAt`, admitting `occurrence`
 * with `admission`, or recording `refusal` for it, or passing over the missed ones.
 */
export interface ScheduleAdvance {
  readonly scheduleId: ScheduleId
  readonly expectedNextAt: number
  readonly nextAt: number
  readonly now: number
  /** The occurrence this pass admits or refuses; none when every missed one is skipped. */
  readonly occurrence?: number
  readonly refusal?: ScheduleRefusal
}

/** What an advance did. */
export type ScheduleAdvanced =
  | {
      readonly _tag: "Admitted"
      readonly schedule: ScheduleInfo
      readonly submissionId: SubmissionId
      readonly replayed: boolean
    }
  | { readonly _tag: "Refused"; readonly schedule: ScheduleInfo; readonly refusal: ScheduleRefusal }
  | { readonly _tag: "Skipped"; readonly schedule: ScheduleInfo }
  /** The schedule was replaced or removed since it was read: nothing was written. */
  | { readonly _tag: "Moved" }

/** The schedule after an advance: its next occurrence, and what became of this one. @internal */
export const advancedInfo = (
  current: ScheduleInfo,
  advance: ScheduleAdvance,
  admitted: SubmissionId | undefined,
): ScheduleInfo =>
  new ScheduleInfo({
    ...current,
    nextAt: advance.nextAt,
    ...(advance.occurrence === undefined ? {} : { lastOccurrence: advance.occurrence }),
    ...(admitted === undefined ? {} : { lastSubmissionId: admitted }),
    ...(advance.refusal === undefined ? {} : { lastRefusal: advance.refusal }),
  })

/**
 * `schedule` replacing `stored` (of the same id): its definition and next occurrence, and what
 * became of the stored one's last occurrence, since a replacement is the same stream of
 * occurrences (their keys name the id), so `overlap: "skip"` still sees one that runs on.
 * @internal
 */
export const replacing = (schedule: ScheduleInfo, stored: ScheduleInfo): ScheduleInfo => {
  const { lastOccurrence: _o, lastSubmissionId: _s, lastRefusal: _r, ...definition } = schedule
  const { lastOccurrence, lastSubmissionId, lastRefusal } = stored
  return new ScheduleInfo({
    ...definition,
    ...(lastOccurrence === undefined ? {} : { lastOccurrence }),
    ...(lastSubmissionId === undefined ? {} : { lastSubmissionId }),
    ...(lastRefusal === undefined ? {} : { lastRefusal }),
  })
}

/** Whether two schedules make the same occurrences of the same work (a repeated `schedule`). @internal */
export const sameDefinition = (a: ScheduleInfo, b: ScheduleInfo): boolean =>
  a.threadId === b.threadId &&
  a.agentId === b.agentId &&
  a.missed === b.missed &&
  (a.overlap ?? "queue") === (b.overlap ?? "queue") &&
  JSON.stringify(a.spec) === JSON.stringify(b.spec) &&
  JSON.stringify(a.input) === JSON.stringify(b.input)
