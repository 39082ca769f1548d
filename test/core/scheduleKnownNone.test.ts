/**
 * The SQLite ledger's shortcut for an Object with no schedule (its reads of schedules run no
 * statement once one found none) against a schedule stored while such a read is in flight: a
 * pass reads the schedules while a `schedule` call's body runs beside it (mutations run outside
 * the gate's permit), and a fiber may yield between a statement and its continuation. The
 * schedule stored meanwhile is still due, and still found by the next reads.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { AgentId, ThreadId } from "../../src/core/Identifiers.ts"
import { ScheduleId, ScheduleInfo, SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { layerWithLedger } from "../../src/core/ThreadHistory.ts"
import { scheduleStatements } from "../../src/core/internal/schedule/sql.ts"
import { holdAfter } from "./heldStatement.ts"
import { inObject } from "./SubmissionLedgerHarness.ts"

const schedule = new ScheduleInfo({
  scheduleId: ScheduleId.make("nightly"),
  threadId: ThreadId.make("lane"),
  agentId: AgentId.make("echo"),
  input: { text: "tick" },
  spec: { _tag: "Every", everyMillis: 60_000 },
  missed: "latest",
  nextAt: 60_000,
  createdAt: 0,
})

describe("SQLite schedules read while one is stored", () => {
  it.effect("a schedule stored while a read of the earliest occurrence is in flight stays due", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        const held = yield* holdAfter(storage, scheduleStatements.earliest, { armed: true })
        const sql = held.sql
        yield* Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const read = yield* Effect.forkChild(ledger.nextOccurrenceAt)
          yield* held.reached
          yield* ledger.putSchedule(schedule)
          yield* held.release
          // The read in flight may answer either way; the ones after it see the schedule.
          yield* Fiber.join(read)
          expect(yield* ledger.nextOccurrenceAt).toBe(60_000)
          expect((yield* ledger.dueSchedules(60_000, 10)).map((s) => s.scheduleId)).toEqual(["nightly"])
        }).pipe(Effect.provide(layerWithLedger.pipe(Layer.provide(sql))))
      }),
    ),
  )
})
