/**
 * Making and removing schedules. A schedule is checked whole before anything is written: its
 * spec parses and occurs, its agent is registered here and its input decodes and fits the
 * ledger's `maxInputBytes` (an occurrence decodes it again with the agent then registered). The same definition scheduled again keeps
 * the stored schedule, its next occurrence and the anchor of its interval.
 */
import { spanned } from "../../spanned.ts"
import { Clock, Option, Result } from "effect"
import { canonicalJson } from "../../digest.ts"
import { ScheduleInfo, type ScheduleId, type ScheduleSpec, sameDefinition } from "../../schedule/model.ts"
import { occurrenceAfter, parseSpec } from "../../schedule/next.ts"
import type { RuntimeEnv } from "../shared/runtimeEnv.ts"
import { encodeFor } from "../admission/encodeInput.ts"
import { inputBytesRefusal } from "../../ledger/admission.ts"
import { InvalidSchedule, type ScheduleRequest } from "./model.ts"

/** A checked schedule, ready to store: `unchanged` when the same definition is stored already. */
export interface PreparedSchedule {
  readonly schedule: ScheduleInfo
  readonly unchanged: boolean
}

const specOf = (request: ScheduleRequest): ScheduleSpec | InvalidSchedule => {
  const invalid = (message: string) =>
    new InvalidSchedule({ scheduleId: request.scheduleId, reason: "spec", message })
  if (request.cron !== undefined && request.everyMillis !== undefined)
    return invalid("a schedule takes either cron or everyMillis, not both")
  if (request.cron !== undefined)
    return {
      _tag: "Cron",
      cron: request.cron,
      ...(request.timeZone === undefined ? {} : { timeZone: request.timeZone }),
    }
  if (request.everyMillis === undefined) return invalid("a schedule needs cron or everyMillis")
  if (request.timeZone !== undefined) return invalid("timeZone applies to cron only")
  return { _tag: "Every", everyMillis: request.everyMillis }
}

/** `prepareSchedule`: everything `schedule` checks, without writing. @internal */
export const makePrepareSchedule = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.prepareSchedule")(function* (request: ScheduleRequest) {
    const spec = specOf(request)
    if (spec instanceof InvalidSchedule) return yield* spec
    const now = yield* Clock.currentTimeMillis
    const parsed = parseSpec(spec, now)
    if (Result.isFailure(parsed)) {
      return yield* new InvalidSchedule({ scheduleId: request.scheduleId, ...parsed.failure })
    }
    const { encoded } = yield* encodeFor(env, request)
    const input = canonicalJson(encoded)
    // Each occurrence is admitted with this input: one it would refuse is refused now.
    const tooLarge = inputBytesRefusal({ threadId: request.threadId, inputPayload: input }, env.limits)
    if (tooLarge !== undefined) return yield* tooLarge
    const schedule = new ScheduleInfo({
      scheduleId: request.scheduleId,
      threadId: request.threadId,
      agentId: request.agentId,
      input: JSON.parse(input),
      spec,
      missed: request.missed ?? "latest",
      // `queue` is stored as no policy, so both spell the same definition.
      ...(request.overlap === "skip" ? { overlap: "skip" as const } : {}),
      // `parseSpec` found an occurrence after `now`.
      nextAt: occurrenceAfter(parsed.success, now) as number,
      createdAt: now,
    })
    const stored = yield* env.ledger.lookupSchedule(request.scheduleId)
    // A replacement's last occurrence is carried over by the ledger as it stores it (a pass may
    // admit one before then), and `schedule` answers what it stored.
    return Option.isSome(stored) && sameDefinition(stored.value, schedule)
      ? ({ schedule: stored.value, unchanged: true } satisfies PreparedSchedule)
      : ({ schedule, unchanged: false } satisfies PreparedSchedule)
  })

/** `schedule`: stores a prepared schedule (a stored one of the same definition is kept). @internal */
export const makeSchedule = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.schedule")(function* (prepared: PreparedSchedule) {
    return prepared.unchanged ? prepared.schedule : yield* env.ledger.putSchedule(prepared.schedule)
  })

/** `unschedule`: removes a schedule; its admitted occurrences run on. @internal */
export const makeUnschedule = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.unschedule")(function* (scheduleId: ScheduleId) {
    return { removed: yield* env.ledger.removeSchedule(scheduleId) }
  })
