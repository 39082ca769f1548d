/**
 * The alarm policy against the rules it implements, as properties over arbitrary records,
 * clocks, host deadlines and racing mutations. Each rule is stated in its own words in the
 * test name; `decideAlarm` is the only place that decides the slot.
 */
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  type AlarmRecord,
  type AlarmTiming,
  type AlarmWrite,
  decideAlarm,
} from "../../src/internal/maintenance/alarmPolicy.ts"
import { MaintenanceRetry } from "../../src/internal/maintenance/state.ts"

const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

const Timing = Schema.Struct({
  minimumAlarmDelayMillis: between(1, 5_000),
  wakeScanIntervalMillis: between(1, 100_000),
})

/** A record around generation 10: owed or not, with or without a retry of any generation. */
const Record = Schema.Struct({
  processed: between(0, 10),
  retry: Schema.optionalKey(
    Schema.Struct({
      generation: between(8, 10),
      offset: between(-60_000, 60_000),
      nativeOnly: Schema.Boolean,
      stalls: between(0, 30),
    }),
  ),
})
type RecordInput = typeof Record.Type

/** A host deadline relative to now, or none. */
const Deadline = Schema.optionalKey(between(-60_000, 60_000))

const NOW = 1_000_000_000
const record = (input: RecordInput): AlarmRecord => ({
  dirty: 10n,
  processed: BigInt(input.processed),
  ...(input.retry === undefined
    ? {}
    : {
        retry: MaintenanceRetry.make({
          generation: BigInt(input.retry.generation),
          notBefore: NOW + input.retry.offset,
          nativeOnly: input.retry.nativeOnly,
          stalls: input.retry.stalls,
        }),
      }),
})
const deadlineOf = (offset: number | undefined) => (offset === undefined ? undefined : NOW + offset)
/** The retry that applies to the owed generation. */
const applicable = (input: RecordInput) => (input.retry?.generation === 10 ? input.retry : undefined)
const floorOf = (timing: AlarmTiming) => NOW + timing.minimumAlarmDelayMillis

/** The target of a write that keeps an alarm. */
const target = (write: AlarmWrite): number => {
  if (write._tag === "Set" || write._tag === "EnsureBy") return write.at
  throw new Error(`expected an alarm, got ${write._tag}`)
}

describe("the alarm a prearm leaves", () => {
  it.prop(
    "is an alarm by the floor, never replacing an earlier one, for a mutation and a pass's begin",
    { timing: Timing, now: between(0, 2_000_000_000), commit: Schema.Literals(["mutation", "begin"]) },
    ({ timing, now, commit }) => {
      expect(decideAlarm(timing, { commit, now })).toEqual({
        _tag: "EnsureBy",
        at: now + timing.minimumAlarmDelayMillis,
      })
    },
  )
})

describe("the alarm the constructor gate leaves", () => {
  it.prop(
    "keeps the slot when nothing is owed, and otherwise ensures one by the retry or the scan cadence",
    { timing: Timing, input: Record },
    ({ timing, input }) => {
      const write = decideAlarm(timing, { commit: "ensure", now: NOW, record: record(input) })
      if (input.processed >= 10) return expect(write).toEqual({ _tag: "Keep" })
      expect(write._tag).toBe("EnsureBy")
      const retry = applicable(input)
      expect(target(write)).toBe(
        retry === undefined
          ? NOW + timing.wakeScanIntervalMillis
          : Math.max(floorOf(timing), NOW + retry.offset),
      )
    },
  )

  it.prop(
    "never accelerates the pending retry of the owed generation",
    { timing: Timing, input: Record, deadline: Deadline },
    ({ timing, input, deadline }) => {
      const retry = applicable(input)
      if (retry === undefined || input.processed >= 10) return
      const native = decideAlarm(timing, { commit: "ensure", now: NOW, record: record(input) })
      expect(target(native)).toBeGreaterThanOrEqual(NOW + retry.offset)
      // An overdue host deadline after a failure outside the native phase waits for it too.
      if (deadline !== undefined && deadline <= 0 && !retry.nativeOnly) {
        const host = decideAlarm(timing, {
          commit: "ensure-deadline",
          now: NOW,
          record: record(input),
          deadline: deadlineOf(deadline),
        })
        expect(target(host)).toBeGreaterThanOrEqual(NOW + retry.offset)
      }
    },
  )

  it.prop(
    "ensures a pending host deadline, no earlier than the floor, and honours a future one as it is",
    { timing: Timing, input: Record, deadline: Deadline },
    ({ timing, input, deadline }) => {
      const write = decideAlarm(timing, {
        commit: "ensure-deadline",
        now: NOW,
        record: record(input),
        deadline: deadlineOf(deadline),
      })
      if (deadline === undefined) return expect(write).toEqual({ _tag: "Keep" })
      expect(write._tag).toBe("EnsureBy")
      expect(target(write)).toBeGreaterThanOrEqual(floorOf(timing))
      if (deadline > 0) expect(target(write)).toBe(Math.max(floorOf(timing), NOW + deadline))
    },
  )
})

describe("the alarm a caught-up pass leaves", () => {
  const Facts = { timing: Timing, input: Record, active: between(0, 3), deadline: Deadline }
  const decide = (facts: {
    readonly timing: AlarmTiming
    readonly input: RecordInput
    readonly active: number
    readonly deadline?: number | undefined
  }) =>
    decideAlarm(facts.timing, {
      commit: "caught-up",
      now: NOW,
      record: record(facts.input),
      active: facts.active,
      deadline: deadlineOf(facts.deadline),
    })

  it.prop("clears the slot exactly when nothing is owed, in flight or pending", Facts, (facts) => {
    const { input, active, deadline } = facts
    const write = decide(facts)
    const quiet = input.processed >= 10 && active === 0 && deadline === undefined
    expect(write._tag).toBe(quiet ? "Clear" : "Set")
  })

  it.prop("rearms no earlier than the floor and no later than a pending host deadline", Facts, (facts) => {
    const { timing, deadline } = facts
    const write = decide(facts)
    if (write._tag === "Clear") return
    expect(target(write)).toBeGreaterThanOrEqual(floorOf(timing))
    if (deadline !== undefined) {
      expect(target(write)).toBeLessThanOrEqual(Math.max(floorOf(timing), NOW + deadline))
    }
  })

  it.prop(
    "waits for the retry of the owed generation, and otherwise for the scan cadence",
    Facts,
    ({ timing, input, active }) => {
      if (input.processed >= 10 && active === 0) return
      const write = decide({ timing, input, active })
      const retry = applicable(input)
      // A mutation in flight is not held back by a retry it will make obsolete.
      const expected =
        retry !== undefined && active === 0
          ? Math.max(floorOf(timing), NOW + retry.offset)
          : Math.max(floorOf(timing), NOW + timing.wakeScanIntervalMillis)
      expect(write).toEqual({ _tag: "Set", at: expected })
    },
  )
})

describe("the alarm an actionable pass leaves", () => {
  const Facts = {
    timing: Timing,
    input: Record,
    generation: between(8, 10),
    busy: Schema.Boolean,
    autonomous: Schema.Boolean,
    /** When autonomous work is due, relative to now: after progress it may be close or past. */
    dueOffset: between(-1_000, 60_000),
    deadline: Deadline,
  }
  const decide = (facts: {
    readonly timing: AlarmTiming
    readonly input: RecordInput
    readonly generation: number
    readonly busy: boolean
    readonly autonomous: boolean
    readonly dueOffset: number
    readonly deadline: number | undefined
  }) =>
    decideAlarm(facts.timing, {
      commit: "actionable",
      now: NOW,
      record: record(facts.input),
      generation: BigInt(facts.generation),
      busy: facts.busy,
      autonomous: facts.autonomous,
      dueAt: NOW + facts.dueOffset,
      deadline: deadlineOf(facts.deadline),
      timers: undefined,
    })

  it.prop(
    "sets autonomous work for when it is due, never before the floor, and never postpones a racing producer",
    Facts,
    (facts) => {
      if (!facts.autonomous) return
      const write = decide(facts)
      expect(write._tag).toBe("Set")
      const raced = facts.busy || facts.generation !== 10
      if (raced) expect(target(write)).toBeLessThanOrEqual(floorOf(facts.timing))
      else if (facts.deadline === undefined)
        expect(target(write)).toBe(Math.max(floorOf(facts.timing), NOW + facts.dueOffset))
      if (facts.deadline !== undefined) {
        expect(target(write)).toBeGreaterThanOrEqual(floorOf(facts.timing))
        expect(target(write)).toBeLessThanOrEqual(Math.max(floorOf(facts.timing), NOW + facts.deadline))
      }
    },
  )

  /** A mutation is in flight, or one advanced the generation past what this pass acknowledges. */
  const stillOwed = (facts: {
    readonly input: RecordInput
    readonly generation: number
    readonly busy: boolean
  }) => facts.busy || 10 > Math.max(facts.input.processed, facts.generation)

  it.prop(
    "clears the slot once stable waits are acknowledged, nothing raced and nothing is pending",
    Facts,
    (facts) => {
      if (facts.autonomous) return
      const write = decide(facts)
      const raced = stillOwed(facts)
      if (!raced && facts.deadline === undefined) expect(write).toEqual({ _tag: "Clear" })
      else if (!raced) {
        expect(write).toEqual({ _tag: "Set", at: Math.max(floorOf(facts.timing), NOW + facts.deadline!) })
      }
    },
  )

  it.prop(
    "leaves a racing mutation's own earlier prearm in place, ensuring one by the scan cadence",
    Facts,
    (facts) => {
      if (facts.autonomous || !stillOwed(facts)) return
      const write = decide(facts)
      expect(write._tag).toBe("EnsureBy")
      expect(target(write)).toBeLessThanOrEqual(
        Math.max(floorOf(facts.timing), NOW + facts.timing.wakeScanIntervalMillis),
      )
      expect(target(write)).toBeGreaterThanOrEqual(
        Math.min(floorOf(facts.timing), NOW + facts.timing.wakeScanIntervalMillis),
      )
    },
  )

  it.prop("never writes earlier than the floor, or the scan cadence when it is shorter", Facts, (facts) => {
    const write = decide(facts)
    if (write._tag === "Clear" || write._tag === "Keep") return
    expect(target(write)).toBeGreaterThanOrEqual(
      NOW + Math.min(facts.timing.minimumAlarmDelayMillis, facts.timing.wakeScanIntervalMillis),
    )
  })
})

describe("the alarm a failed pass leaves", () => {
  const Facts = {
    timing: Timing,
    input: Record,
    generation: between(8, 10),
    active: between(0, 3),
    nativeOnly: Schema.Boolean,
    retryOffset: between(1, 60_000),
    deadline: Deadline,
  }
  const decide = (facts: {
    readonly timing: AlarmTiming
    readonly input: RecordInput
    readonly generation: number
    readonly active: number
    readonly nativeOnly: boolean
    readonly retryOffset: number
    readonly deadline: number | undefined
  }) =>
    decideAlarm(facts.timing, {
      commit: "failure",
      now: NOW,
      record: record(facts.input),
      generation: BigInt(facts.generation),
      active: facts.active,
      nativeOnly: facts.nativeOnly,
      retryAt: NOW + facts.retryOffset,
      deadline: deadlineOf(facts.deadline),
    })

  it.prop("always replaces the slot, no earlier than the floor", Facts, (facts) => {
    const write = decide(facts)
    expect(write._tag).toBe("Set")
    expect(target(write)).toBeGreaterThanOrEqual(floorOf(facts.timing))
  })

  it.prop("waits for the committed retry unless a producer raced the failed pass", Facts, (facts) => {
    const write = decide({ ...facts, deadline: undefined })
    const raced = facts.active > 0 || facts.generation !== 10
    expect(target(write)).toBe(
      raced ? floorOf(facts.timing) : Math.max(floorOf(facts.timing), NOW + facts.retryOffset),
    )
  })

  it.prop(
    "lets an overdue host deadline pull the alarm in only after a native-phase failure",
    Facts,
    (facts) => {
      if (facts.deadline === undefined) return
      const write = decide(facts)
      const without = decide({ ...facts, deadline: undefined })
      if (facts.deadline <= 0 && !facts.nativeOnly) expect(write).toEqual(without)
      else expect(target(write)).toBeLessThanOrEqual(Math.max(floorOf(facts.timing), NOW + facts.deadline))
      expect(target(write)).toBeLessThanOrEqual(target(without))
    },
  )
})
