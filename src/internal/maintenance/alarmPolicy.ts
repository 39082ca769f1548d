/**
 * Which alarm a maintenance commit leaves: one pure function of the stored record and the facts
 * of the commit. Every rule about the slot lives here (and is property-tested); `writeAlarm`
 * applies the answer inside the commit's storage transaction.
 *
 * Two kinds of write exist. Producers, the constructor gate and the start of a pass only ever
 * ensure an alarm by a deadline (never overwriting an earlier one). The pass's own finish and
 * failure commits replace the slot, because they decide what the event leaves behind; their
 * targets are never earlier than the begin prearm, so workerd does not cancel the running
 * handler.
 */
import { minimumAlarmDelay } from "./backoff.ts"
import { applicableRetry, type ThreadMaintenanceState } from "./state.ts"

/** What a commit does to the alarm slot. */
export type AlarmWrite =
  /** Leaves the slot as it is. */
  | { readonly _tag: "Keep" }
  /** Keeps the earlier of the slot and `at`. */
  | { readonly _tag: "EnsureBy"; readonly at: number }
  /** Replaces the slot. */
  | { readonly _tag: "Set"; readonly at: number }
  /** Deletes the slot. */
  | { readonly _tag: "Clear" }

/** The timing the policy reads from the configuration. */
export interface AlarmTiming {
  /** `minimumAlarmDelay`: no alarm is written earlier than now plus this. */
  readonly minimumAlarmDelayMillis: number
  /** The native cadence while a generation is owed without a matching retry. */
  readonly wakeScanIntervalMillis: number
}

/** The policy's timing from the configuration. */
export const alarmTiming = (config: {
  readonly alarmBackoffBase: number
  readonly wakeScanInterval: number
}): AlarmTiming => ({
  minimumAlarmDelayMillis: minimumAlarmDelay(config.alarmBackoffBase),
  wakeScanIntervalMillis: config.wakeScanInterval,
})

/** The part of the stored record the policy reads. */
export type AlarmRecord = Pick<ThreadMaintenanceState, "dirty" | "processed" | "retry" | "nextDueAt">

/**
 * The facts of one commit. `now` is the time the commit is decided at; `deadline` the earliest
 * pending host deadline (publication, delivery, projection, host hooks), if any; `active` the
 * gated mutations in flight when the pass took its snapshot. Timed waits are due at the
 * record's `nextDueAt` (a lower bound), or at the fresh `timers` target the actionable finish
 * computed; they follow every rule a host deadline follows.
 */
export type AlarmFacts =
  /**
   * A gated mutation's prearm, before its body runs; `dueAt` when it creates only work due then
   * (a delayed admission, a schedule) and invalidates nothing, with the `record` it leaves as it
   * is: work the record already owes keeps its own target.
   */
  | {
      readonly commit: "mutation"
      readonly now: number
      readonly dueAt?: number
      readonly record?: AlarmRecord
    }
  /** The crash-fallback prearm at the start of a pass, before recovery and any host hook. */
  | { readonly commit: "begin"; readonly now: number }
  /** The constructor gate, for native work the record says is owed. */
  | { readonly commit: "ensure"; readonly now: number; readonly record: AlarmRecord }
  /** The constructor gate, for the host deadline read after the native check. */
  | {
      readonly commit: "ensure-deadline"
      readonly now: number
      readonly record: AlarmRecord
      readonly deadline: number | undefined
    }
  /** The finish of a pass that ran no native work. */
  | {
      readonly commit: "caught-up"
      readonly now: number
      readonly record: AlarmRecord
      readonly active: number
      readonly deadline: number | undefined
    }
  /** The finish of a pass that ran recovery and served a head. */
  | {
      readonly commit: "actionable"
      readonly now: number
      /** The record as the finish read it, before its own write. */
      readonly record: AlarmRecord
      /** The generation read when the pass began. */
      readonly generation: bigint
      /** A mutation was in flight at the pass's start or at its finish. */
      readonly busy: boolean
      /** Work remains that no outside actor has to move. */
      readonly autonomous: boolean
      /**
       * When autonomous work is next due: `alarmBackoffBase` after the event began when it made
       * progress, otherwise the backoff from now; never before a binding wait ends.
       */
      readonly dueAt: number
      readonly deadline: number | undefined
      /** When the next timed waits are due (coalesced), read at this finish; later than `now`. */
      readonly timers: number | undefined
    }
  /** The bounded retry committed after a failed pass. */
  | {
      readonly commit: "failure"
      readonly now: number
      /** The record as the rearm read it, before its own write. */
      readonly record: AlarmRecord
      /** The generation the failed pass read when it began. */
      readonly generation: bigint
      readonly active: number
      /** The failure struck while native work (recovery, the head Attempt) ran. */
      readonly nativeOnly: boolean
      /** The `notBefore` of the retry this commit writes. */
      readonly retryAt: number
      readonly deadline: number | undefined
    }

const minOf = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

/**
 * When the record's timed waits can next be served: its bound, but not before a pending retry
 * (a pass before it is caught up, so an overdue timer cannot loop at the floor).
 */
export const timersDue = (record: AlarmRecord): number | undefined => {
  const bound = record.nextDueAt
  if (bound === undefined) return undefined
  const retry = applicableRetry(record)
  return retry === undefined ? bound : Math.max(bound, retry.notBefore)
}

const KEEP: AlarmWrite = { _tag: "Keep" }
const CLEAR: AlarmWrite = { _tag: "Clear" }
const ensureBy = (at: number): AlarmWrite => ({ _tag: "EnsureBy", at })
const set = (at: number): AlarmWrite => ({ _tag: "Set", at })

/** The alarm a commit leaves. */
export const decideAlarm = (timing: AlarmTiming, facts: AlarmFacts): AlarmWrite => {
  const { now } = facts
  const floor = now + timing.minimumAlarmDelayMillis
  const scan = now + timing.wakeScanIntervalMillis
  /** Never earlier than the floor. */
  const clamped = (at: number) => Math.max(floor, at)
  /** `native`, pulled in by a host deadline but never below the floor. */
  const withDeadline = (native: number, deadline: number | undefined) =>
    deadline === undefined ? native : clamped(Math.min(native, deadline))
  /**
   * When the record's owed work needs its alarm: native work by the scan (a pending native retry
   * by the retry itself: ensure-by cannot accelerate it), timed waits by their bound.
   */
  const ensureTarget = (record: AlarmRecord) => {
    const timers = timersDue(record)
    const retry = applicableRetry(record)
    const native =
      record.dirty <= record.processed ? undefined : retry === undefined ? scan : clamped(retry.notBefore)
    return minOf(native, timers === undefined ? undefined : clamped(timers))
  }

  switch (facts.commit) {
    case "mutation": {
      // Work due later needs its alarm by then only; anything else is owed now. While a handler
      // runs, the alarm reads as unset: the target must keep what the record already owes, or
      // a failing handler leaves that work waiting for the later time (no platform retry follows
      // an alarm written during the handler).
      if (facts.dueAt === undefined) return ensureBy(floor)
      const owed = facts.record === undefined ? undefined : ensureTarget(facts.record)
      return ensureBy(clamped(minOf(facts.dueAt, owed) as number))
    }
    case "begin":
      // Bounds newly owed work without relying on a wake hint; a later pass may move it later.
      return ensureBy(floor)
    case "ensure": {
      const next = ensureTarget(facts.record)
      return next === undefined ? KEEP : ensureBy(next)
    }
    case "ensure-deadline": {
      const { deadline } = facts
      if (deadline === undefined) return KEEP
      const retry = applicableRetry(facts.record)
      // An overdue host deadline after a failure outside the native phase waits for the
      // backoff, so a failing host drain cannot hot-loop at the floor.
      const overdueAfterHostFailure = deadline <= now && retry !== undefined && !retry.nativeOnly
      return ensureBy(clamped(overdueAfterHostFailure ? Math.max(deadline, retry.notBefore) : deadline))
    }
    case "caught-up": {
      const { record, active, deadline } = facts
      const retry = applicableRetry(record)
      const native =
        active > 0 || record.dirty > record.processed
          ? retry !== undefined && active === 0
            ? clamped(retry.notBefore)
            : scan
          : Infinity
      // Overdue timers a caught-up event could not serve (publication held it back) wait like
      // owed native work, at the scan cadence.
      const timers = timersDue(record)
      const timerTarget = timers === undefined ? Infinity : timers <= now ? scan : timers
      const next = Math.min(native, deadline ?? Infinity, timerTarget)
      // Nothing owed, nothing in flight, nothing pending: the Object goes quiet.
      return Number.isFinite(next) ? set(clamped(next)) : CLEAR
    }
    case "actionable": {
      const { record } = facts
      // Timers due later than now join the host deadline; overdue ones count as autonomous work.
      const deadline = minOf(facts.deadline, facts.timers)
      if (facts.autonomous) {
        // This pass's bounded backoff replaces the crash-fallback prearm (never earlier than
        // the floor), but a racing producer is never postponed by it.
        const raced = facts.busy || record.dirty !== facts.generation
        return set(withDeadline(raced ? floor : clamped(facts.dueAt), deadline))
      }
      const processed =
        facts.busy || record.processed > facts.generation ? record.processed : facts.generation
      if (facts.busy || record.dirty > processed) {
        // The overlapping mutation's own earlier prearm survives: do not accelerate from
        // inside the handler.
        return ensureBy(withDeadline(scan, deadline))
      }
      // Stable waits are acknowledged: only a host deadline keeps an alarm.
      return deadline === undefined ? CLEAR : set(clamped(deadline))
    }
    case "failure": {
      const { deadline } = facts
      // Never postpone a producer that raced the failed observation.
      const raced = facts.active > 0 || facts.record.dirty !== facts.generation
      // A timer due later pulls the retry in; an overdue one waits for the backoff.
      const timers = facts.record.nextDueAt
      const native = raced
        ? floor
        : timers !== undefined && timers > now
          ? Math.min(facts.retryAt, timers)
          : facts.retryAt
      // An overdue host deadline pulls the alarm in only after a native-phase failure, so a
      // failing host drain cannot hot-loop at the floor.
      const pulls = deadline !== undefined && (facts.nativeOnly || deadline > now)
      return set(clamped(pulls ? Math.min(native, deadline) : native))
    }
  }
}

/** The final disposition of the slot, as a pass reports it. */
export type AlarmDisposition = "rearmed" | "cleared"

/** How a finish reports the write it made. */
export const dispositionOf = (write: AlarmWrite): AlarmDisposition =>
  write._tag === "Clear" ? "cleared" : "rearmed"
