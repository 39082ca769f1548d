/**
 * A kill (or a typed failure) at every failpoint of delayed submissions and schedules, one at a
 * time, on both ledgers: a lane holds a Submission, a delayed one behind it (parked when it
 * becomes the head early) and one after it; a schedule is made, admits its occurrences on
 * another lane and is removed. Whatever the fault, every Submission settles exactly once, the
 * delayed one never runs before its time and its lane keeps its order, and no occurrence is
 * admitted twice.
 */
import { expect } from "@effect/vitest"
import { Clock, DateTime, Effect, Stream } from "effect"
import { TestClock } from "effect/testing"
import { ScheduleRequest } from "../../src/core/DurableAgentRuntime.ts"
import { AgentId, IdempotencyKey, type SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { RUNTIME_FAILPOINT_LOCATIONS } from "../../src/core/RuntimeFailpoint.ts"
import { ScheduleId } from "../../src/core/SubmissionLedger.ts"
import { type CrashingOps, crashMatrix, scheduled, untilDone } from "../support/crashMatrix.ts"
import { echo } from "./runtimeAgents.ts"
import { rowOf } from "./runtimeFixtures.ts"
import { historyOf, ledgerOf, runtimeOf } from "./runtimeHarness.ts"

const EVERY = 1_000
const OCCURRENCES = 2

const drive = (ops: CrashingOps) =>
  Effect.gen(function* () {
    const { op } = ops
    const notBefore = (yield* Clock.currentTimeMillis) + 500
    const submit = (key: string, extra: { readonly notBefore?: number } = {}) =>
      untilDone(op, (incarnation) =>
        runtimeOf(incarnation).submit({
          threadId: ThreadId.make("c"),
          agentId: AgentId.make("echo"),
          idempotencyKey: IdempotencyKey.make(key),
          input: { text: key },
          ...extra,
        }),
      )
    yield* submit("first")
    const delayed = yield* submit("later", { notBefore })
    yield* submit("last")
    const request = new ScheduleRequest({
      scheduleId: ScheduleId.make("s"),
      threadId: ThreadId.make("d"),
      agentId: AgentId.make("echo"),
      input: { text: "tick" },
      everyMillis: EVERY,
    })
    yield* untilDone(op, (incarnation) =>
      Effect.flatMap(runtimeOf(incarnation).prepareSchedule(request), runtimeOf(incarnation).schedule),
    )

    const rows = Effect.suspend(() => Stream.runCollect(ledgerOf(ops.current).scanAll))
    const yieldAfter = DateTime.makeUnsafe(Number.MAX_SAFE_INTEGER / 2048)
    for (let round = 0; round < 40; round++) {
      yield* op((incarnation) => runtimeOf(incarnation).runRecovery)
      yield* op((incarnation) => runtimeOf(incarnation).admitDueOccurrences(10))
      const all = Array.from(yield* rows)
      const occurrences = all.filter((row) => row.threadId === "d").length
      if (occurrences >= OCCURRENCES && all.every((row) => row.state === "settled")) break
      const row = yield* rowOf(ops.current, delayed.submissionId)
      const now = yield* Clock.currentTimeMillis
      if (row.state === "waiting" || (row.state === "running" && row.dueAt !== undefined)) {
        if (row.dueAt !== undefined && row.dueAt > now) yield* TestClock.adjust(row.dueAt - now)
        yield* op((incarnation) =>
          runtimeOf(incarnation).attemptDueHead(delayed.submissionId, { yieldAfter }),
        )
      } else {
        yield* op((incarnation) =>
          runtimeOf(incarnation).processThreadHead(ThreadId.make("c"), { yieldAfter }),
        )
      }
      yield* op((incarnation) => runtimeOf(incarnation).processThreadHead(ThreadId.make("d"), { yieldAfter }))
      // Nothing else to do: on to the next occurrence.
      if (
        occurrences < OCCURRENCES &&
        all.filter((r) => r.threadId === "c").every((r) => r.state === "settled")
      ) {
        const next = yield* ledgerOf(ops.current).nextOccurrenceAt
        const at = yield* Clock.currentTimeMillis
        if (next !== undefined && next > at) yield* TestClock.adjust(next - at)
      }
    }
    yield* untilDone(op, (incarnation) => runtimeOf(incarnation).unschedule(ScheduleId.make("s")))

    const current = ops.current
    const final = Array.from(yield* rows)
    const records = (yield* Effect.forEach(final, (row) =>
      historyOf(current).forSubmission(row.submissionId),
    )).flat()
    const byId = (id: SubmissionId) => records.filter((record) => record.submissionId === id)
    return {
      notBefore,
      // When the delayed Submission's first Attempt recorded anything.
      delayedRanAt: Math.min(
        ...byId(delayed.submissionId)
          .filter((record) => record.entry._tag !== "SubmissionAccepted")
          .map((record) => record.recordedAt),
      ),
      lane: final
        .filter((row) => row.threadId === "c")
        .sort((a, b) => a.queueSequence - b.queueSequence)
        .map((row) => [row.idempotencyKey, row.settlement?.settledAt ?? Infinity] as const),
      settledOnce: final.map(
        (row) => byId(row.submissionId).filter((record) => record.entry._tag === "SubmissionSettled").length,
      ),
      occurrences: records.flatMap((record) =>
        record.entry._tag === "SubmissionAccepted" && record.entry.schedule !== undefined
          ? [`${record.entry.schedule.scheduleId}:${record.entry.schedule.occurrence}`]
          : [],
      ),
      schedules: yield* runtimeOf(current).schedules,
      remaining: final.filter((row) => row.state !== "settled"),
    }
  })

crashMatrix({
  name: "DurableAgentRuntime schedule crash matrix",
  incarnation: () => ({ agents: [echo] }),
  drive,
  coverage: {
    test: "hits every delayed-submission and schedule failpoint location on the journey",
    check: (hits, result) => {
      expect(new Set(hits.filter(scheduled))).toEqual(new Set(RUNTIME_FAILPOINT_LOCATIONS.filter(scheduled)))
      expect(result.occurrences).toHaveLength(OCCURRENCES)
    },
  },
  check: (result, label) => {
    expect(result.remaining, label).toEqual([])
    expect(
      result.settledOnce.every((count) => count === 1),
      label,
    ).toBe(true)
    expect(result.delayedRanAt, label).toBeGreaterThanOrEqual(result.notBefore)
    expect(
      result.lane.map(([key]) => key),
      label,
    ).toEqual(["first", "later", "last"])
    const settledAt = result.lane.map(([, at]) => at)
    expect(settledAt, label).toEqual([...settledAt].sort((a, b) => a - b))
    expect(new Set(result.occurrences).size, label).toBe(result.occurrences.length)
    expect(result.occurrences.length, label).toBeGreaterThanOrEqual(OCCURRENCES)
    expect(result.schedules, label).toEqual([])
  },
  timeout: 240_000,
})
