/**
 * Retention as the maintenance pass runs it, in a real SQLite-backed Object with virtual time:
 * settled Submissions expire at the window after their retention, are handed to the archive
 * first when there is one, and nothing is removed while the archive fails; the pass wakes an
 * idle Object once per window for it and never for a policy that keeps everything.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { type ArchivedSubmission, ThreadArchiveError } from "../../src/core/Retention.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation, type Incarnation, type IncarnationOptions } from "../support/incarnation.ts"
import { alarmOf, dayAhead, inObject, objectName } from "./harness.ts"

const entry = objectCalls(undefined)
const submit = (inc: Incarnation, key: string, threadId = "lane") =>
  entry
    .submit({ threadId, agentId: "echo", idempotencyKey: key, input: { text: key } })
    .pipe(Effect.provideContext(inc.context))

/** Runs passes until nothing is nonterminal. */
const settleAll = (inc: Incarnation) =>
  Effect.gen(function* () {
    for (let round = 0; round < 50; round++) {
      if ((yield* inc.ledger.countAllNonterminal) === 0) return
      yield* inc.maintenance.pass
    }
    throw new Error("work did not settle")
  })

const retention = { settledForMillis: 60_000, windowMillis: 10_000 }
const options = (extra: Partial<IncarnationOptions> = {}): IncarnationOptions => ({
  agents: [echo],
  config: { retention },
  ...extra,
})
const windowAfter = (instant: number) => Math.ceil(instant / 10_000) * 10_000

describe("retention in the maintenance pass", () => {
  it.effect(
    "removes a settled Submission at the window after its retention, and its key then admits anew",
    () =>
      inObject(objectName("retention-expiry"), (ctx) =>
        Effect.gen(function* () {
          const start = yield* dayAhead
          const inc = yield* incarnation(ctx, options())
          const receipt = yield* submit(inc, "a")
          yield* settleAll(inc)
          const due = windowAfter(start + 60_000)
          expect(yield* inc.maintenance.retention.lane.pendingDeadline).toEqual(Option.some(due))
          // The idle Object's alarm is retention's, once the last pass finished.
          yield* inc.maintenance.pass
          expect(yield* alarmOf(ctx)).toBe(due)
          // Inside the window the key replays the original receipt.
          expect(yield* submit(inc, "a")).toMatchObject({
            submissionId: receipt.submissionId,
            replayed: true,
          })

          yield* TestClock.setTime(due - 1)
          yield* inc.maintenance.pass
          expect(Option.isSome(yield* inc.ledger.lookup(receipt.submissionId))).toBe(true)
          yield* TestClock.setTime(due)
          yield* inc.maintenance.pass
          expect(yield* inc.ledger.lookup(receipt.submissionId)).toEqual(Option.none())
          expect(yield* inc.history.forSubmission(receipt.submissionId)).toEqual([])
          expect(yield* inc.maintenance.retention.lane.pendingDeadline).toEqual(Option.none())
          expect(yield* alarmOf(ctx)).toBeNull()

          // After the window the same key is a new Submission, later in its lane.
          const again = yield* submit(inc, "a")
          expect(again).toMatchObject({ submissionId: receipt.submissionId, replayed: false })
          expect(again.receiptId).not.toBe(receipt.receiptId)
          expect(again.queueSequence).toBe(2)
        }),
      ),
  )

  it.effect("keeps everything and owes no alarm for it by default", () =>
    inObject(objectName("retention-forever"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const inc = yield* incarnation(ctx, { agents: [echo] })
        const receipt = yield* submit(inc, "a")
        yield* settleAll(inc)
        yield* inc.maintenance.pass
        expect(yield* inc.maintenance.retention.lane.pendingDeadline).toEqual(Option.none())
        expect(yield* alarmOf(ctx)).toBeNull()
        yield* TestClock.adjust(365 * 86_400_000)
        yield* inc.maintenance.pass
        expect(Option.isSome(yield* inc.ledger.lookup(receipt.submissionId))).toBe(true)
      }),
    ),
  )

  it.effect("keeps the newest keepPerThread Submissions of each Thread whatever their age", () =>
    inObject(objectName("retention-keep"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention: { ...retention, keepPerThread: 2 } },
        })
        const receipts = []
        for (const key of ["a", "b", "c"]) receipts.push(yield* submit(inc, key))
        const other = yield* submit(inc, "x", "other")
        yield* settleAll(inc)
        yield* TestClock.setTime(windowAfter(start + 60_000))
        yield* inc.maintenance.pass
        const present = (id: string) => Effect.map(inc.ledger.lookup(id as never), Option.isSome)
        expect(yield* Effect.forEach(receipts, (r) => present(r.submissionId))).toEqual([false, true, true])
        expect(yield* present(other.submissionId)).toBe(true)
        // Kept rows are looked at again one retention later, not on every pass.
        const due = Option.getOrThrow(yield* inc.maintenance.retention.lane.pendingDeadline)
        expect(due).toBeGreaterThanOrEqual(windowAfter(start + 60_000) + 60_000)
        yield* submit(inc, "d")
        yield* settleAll(inc)
        yield* TestClock.setTime(due)
        yield* inc.maintenance.pass
        expect(yield* Effect.forEach(receipts, (r) => present(r.submissionId))).toEqual([false, false, true])
      }),
    ),
  )

  it.effect("hands each batch to the archive first and removes nothing while it fails", () =>
    inObject(objectName("retention-archive"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const batches: Array<ReadonlyArray<ArchivedSubmission>> = []
        let failing = true
        const inc = yield* incarnation(
          ctx,
          options({
            archive: {
              archive: (batch) =>
                Effect.suspend(() => {
                  batches.push(batch)
                  return failing
                    ? Effect.fail(new ThreadArchiveError({ message: "bucket down" }))
                    : Effect.void
                }),
            },
          }),
        )
        const a = yield* submit(inc, "a")
        const b = yield* submit(inc, "b")
        yield* settleAll(inc)
        const due = windowAfter(start + 60_000)
        yield* TestClock.setTime(due)
        const report = yield* inc.maintenance.pass
        // The archive's failure is not the pass's.
        expect(report.phase).toBe("caught-up")
        expect(batches).toHaveLength(1)
        expect(batches[0]?.map((archived) => archived.submission.submissionId).sort()).toEqual(
          [a.submissionId, b.submissionId].sort(),
        )
        expect(batches[0]?.[0]?.records.map((record) => record.entry._tag)).toContain("SubmissionSettled")
        expect(Option.isSome(yield* inc.ledger.lookup(a.submissionId))).toBe(true)
        // The next try waits for the backoff, and the alarm with it.
        expect(yield* inc.maintenance.retention.lane.pendingDeadline).toEqual(Option.some(due + 1_000))
        expect(yield* alarmOf(ctx)).toBe(due + 1_000)
        yield* inc.maintenance.pass
        expect(batches).toHaveLength(1)

        failing = false
        yield* TestClock.setTime(due + 1_000)
        yield* inc.maintenance.pass
        expect(batches).toHaveLength(2)
        expect(yield* inc.ledger.lookup(a.submissionId)).toEqual(Option.none())
        expect(yield* inc.ledger.lookup(b.submissionId)).toEqual(Option.none())
        expect(yield* inc.ledger.threadIds).toEqual([])
      }),
    ),
  )
})
