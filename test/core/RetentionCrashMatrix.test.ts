/**
 * A kill and a typed failure at every retention failpoint, one at a time, on both ledgers: three
 * Submissions settle in two lanes, an operator forgets one, and the pruner, driven through fresh
 * incarnations, removes the expired one (archiving it first) and keeps the newest of its lane.
 * Whatever is cut, nothing is removed before it was archived, the kept row stays, the archive
 * holds each removed Submission with its one settlement, and a key replayed after removal is a
 * new Submission later in its lane.
 */
import { expect } from "@effect/vitest"
import { Clock, Effect, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import type { SubmissionId } from "../../src/core/Identifiers.ts"
import { makePruner } from "../../src/core/internal/retention/pruner.ts"
import type { ArchivedSubmission } from "../../src/core/Retention.ts"
import { RUNTIME_FAILPOINT_LOCATIONS, type RuntimeFailpointHandler } from "../../src/core/RuntimeFailpoint.ts"
import { type CrashingOps, crashMatrix, untilDone } from "../support/crashMatrix.ts"
import { echo } from "./runtimeAgents.ts"
import { processHead, submitTo } from "./runtimeFixtures.ts"
import { historyOf, type Incarnation, ledgerOf, outboxOf } from "./runtimeHarness.ts"

const settings = {
  settledForMillis: 60_000,
  keepPerThread: 1,
  windowMillis: 1_000,
  dispatchTimeoutMillis: 5_000,
}

/** The archive outlives incarnations, as a bucket would: keyed by Submission id and receipt. */
const archives = new Map<string, ArchivedSubmission>()

const prunerOf = (incarnation: Incarnation, failpoint: RuntimeFailpointHandler | undefined, run: string) =>
  makePruner<never>({
    ledger: ledgerOf(incarnation),
    history: historyOf(incarnation),
    outbox: outboxOf(incarnation),
    archive: Option.some({
      archive: (batch) =>
        Effect.sync(() => {
          for (const archived of batch)
            archives.set(
              `${run}/${archived.submission.submissionId}/${archived.submission.receiptId}`,
              archived,
            )
        }),
    }),
    settings,
    hit: failpoint ?? (() => Effect.void),
    withMutation: (body) => body,
  })

const drive = (ops: CrashingOps, failpoint: RuntimeFailpointHandler | undefined) =>
  Effect.gen(function* () {
    const run = crypto.randomUUID()
    const { op } = ops
    const submit = (lane: string, key: string) =>
      untilDone(op, (incarnation) => submitTo(incarnation, lane, "echo", key, { text: key }))
    const a1 = yield* submit("a", "a1")
    const a2 = yield* submit("a", "a2")
    const b1 = yield* submit("b", "b1")
    for (let round = 0; round < 10; round++) {
      if ((yield* ledgerOf(ops.current).countAllNonterminal) === 0) break
      yield* op((incarnation) => processHead(incarnation, "a"))
      yield* op((incarnation) => processHead(incarnation, "b"))
    }
    yield* untilDone(op, (incarnation) => prunerOf(incarnation, failpoint, run).forget(b1.submissionId))
    yield* TestClock.adjust(120_000)
    for (let round = 0; round < 10; round++) {
      const start = yield* ledgerOf(ops.current).retentionStart
      if (Option.isNone(start) || start.value > (yield* Clock.currentTimeMillis) - 60_000) break
      yield* op((incarnation) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          prunerOf(incarnation, failpoint, run).drain(now + 5_000),
        ),
      )
    }
    const lookup = (id: SubmissionId) => ledgerOf(ops.current).lookup(id)
    const present = {
      a1: Option.isSome(yield* lookup(a1.submissionId)),
      a2: Option.isSome(yield* lookup(a2.submissionId)),
      b1: Option.isSome(yield* lookup(b1.submissionId)),
    }
    const archived = [...archives.entries()]
      .filter(([key]) => key.startsWith(`${run}/`))
      .map(([, value]) => value)
    const again = yield* submit("a", "a1")
    return {
      present,
      archived: archived.map((entry) => ({
        id: entry.submission.submissionId,
        settlements: entry.records.filter((record) => record.entry._tag === "SubmissionSettled").length,
      })),
      ids: { a1: a1.submissionId, b1: b1.submissionId },
      again: {
        replayed: again.replayed,
        queueSequence: again.queueSequence,
        receipt: again.receiptId !== a1.receiptId,
      },
      remaining: (yield* Stream.runCollect(ledgerOf(ops.current).scanNonterminal)).map(
        (row) => row.submissionId,
      ),
    }
  })

crashMatrix({
  name: "Retention crash matrix",
  incarnation: () => ({ agents: [echo] }),
  drive,
  coverage: {
    test: "hits every retention failpoint on the journey",
    check: (hits, result) => {
      expect(new Set(hits.filter((at) => at.startsWith("retention:")))).toEqual(
        new Set(RUNTIME_FAILPOINT_LOCATIONS.filter((at) => at.startsWith("retention:"))),
      )
      expect(result.present).toEqual({ a1: false, a2: true, b1: false })
      expect(result.archived).toEqual([{ id: result.ids.a1, settlements: 1 }])
    },
  },
  // Only the retention hits: the rest of the runtime has matrices of its own.
  choose: (_harness, hits) =>
    hits.flatMap((location, offset) =>
      location.startsWith("retention:") ? [[offset, location] as const] : [],
    ),
  check: (result, label) => {
    // The expired one is gone, archived first (once per receipt, with its one settlement); the
    // newest of its lane stays; the forgotten one is gone without an archive.
    expect(result.present, label).toEqual({ a1: false, a2: true, b1: false })
    expect(result.archived, label).toEqual([{ id: result.ids.a1, settlements: 1 }])
    expect(result.again, label).toEqual({ replayed: false, queueSequence: 3, receipt: true })
    expect(result.remaining, label).toHaveLength(1)
  },
  timeout: 60_000,
})
