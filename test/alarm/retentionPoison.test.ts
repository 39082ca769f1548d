/**
 * An archive that refuses one Submission for good, and an archive's backoff across incarnations:
 * after a batch failed, the next try splits it so the Submissions the archive accepts are removed
 * and the one it refuses alone is set aside (kept, logged, offered again one retention later);
 * and the wait after a failure is stored, so a new incarnation does not try again at once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { type ArchivedSubmission, ThreadArchiveError } from "../../src/core/Retention.ts"
import type { SubmissionId } from "../../src/core/Identifiers.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation, type Incarnation } from "../support/incarnation.ts"
import { alarmOf, dayAhead, inObject, objectName } from "./harness.ts"

const entry = objectCalls(undefined)
const submit = (inc: Incarnation, key: string) =>
  entry
    .submit({ threadId: "lane", agentId: "echo", idempotencyKey: key, input: { text: key } })
    .pipe(Effect.provideContext(inc.context))

const retention = { settledForMillis: 60_000, windowMillis: 10_000 }
const windowAfter = (instant: number) => Math.ceil(instant / 10_000) * 10_000

/** An archive that refuses every batch holding one of `refused` (all of them while `down`). */
const archiveRefusing = (refused: Set<string>) => {
  const calls: Array<ReadonlyArray<string>> = []
  const stored = new Set<string>()
  const state = { down: false }
  return {
    calls,
    stored,
    state,
    service: {
      archive: (batch: ReadonlyArray<ArchivedSubmission>) =>
        Effect.suspend(() => {
          const ids = batch.map((archived) => archived.submission.submissionId as string)
          calls.push(ids)
          if (state.down || ids.some((id) => refused.has(id)))
            return Effect.fail(new ThreadArchiveError({ message: "refused" }))
          for (const id of ids) stored.add(id)
          return Effect.void
        }),
    },
  }
}

const settleAll = (inc: Incarnation) =>
  Effect.gen(function* () {
    for (let round = 0; round < 50 && (yield* inc.ledger.countAllNonterminal) > 0; round++)
      yield* inc.maintenance.pass
  })

/**
 * Submits and settles `keys` one after the other, a millisecond apart, so retention reads them in
 * that order; from the start of a window, so they expire in the same one. Returns when the last
 * one settled, and the receipts.
 */
const settleInOrder = (inc: Incarnation, keys: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const start = windowAfter(yield* Clock.currentTimeMillis)
    yield* TestClock.setTime(start)
    const receipts = []
    for (const key of keys) {
      yield* TestClock.adjust(1)
      receipts.push(yield* submit(inc, key))
      yield* settleAll(inc)
    }
    return { start: yield* Clock.currentTimeMillis, receipts }
  })

const present = (inc: Incarnation, id: SubmissionId) => Effect.map(inc.ledger.lookup(id), Option.isSome)

describe("an archive that refuses one Submission", () => {
  it.effect("removes the rest of its batch and keeps that one, set aside for a retention", () =>
    inObject(objectName("retention-poison"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const refused = new Set<string>()
        const archive = archiveRefusing(refused)
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention },
          archive: archive.service,
        })
        const { start, receipts } = yield* settleInOrder(inc, ["a", "b", "c", "d", "e"])
        // The oldest: the split meets it before the archive accepted anything.
        const poison = receipts[0]!.submissionId
        refused.add(poison)
        const due = windowAfter(start + 60_000)
        yield* TestClock.setTime(due)
        // The first failure of a batch waits for the backoff, as an archive that is down.
        expect((yield* inc.maintenance.pass).phase).toBe("caught-up")
        expect(archive.calls).toHaveLength(1)
        expect(yield* inc.maintenance.retention.lane.pendingDeadline).toEqual(Option.some(due + 1_000))

        yield* TestClock.setTime(due + 1_000)
        expect((yield* inc.maintenance.pass).phase).toBe("caught-up")
        const others = receipts.filter((receipt) => receipt.submissionId !== poison)
        for (const receipt of others) {
          expect(yield* present(inc, receipt.submissionId)).toBe(false)
          expect(archive.stored.has(receipt.submissionId)).toBe(true)
        }
        // Never removed without its archive: kept with its records.
        expect(yield* present(inc, poison)).toBe(true)
        expect((yield* inc.history.forSubmission(poison)).length).toBeGreaterThan(0)
        // Set aside: not due again before one more retention, so no alarm spins on it.
        const next = Option.getOrThrow(yield* inc.maintenance.retention.lane.pendingDeadline)
        expect(next).toBe(windowAfter(due + 1_000 + 60_000))
        expect(yield* alarmOf(ctx)).toBe(next)

        // Offered again then; once the archive takes it, it goes.
        refused.clear()
        yield* TestClock.setTime(next)
        yield* inc.maintenance.pass
        expect(yield* present(inc, poison)).toBe(false)
        expect(archive.stored.has(poison)).toBe(true)
      }),
    ),
  )

  it.effect("that is alone is set aside after a few failed tries, not retried every few minutes", () =>
    inObject(objectName("retention-poison-alone"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const refused = new Set<string>()
        const archive = archiveRefusing(refused)
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention },
          archive: archive.service,
        })
        const a = yield* submit(inc, "a")
        yield* settleAll(inc)
        refused.add(a.submissionId)
        yield* TestClock.setTime(windowAfter(start + 60_000))
        // Each try at its deadline, until the next one is a retention away.
        for (let round = 0; round < 10; round++) {
          const due = Option.getOrThrow(yield* inc.maintenance.retention.lane.pendingDeadline)
          if (due - (yield* Clock.currentTimeMillis) >= 60_000) break
          yield* TestClock.setTime(Math.max(due, yield* Clock.currentTimeMillis))
          yield* inc.maintenance.pass
        }
        expect(yield* present(inc, a.submissionId)).toBe(true)
        // Four tries: the first, two more with backoff, the one that set it aside.
        expect(archive.calls).toHaveLength(4)
        expect(yield* alarmOf(ctx)).toBe(
          Option.getOrThrow(yield* inc.maintenance.retention.lane.pendingDeadline),
        )
      }),
    ),
  )
})

describe("forget while a refused batch is split", () => {
  it.effect("is refused for every Submission of the batch, so no copy lands after an erasure", () =>
    inObject(objectName("retention-poison-forget"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const refused = new Set<string>()
        const stored: Array<string> = []
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention },
          archive: {
            archive: (batch) =>
              Effect.gen(function* () {
                const ids = batch.map((archived) => archived.submission.submissionId as string)
                if (ids.length === 1 && refused.has(ids[0]!)) {
                  yield* Deferred.succeed(started, undefined)
                  yield* Deferred.await(release)
                }
                if (ids.some((id) => refused.has(id)))
                  return yield* new ThreadArchiveError({ message: "refused" })
                stored.push(...ids)
              }),
          },
        })
        const { start, receipts } = yield* settleInOrder(inc, ["a", "b", "c", "d"])
        refused.add(receipts[0]!.submissionId)
        const due = windowAfter(start + 60_000)
        yield* TestClock.setTime(due)
        yield* inc.maintenance.pass
        yield* TestClock.setTime(due + 1_000)
        // The split is storing the refused one alone; the last one is tried after it.
        const pass = yield* Effect.forkChild(inc.maintenance.pass)
        yield* Deferred.await(started)
        const last = receipts[3]!
        const forget = entry
          .forget({ threadId: last.threadId, submissionId: last.submissionId })
          .pipe(Effect.provideContext(inc.context))
        expect(yield* Effect.flip(forget)).toMatchObject({ _tag: "ForgetRefused", reason: "still-needed" })
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(pass)
        expect(stored).toContain(last.submissionId)
        expect(yield* present(inc, last.submissionId)).toBe(false)
      }),
    ),
  )
})

describe("an archive's backoff", () => {
  it.effect("holds for a new incarnation, and a success clears it", () =>
    inObject(objectName("retention-backoff-stored"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const archive = archiveRefusing(new Set())
        const options = { agents: [echo], config: { retention }, archive: archive.service }
        const inc = yield* incarnation(ctx, options)
        const a = yield* submit(inc, "a")
        yield* settleAll(inc)
        const due = windowAfter(start + 60_000)
        yield* TestClock.setTime(due)
        archive.state.down = true
        yield* inc.maintenance.pass
        expect(archive.calls).toHaveLength(1)
        expect([...ctx.storage.kv.list({ prefix: "effect-agent:retention-archive" })]).toHaveLength(1)
        // An eviction: the next incarnation waits for the stored backoff too.
        const next = yield* incarnation(ctx, options)
        expect(yield* next.maintenance.retention.lane.pendingDeadline).toEqual(Option.some(due + 1_000))
        yield* next.maintenance.pass
        expect(archive.calls).toHaveLength(1)
        // Its failure doubles the wait it found.
        yield* TestClock.setTime(due + 1_000)
        yield* next.maintenance.pass
        expect(archive.calls.length).toBeGreaterThan(1)
        expect(yield* next.maintenance.retention.lane.pendingDeadline).toEqual(Option.some(due + 3_000))

        archive.state.down = false
        yield* TestClock.setTime(due + 3_000)
        yield* next.maintenance.pass
        expect(yield* present(next, a.submissionId)).toBe(false)
        const third = yield* incarnation(ctx, options)
        expect(yield* third.maintenance.retention.lane.pendingDeadline).toEqual(Option.none())
        // The success deleted the stored backoff: an archive that succeeds keeps no row for it.
        expect([...ctx.storage.kv.list({ prefix: "effect-agent:retention-archive" })]).toEqual([])
      }),
    ),
  )
})
