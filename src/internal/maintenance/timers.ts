/**
 * Timed waits as the maintenance record sees them: when each due row can be served, the one
 * alarm target that timers due close together share, and the due bound the finish keeps in
 * the record. Pure, so every rule is property-tested.
 *
 * The bound is a lower bound of every due time (never later than the earliest by more than the
 * coalescing window), so the caught-up pass reads the record alone: a bound that is too early
 * costs one actionable pass that finds nothing due; one that is too late would lose a timer, and
 * no rule writes one.
 */
import type { SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import type { BindingRetry } from "./state.ts"

/**
 * When a due row can be served: its due time; for a row held by an Attempt, the end of its
 * lease; never before a binding wait for it ends.
 */
export const servableAt = (
  row: Pick<SubmissionSnapshot, "submissionId" | "state" | "dueAt" | "ownership">,
  waits: ReadonlyArray<BindingRetry>,
): number => {
  const due = row.dueAt ?? -Infinity
  const held =
    row.state === "running" && row.ownership !== undefined ? row.ownership.leaseExpiresAt : -Infinity
  const binding = waits.find((wait) => wait.submissionId === row.submissionId)?.notBefore ?? -Infinity
  return Math.max(due, held, binding)
}

/**
 * The alarm target of timers servable at `times`: the latest of those within `coalesceMillis`
 * of the earliest, so they share one delivery, none early and each at most the window late.
 */
export const coalescedTarget = (times: ReadonlyArray<number>, coalesceMillis: number): number | undefined => {
  if (times.length === 0) return undefined
  const earliest = Math.min(...times)
  return Math.max(...times.filter((time) => time <= earliest + coalesceMillis))
}

/** What the finish read of the timed waits, from the first rows of the due order. */
export interface TimerReading {
  /** The bound the rows read imply (their coalesced target), or none without timed waits. */
  readonly bound: number | undefined
  /** The target of the rows servable after now: the alarm's share of timers. */
  readonly later: number | undefined
  /** Whether a row servable now remains (its event's budget ran out): work for the next event. */
  readonly servableNow: boolean
}

/**
 * Reads the first rows of the due order at `now`, with the other due times the Object owes
 * (`also`: the next occurrence of its schedules), which share the alarm like timers.
 */
export const readTimers = (
  rows: ReadonlyArray<Pick<SubmissionSnapshot, "submissionId" | "state" | "dueAt" | "ownership">>,
  waits: ReadonlyArray<BindingRetry>,
  now: number,
  coalesceMillis: number,
  also: ReadonlyArray<number> = [],
): TimerReading => {
  const times = [...rows.map((row) => servableAt(row, waits)), ...also]
  return {
    bound: coalescedTarget(times, coalesceMillis),
    later: coalescedTarget(
      times.filter((time) => time > now),
      coalesceMillis,
    ),
    servableNow: times.some((time) => time <= now),
  }
}

/**
 * The bound an actionable finish stores, from the one it read (`stored`) and the one the event
 * implies (`fresh`: its timers' bound, or earlier when autonomous work remains behind an
 * acknowledged generation, which only a due row's Attempt can leave, by ending the wait that
 * held its lane): lowered at once; dropped once nothing is due any more; otherwise replaced
 * only when the record is written anyway (`writes`), or when this event found nothing due
 * although the stored bound said so (it corrects the bound it acted on, once). An event that
 * only resumes timers writes nothing.
 */
export const nextBound = (
  stored: number | undefined,
  fresh: number | undefined,
  facts: { readonly now: number; readonly writes: boolean; readonly servedDue: boolean },
): number | undefined => {
  if (fresh === undefined) return undefined
  if (stored === undefined || fresh < stored) return fresh
  if (facts.writes) return fresh
  if (stored <= facts.now && !facts.servedDue) return fresh
  return stored
}
