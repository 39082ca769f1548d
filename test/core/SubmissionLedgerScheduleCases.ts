/**
 * Conformance cases of the schedules a ledger stores: their listing by id and the due ones in
 * next-occurrence order, ties by id, in the order SQLite keeps ids (code point order), and an
 * advance that a replaced schedule's move leaves alone.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId, ThreadId } from "../../src/core/Identifiers.ts"
import { ScheduleId, ScheduleInfo, SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { request, type LedgerHarness } from "./SubmissionLedgerFixtures.ts"

const schedule = (id: string, nextAt: number) =>
  new ScheduleInfo({
    scheduleId: ScheduleId.make(id),
    threadId: ThreadId.make("lane"),
    agentId: AgentId.make("echo"),
    input: { text: "tick" },
    spec: { _tag: "Every", everyMillis: 60_000 },
    missed: "latest",
    nextAt,
    createdAt: 0,
  })

const ids = (schedules: ReadonlyArray<ScheduleInfo>) => schedules.map((info) => info.scheduleId)

/** Registers the schedule cases. */
export const scheduleCases = (harness: LedgerHarness) => {
  describe("schedules", () => {
    it.effect("list by id and find the due ones earliest first, ties by id, astral ids included", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (const [id, nextAt] of [
            ["\u{1F600}", 5_000],
            ["\uFF5E", 5_000],
            ["b", 5_000],
            ["a", 7_000],
            ["c", 4_000],
          ] as const)
            yield* ledger.putSchedule(schedule(id, nextAt))
          // Code point order: the astral id after U+FF5E (UTF-16 order would put it before).
          expect(ids(yield* ledger.listSchedules)).toEqual(["a", "b", "c", "\uFF5E", "\u{1F600}"])
          expect(ids(yield* ledger.dueSchedules(6_000, 10))).toEqual(["c", "b", "\uFF5E", "\u{1F600}"])
          expect(ids(yield* ledger.dueSchedules(6_000, 2))).toEqual(["c", "b"])
          expect(yield* ledger.nextOccurrenceAt).toBe(4_000)
        }),
      ),
    )

    it.effect("page by id after a cursor, in the listing's order, astral ids included", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          for (const id of ["\u{1F600}", "\uFF5E", "b", "a", "c"])
            yield* ledger.putSchedule(schedule(id, 5_000))
          expect(ids(yield* ledger.schedulePage({ limit: 2 }))).toEqual(["a", "b"])
          expect(ids(yield* ledger.schedulePage({ after: ScheduleId.make("b"), limit: 2 }))).toEqual([
            "c",
            "\uFF5E",
          ])
          expect(ids(yield* ledger.schedulePage({ after: ScheduleId.make("\uFF5E"), limit: 2 }))).toEqual([
            "\u{1F600}",
          ])
          // A cursor that names no schedule (one removed meanwhile) goes on from where it sorts.
          yield* ledger.removeSchedule(ScheduleId.make("c"))
          expect(ids(yield* ledger.schedulePage({ after: ScheduleId.make("bb"), limit: 10 }))).toEqual([
            "\uFF5E",
            "\u{1F600}",
          ])
          expect(yield* ledger.schedulePage({ after: ScheduleId.make("\u{1F600}"), limit: 10 })).toEqual([])
        }),
      ),
    )

    it.effect("advance a due schedule with its occurrence, and leave one replaced meanwhile", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* ledger.putSchedule(schedule("s", 5_000))
          const admitted = yield* ledger.advanceSchedule(
            {
              scheduleId: ScheduleId.make("s"),
              expectedNextAt: 5_000,
              nextAt: 65_000,
              now: 5_100,
              occurrence: 5_000,
            },
            request("lane", "occurrence-5000", { now: 5_100 }),
          )
          expect(admitted._tag).toBe("Admitted")
          const stored = yield* ledger.lookupSchedule(ScheduleId.make("s"))
          expect(stored._tag === "Some" ? [stored.value.nextAt, stored.value.lastOccurrence] : []).toEqual([
            65_000, 5_000,
          ])
          const moved = yield* ledger.advanceSchedule(
            { scheduleId: ScheduleId.make("s"), expectedNextAt: 5_000, nextAt: 65_000, now: 5_200 },
            request("lane", "occurrence-5000-again", { now: 5_200 }),
          )
          expect(moved._tag).toBe("Moved")
          expect(yield* ledger.countNonterminal(ThreadId.make("lane"))).toBe(1)
        }),
      ),
    )
  })
}
