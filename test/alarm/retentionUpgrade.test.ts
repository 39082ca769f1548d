/**
 * The upgrade to retention, in place: a database of the durable-waits release
 * (`thread-store/005`) gains retention's columns, index and tables. Its settled rows count
 * their age from their settlement and expire with their records; a timed wait stays parked in
 * the due order, with its records, however old.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { canonicalJson, contentDigest } from "../../src/core/internal/digest.ts"
import { runMigrations } from "../../src/core/internal/migrations.ts"
import { laneKey } from "../../src/core/internal/ledger/sqlStatements.ts"
import { HISTORY_TABLE, storeMigrations, SUBMISSIONS_TABLE } from "../../src/core/internal/schema.ts"
import { SubmissionId } from "../../src/core/Identifiers.ts"
import type { HistoryEntry } from "../../src/core/ThreadHistory.ts"
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation } from "../support/incarnation.ts"
import { dayAhead, inObject, objectName } from "./harness.ts"

const accepted = (text: string): HistoryEntry => ({
  _tag: "SubmissionAccepted",
  agentId: echo.id,
  agentDigest: echo.digest,
  input: { text },
})

/** A row as the durable-waits release stored it, with its records (one history row). */
interface Stored {
  readonly id: string
  readonly sequence: number
  readonly state: "settled" | "waiting"
  readonly settledAt?: number
  readonly dueAt?: number
  readonly records: ReadonlyArray<HistoryEntry>
}

/** Writes the durable-waits release's schema and `rows`, all in Thread `lane`. */
const writeDurableWaits = (storage: DurableObjectStorage, now: number, rows: ReadonlyArray<Stored>) =>
  Effect.gen(function* () {
    const through005 = storeMigrations.findIndex((m) => m.name === "thread-store/005-durable-waits") + 1
    yield* Effect.provide(runMigrations(storeMigrations.slice(0, through005)), sqlClientLayer(storage))
    let position = 1
    let settled = 0
    for (const row of rows) {
      const payload = canonicalJson({ text: row.id })
      if (row.state === "settled") settled += 1
      const sleep =
        row.dueAt === undefined
          ? null
          : JSON.stringify({ _tag: "Sleep", step: 0, name: "nap", dueAt: row.dueAt, since: now - 9_000 })
      storage.sql.exec(
        `INSERT INTO ${SUBMISSIONS_TABLE} (submission_id, thread_id, lane_key, queue_sequence, idempotency_key,
          agent_id, agent_digest, input_payload, input_digest, receipt_id, state, lane_status, producer_epoch,
          abort_requested, settlement, created_at, ready_at, history_from, due_at, wait)
          VALUES (?, 'lane', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?, ?, ?, ?)`,
        row.id,
        laneKey("lane"),
        row.sequence,
        `key-${row.id}`,
        echo.id,
        echo.digest,
        payload,
        contentDigest(payload),
        `receipt-${row.id}`,
        row.state,
        row.state === "settled" ? "closed" : "parked",
        row.settledAt === undefined
          ? null
          : JSON.stringify({
              submissionId: row.id,
              threadId: "lane",
              outcome: "completed",
              output: row.id,
              settledAt: row.settledAt,
            }),
        now - 10_000,
        now - 9_000,
        position,
        row.dueAt ?? null,
        sleep,
      )
      storage.sql.exec(
        `INSERT INTO ${HISTORY_TABLE} (position, thread_id, sequence, records, submission_id, recorded_at,
          entries, lane_tail, admitted, settled) VALUES (?, 'lane', ?, ?, ?, ?, ?, ?, ?, ?)`,
        position,
        position,
        row.records.length,
        row.id,
        now - 8_000,
        JSON.stringify(row.records),
        row.sequence,
        row.sequence,
        settled,
      )
      position += row.records.length
    }
  })

describe("the upgrade to retention", () => {
  it.effect("expires the settled rows of a durable-waits store and keeps its timed wait parked", () =>
    inObject(objectName("upgrade-retention"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const tomorrow = now + 86_400_000
        yield* writeDurableWaits(ctx.storage, now, [
          {
            id: "done",
            sequence: 1,
            state: "settled",
            settledAt: now - 7_000,
            records: [
              accepted("done"),
              { _tag: "InputApplied" },
              { _tag: "SubmissionSettled", outcome: "completed", output: "done" },
            ],
          },
          {
            id: "sleeps",
            sequence: 2,
            state: "waiting",
            dueAt: tomorrow,
            records: [accepted("sleeps"), { _tag: "InputApplied" }],
          },
        ])
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention: { settledForMillis: 60_000, windowMillis: 10_000 } },
        })
        const applied = ctx.storage.sql
          .exec("SELECT name FROM effect_agent_migrations ORDER BY name")
          .toArray()
          .map((row) => String(row.name))
        // Retention's migration ran after the durable waits' (later migrations ran after it).
        expect(applied.filter((name) => name >= "thread-store/005").slice(0, 2)).toEqual([
          "thread-store/005-durable-waits",
          "thread-store/006-retention",
        ])
        // The settled row counts its age from its settlement; the wait is no candidate.
        expect(yield* inc.ledger.retentionStart).toEqual(Option.some(now - 7_000))
        const done = SubmissionId.make("done")
        const sleeps = SubmissionId.make("sleeps")

        yield* inc.maintenance.pass
        expect(Option.isSome(yield* inc.ledger.lookup(done))).toBe(true)
        // Past the window after its retention (windows of 10 s).
        yield* TestClock.setTime(now + 70_000)
        yield* inc.maintenance.pass
        expect(yield* inc.ledger.lookup(done)).toEqual(Option.none())
        expect(yield* inc.history.forSubmission(done)).toEqual([])
        const waiting = Option.getOrThrow(yield* inc.ledger.lookup(sleeps))
        expect([waiting.state, waiting.dueAt]).toEqual(["waiting", tomorrow])
        expect((yield* inc.ledger.earliestDue(10)).map((row) => row.submissionId)).toEqual([sleeps])
        expect((yield* inc.history.forSubmission(sleeps)).map((r) => r.entry._tag)).toEqual([
          "SubmissionAccepted",
          "InputApplied",
        ])
        expect(yield* inc.ledger.retentionStart).toEqual(Option.none())
      }),
    ),
  )
})
