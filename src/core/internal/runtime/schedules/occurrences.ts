/**
 * Admission of due occurrences, which the maintenance pass runs before its head Attempts. Each
 * due schedule admits at most one occurrence per pass (its missed policy picks which) as a
 * Submission keyed `schedule:<id>:<occurrence>`, in the transaction that moves the schedule to
 * its next occurrence: a crash before the commit leaves both, a pass after it finds the schedule
 * no longer due, and the key makes even a replay of the same occurrence a replay.
 *
 * Under `overlap: "skip"` an occurrence due while the last admitted one has not settled is
 * refused (`overlap`) the same way, so work that outlasts its interval never queues up.
 *
 * An occurrence that cannot be admitted (its agent is no longer registered, its input no longer
 * decodes, its lane is full, the database has no room) is recorded on the schedule as its last
 * refusal and skipped: the schedule moves on, it never retries one occurrence forever.
 */
import { spanned } from "../../spanned.ts"
import { Clock, Effect, Option, Result } from "effect"
import type { AdmissionRefused, AdmissionRequest } from "../../ledger/model.ts"
import { occurrenceKey, type ScheduleAdvance, type ScheduleInfo } from "../../schedule/model.ts"
import { dueOccurrence, parseSpec } from "../../schedule/next.ts"
import type { RuntimeEnv } from "../shared/runtimeEnv.ts"
import { admissionCheckOf, encodeFor } from "../admission/encodeInput.ts"

/** A stored spec that no longer parses (a time zone the host dropped) is looked at again in a day. */
const UNPARSABLE_RETRY_MILLIS = 86_400_000

/** The occurrence's admission, or why it cannot be admitted. */
const admissionFor = (env: RuntimeEnv, schedule: ScheduleInfo, occurrence: number, now: number) =>
  Effect.gen(function* () {
    const request = {
      threadId: schedule.threadId,
      agentId: schedule.agentId,
      input: schedule.input,
      idempotencyKey: occurrenceKey(schedule.scheduleId, occurrence),
    }
    const { agent, encoded } = yield* encodeFor(env, request)
    yield* env.capacity.check(schedule.threadId)
    return {
      ...admissionCheckOf(agent, request, encoded),
      now,
      schedule: { scheduleId: schedule.scheduleId, occurrence },
    } satisfies AdmissionRequest
  }).pipe(
    Effect.map((admission) => ({ admission, refusal: undefined })),
    Effect.catchTag("AdmissionRefused", (refused: AdmissionRefused) =>
      Effect.succeed({
        admission: undefined,
        refusal: { occurrence, at: now, reason: refused.reason, message: refused.message },
      }),
    ),
  )

/**
 * Under `overlap: "skip"`, the schedule's last admitted occurrence while it has not settled (one
 * retention removed had settled); otherwise none.
 */
const unsettledPrevious = (env: RuntimeEnv, schedule: ScheduleInfo) =>
  schedule.overlap !== "skip" || schedule.lastSubmissionId === undefined
    ? Effect.succeed(undefined)
    : Effect.map(env.ledger.lookup(schedule.lastSubmissionId), (found) =>
        Option.isSome(found) && found.value.state !== "settled" ? found.value.submissionId : undefined,
      )

/** Admits (or refuses, or skips) the due occurrence of one schedule; whether a Submission was admitted. */
const advanceOne = (env: RuntimeEnv, schedule: ScheduleInfo, now: number) =>
  Effect.gen(function* () {
    const parsed = parseSpec(schedule.spec, schedule.createdAt)
    const base = { scheduleId: schedule.scheduleId, expectedNextAt: schedule.nextAt, now }
    if (Result.isFailure(parsed)) {
      const refusal = { occurrence: schedule.nextAt, at: now, ...parsed.failure }
      yield* env.ledger.advanceSchedule({
        ...base,
        nextAt: now + UNPARSABLE_RETRY_MILLIS,
        occurrence: schedule.nextAt,
        refusal,
      })
      return false
    }
    const due = dueOccurrence(parsed.success, schedule, now)
    const advance: ScheduleAdvance = { ...base, nextAt: due.nextAt }
    if (due.occurrence === undefined) {
      yield* env.ledger.advanceSchedule(advance)
      return false
    }
    const previous = yield* unsettledPrevious(env, schedule)
    const { admission, refusal } =
      previous === undefined
        ? yield* admissionFor(env, schedule, due.occurrence, now)
        : {
            admission: undefined,
            refusal: {
              occurrence: due.occurrence,
              at: now,
              reason: "overlap",
              message: `the previous occurrence, Submission ${previous}, has not settled`,
            },
          }
    const advanced = yield* env.ledger.advanceSchedule(
      { ...advance, occurrence: due.occurrence, ...(refusal === undefined ? {} : { refusal }) },
      admission,
    )
    if (advanced._tag !== "Admitted") return false
    yield* env.hit("occurrence:after-admit")
    if (!advanced.replayed) yield* env.wake.notify(schedule.threadId)
    return !advanced.replayed
  })

/**
 * `admitDueOccurrences`: the occurrences of up to `limit` due schedules; how many Submissions
 * it admitted. Reads the schedules due, never the others. @internal
 */
export const makeAdmitDueOccurrences = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.admitDueOccurrences")(function* (limit: number) {
    const now = yield* Clock.currentTimeMillis
    const due = yield* env.ledger.dueSchedules(now, limit)
    let admitted = 0
    for (const schedule of due) {
      if (yield* advanceOne(env, schedule, now)) admitted++
    }
    return admitted
  })
