/**
 * When a schedule's occurrences happen, and which one a pass admits: pure functions of the
 * schedule and the Object's clock. Cron expressions go through Effect's `Cron` (five fields, or
 * six with seconds; IANA time zones through `Intl`: a local time skipped by a DST change runs
 * shifted forward by the gap, 02:30 at 03:30, a repeated one once, at its earlier instant, so an
 * hourly cron runs 24 times on a 25-hour day, its repeated hour once). An interval counts
 * from the schedule's creation: occurrences at `createdAt + n × everyMillis`, `n ≥ 1`.
 */
import { Cron, Result } from "effect"
import { EVERY_MILLIS_RANGE, type MissedPolicy, SKIP_GRACE_MILLIS, type ScheduleSpec } from "./model.ts"

/** A spec ready to compute with. @internal */
export type ParsedSpec =
  | { readonly _tag: "Cron"; readonly cron: Cron.Cron }
  | { readonly _tag: "Every"; readonly everyMillis: number; readonly anchor: number }

/** Why a spec is refused: the part at fault and a message naming the problem. @internal */
export interface SpecProblem {
  readonly reason: "cron" | "time-zone" | "interval"
  readonly message: string
}

/**
 * Parses a spec anchored at `createdAt`, or names what is wrong with it: a cron expression that
 * does not parse, names an unknown time zone, or never occurs; an interval that is not a whole
 * number of milliseconds within 1 second and 1 year. @internal
 */
export const parseSpec = (spec: ScheduleSpec, createdAt: number): Result.Result<ParsedSpec, SpecProblem> => {
  if (spec._tag === "Every") {
    const { min, max } = EVERY_MILLIS_RANGE
    return Number.isSafeInteger(spec.everyMillis) && spec.everyMillis >= min && spec.everyMillis <= max
      ? Result.succeed({ _tag: "Every", everyMillis: spec.everyMillis, anchor: createdAt })
      : Result.fail({
          reason: "interval",
          message: `everyMillis must be a whole number from ${min} to ${max}, got ${spec.everyMillis}`,
        })
  }
  const parsed = Cron.parse(spec.cron, spec.timeZone ?? "UTC")
  if (Result.isFailure(parsed)) {
    const zone = parsed.failure.message.includes("time zone")
    return Result.fail(
      zone
        ? { reason: "time-zone", message: `unknown time zone "${spec.timeZone}"` }
        : {
            reason: "cron",
            message: `invalid cron expression "${spec.cron}": ${parsed.failure.message}`,
          },
    )
  }
  const cron = parsed.success
  // A valid expression can still name a day that never comes (30 February).
  if (safeNext(cron, createdAt) === undefined) {
    return Result.fail({ reason: "cron", message: `the cron expression "${spec.cron}" never occurs` })
  }
  return Result.succeed({ _tag: "Cron", cron })
}

const safeNext = (cron: Cron.Cron, after: number): number | undefined => {
  try {
    return Cron.next(cron, after).getTime()
  } catch {
    return undefined
  }
}

/** The first occurrence strictly after `t`; `undefined` when a cron has none to come. @internal */
export const occurrenceAfter = (spec: ParsedSpec, t: number): number | undefined => {
  if (spec._tag === "Cron") return safeNext(spec.cron, t)
  const { anchor, everyMillis } = spec
  if (t < anchor) return anchor + everyMillis
  return anchor + (Math.floor((t - anchor) / everyMillis) + 1) * everyMillis
}

/** The last occurrence at or before `t`, if any. @internal */
export const occurrenceAtOrBefore = (spec: ParsedSpec, t: number): number | undefined => {
  if (spec._tag === "Every") {
    const n = Math.floor((t - spec.anchor) / spec.everyMillis)
    return n >= 1 ? spec.anchor + n * spec.everyMillis : undefined
  }
  try {
    // `prev` is strict, and occurrences fall on whole seconds: 1 ms later includes `t` itself.
    return Cron.prev(spec.cron, t + 1).getTime()
  } catch {
    return undefined
  }
}

/** What a pass does with a due schedule. @internal */
export interface DueOccurrence {
  /** The occurrence to admit now; none when `skip` passes over every missed one. */
  readonly occurrence: number | undefined
  /** The next occurrence after this pass: always later than `now`. */
  readonly nextAt: number
}

/** When to look again for the next occurrence of a cron whose search gave up (none in its horizon). */
const LOOK_AGAIN_MILLIS = 366 * 86_400_000

/**
 * The occurrence a pass at `now` admits for a schedule due at `nextAt` (`nextAt <= now`): the
 * latest occurrence not after `now` under `latest`; under `skip` the same one only while it is
 * at most `SKIP_GRACE_MILLIS` late, else none. Either way the missed occurrences before it are
 * not admitted (catching up a long outage one occurrence at a time is not offered), and the
 * next occurrence is the first after `now`. @internal
 */
export const dueOccurrence = (
  spec: ParsedSpec,
  schedule: { readonly nextAt: number; readonly missed: MissedPolicy },
  now: number,
): DueOccurrence => {
  const latest = Math.max(schedule.nextAt, occurrenceAtOrBefore(spec, now) ?? schedule.nextAt)
  const onTime = now - latest <= SKIP_GRACE_MILLIS
  return {
    occurrence: schedule.missed === "latest" || onTime ? latest : undefined,
    nextAt: occurrenceAfter(spec, Math.max(latest, now)) ?? Math.max(latest, now) + LOOK_AGAIN_MILLIS,
  }
}
