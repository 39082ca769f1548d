/**
 * Timed waits in the alarm policy and the due bound, as properties: an Object whose only work is
 * a due bound has its alarm there and nothing earlier; a timer never pulls an alarm below the
 * floor, nor an overdue one below a pending retry; a mutation with work due later never
 * postpones an earlier alarm; timers within the coalescing window share one target, none early;
 * the bound stays a lower bound and is raised only by a commit that writes the record anyway or
 * that found nothing due at it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { type AlarmRecord, type AlarmWrite, decideAlarm } from "../../src/internal/maintenance/alarmPolicy.ts"
import { MaintenanceRetry } from "../../src/internal/maintenance/state.ts"
import { coalescedTarget, nextBound, readTimers } from "../../src/internal/maintenance/timers.ts"

const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

const NOW = 1_000_000_000
const Timing = Schema.Struct({
  minimumAlarmDelayMillis: between(1, 5_000),
  wakeScanIntervalMillis: between(1, 100_000),
})
/** A due bound relative to now: overdue, soon, or far. */
const Bound = between(-60_000, 600_000)
/** A retry of the current generation relative to now, or none. */
const Retry = Schema.optionalKey(between(-60_000, 60_000))

const recordOf = (input: { readonly bound: number; readonly retry?: number | undefined }): AlarmRecord => ({
  dirty: 10n,
  processed: 10n,
  nextDueAt: NOW + input.bound,
  ...(input.retry === undefined
    ? {}
    : {
        retry: MaintenanceRetry.make({
          generation: 10n,
          notBefore: NOW + input.retry,
          nativeOnly: true,
          stalls: 1,
        }),
      }),
})

const at = (write: AlarmWrite): number => {
  if (write._tag === "Set" || write._tag === "EnsureBy") return write.at
  throw new Error(`expected an alarm, got ${write._tag}`)
}

describe("timed waits in the alarm policy", () => {
  it.prop(
    "ensure an Object whose only work is a due bound an alarm at the bound, never below the floor or a pending retry",
    { timing: Timing, bound: Bound, retry: Retry },
    ({ timing, bound, retry }) => {
      const floor = NOW + timing.minimumAlarmDelayMillis
      const write = decideAlarm(timing, { commit: "ensure", now: NOW, record: recordOf({ bound, retry }) })
      expect(write._tag).toBe("EnsureBy")
      expect(at(write)).toBe(Math.max(floor, NOW + bound, retry === undefined ? -Infinity : NOW + retry))
    },
  )

  it.prop(
    "rearm a caught-up pass for a future bound exactly, and never clear it",
    { timing: Timing, bound: between(1, 600_000) },
    ({ timing, bound }) => {
      const write = decideAlarm(timing, {
        commit: "caught-up",
        now: NOW,
        record: recordOf({ bound }),
        active: 0,
        deadline: undefined,
      })
      expect(write).toEqual({ _tag: "Set", at: Math.max(NOW + timing.minimumAlarmDelayMillis, NOW + bound) })
    },
  )

  it.prop(
    "keep an overdue bound behind a pending retry after a failed pass",
    { timing: Timing, bound: between(-60_000, 0), retry: between(1, 60_000) },
    ({ timing, bound, retry }) => {
      const record = recordOf({ bound, retry })
      for (const facts of [
        { commit: "caught-up", now: NOW, record, active: 0, deadline: undefined },
        { commit: "ensure", now: NOW, record },
      ] as const) {
        expect(at(decideAlarm(timing, facts))).toBeGreaterThanOrEqual(NOW + retry)
      }
      const failed = decideAlarm(timing, {
        commit: "failure",
        now: NOW,
        record,
        generation: 10n,
        active: 0,
        nativeOnly: true,
        retryAt: NOW + retry,
        deadline: undefined,
      })
      expect(at(failed)).toBe(Math.max(NOW + timing.minimumAlarmDelayMillis, NOW + retry))
    },
  )

  it.prop(
    "place an actionable finish's alarm at the next timers when nothing else is owed, never below the floor",
    { timing: Timing, timers: between(1, 600_000), deadline: Schema.optionalKey(between(1, 600_000)) },
    ({ timing, timers, deadline }) => {
      const write = decideAlarm(timing, {
        commit: "actionable",
        now: NOW,
        record: recordOf({ bound: 0 }),
        generation: 10n,
        busy: false,
        autonomous: false,
        dueAt: NOW,
        deadline: deadline === undefined ? undefined : NOW + deadline,
        timers: NOW + timers,
      })
      expect(write).toEqual({
        _tag: "Set",
        at: Math.max(NOW + timing.minimumAlarmDelayMillis, NOW + Math.min(timers, deadline ?? Infinity)),
      })
    },
  )

  it.prop(
    "ensure a mutation's work due later by its due time, never replacing an earlier alarm",
    { timing: Timing, dueIn: between(-1_000, 600_000) },
    ({ timing, dueIn }) => {
      const write = decideAlarm(timing, { commit: "mutation", now: NOW, dueAt: NOW + dueIn })
      expect(write).toEqual({
        _tag: "EnsureBy",
        at: Math.max(NOW + timing.minimumAlarmDelayMillis, NOW + dueIn),
      })
    },
  )

  it.prop(
    "keep the target of work the record owes when a mutation adds work due later",
    { timing: Timing, dueIn: between(-1_000, 600_000), bound: Bound, owed: Schema.Boolean },
    ({ timing, dueIn, bound, owed }) => {
      const record = { ...recordOf({ bound }), ...(owed ? { dirty: 11n } : {}) }
      const write = decideAlarm(timing, { commit: "mutation", now: NOW, dueAt: NOW + dueIn, record })
      const floor = NOW + timing.minimumAlarmDelayMillis
      const target = Math.min(
        Math.max(floor, NOW + dueIn),
        Math.max(floor, NOW + bound),
        owed ? NOW + timing.wakeScanIntervalMillis : Infinity,
      )
      expect(write).toEqual({ _tag: "EnsureBy", at: Math.max(floor, target) })
    },
  )
})

describe("the due bound", () => {
  const Times = Schema.Array(between(0, 10_000))

  it.prop(
    "shares one target among timers within the window, none early, each at most the window late",
    { times: Times, window: between(0, 1_000) },
    ({ times, window }) => {
      const target = coalescedTarget(times, window)
      if (times.length === 0) return expect(target).toBeUndefined()
      const earliest = Math.min(...times)
      expect(target).toBeGreaterThanOrEqual(earliest)
      expect(target).toBeLessThanOrEqual(earliest + window)
      for (const time of times) if (time <= earliest + window) expect(time).toBeLessThanOrEqual(target!)
    },
  )

  it("counts a row held by an Attempt at its lease's end and a row in a binding wait at the wait's end", () => {
    const waiting = { submissionId: "a", state: "waiting", dueAt: 100 } as const
    const held = {
      submissionId: "b",
      state: "running",
      dueAt: 50,
      ownership: { attemptId: "x", ownershipToken: "t", leaseExpiresAt: 500 },
    } as const
    const binding = [{ submissionId: "c", threadId: "t", attempts: 1, notBefore: 900, reportedAt: 0 }]
    const reading = readTimers(
      [waiting, held, { submissionId: "c", state: "waiting", dueAt: 10 }] as never,
      binding as never,
      200,
      10,
    )
    expect(reading).toEqual({ bound: 100, later: 500, servableNow: true })
  })

  it.prop(
    "is lowered at once, dropped with the last timer, and raised only by a record written anyway or a bound that found nothing due",
    {
      stored: Schema.optionalKey(between(0, 10_000)),
      fresh: Schema.optionalKey(between(0, 10_000)),
      now: between(0, 10_000),
      writes: Schema.Boolean,
      servedDue: Schema.Boolean,
    },
    ({ stored, fresh, now, writes, servedDue }) => {
      const next = nextBound(stored, fresh, { now, writes, servedDue })
      if (fresh === undefined) return expect(next).toBeUndefined()
      if (stored === undefined || fresh < stored) return expect(next).toBe(fresh)
      const raisedFor = writes || (stored !== undefined && stored <= now && !servedDue)
      expect(next).toBe(raisedFor ? fresh : stored)
      // Never above the truth: the stored bound kept was no later than the fresh one.
      if (next !== undefined && fresh !== undefined) expect(next).toBeLessThanOrEqual(fresh)
    },
  )
})
