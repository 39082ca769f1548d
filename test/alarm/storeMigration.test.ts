/**
 * The upgrades of the store, in place. A database written by the release before the
 * billed-rows schema (its ledger and history tables, one record per history row) with live
 * Submissions in every state is opened by this release, and every one of them settles exactly
 * once, as it would have: work left between writes is finished, waits stay parked until
 * resolved, a Claim of the old release is taken over at once, and used idempotency keys keep
 * replaying. A database of the billed-rows release gains the columns and the recovery index of
 * subagents and joins, and its live Submissions settle the same way.
 */
import { describe, expect, it } from "@effect/vitest"
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { Effect, Schema, Stream } from "effect"
import { Reconcile } from "../../src/core/AgentContext.ts"
import { define } from "../../src/core/AgentRegistration.ts"
import { caughtUpRecord } from "./fixtures.ts"
import type { AnyAgentDefinition } from "../../src/core/AgentRegistration.ts"
import { canonicalJson, contentDigest } from "../../src/core/internal/digest.ts"
import { runMigrations } from "../../src/core/internal/migrations.ts"
import { laneKey } from "../../src/core/internal/ledger/sqlStatements.ts"
import { HISTORY_TABLE, storeMigrations, SUBMISSIONS_TABLE } from "../../src/core/internal/schema.ts"
import { SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import type { HistoryEntry } from "../../src/core/ThreadHistory.ts"
import { charging, makeRuns, ran, reviewed, type Runs, runsOf, threeSteps } from "../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName, putRawState } from "./harness.ts"
import { converge, generationsOf, rowOf, submit, tagsOf } from "./actionable/fixtures.ts"
import { incarnation } from "../support/incarnation.ts"

/** A Submission as the previous release stored it: its row and its records, oldest first. */
interface Legacy {
  readonly id: string
  readonly thread: string
  readonly sequence: number
  readonly agent: AnyAgentDefinition
  readonly input: { readonly n: number }
  readonly state: string
  readonly epoch?: number
  readonly owned?: boolean
  readonly settlement?: object
  readonly records: ReadonlyArray<HistoryEntry>
}

const accepted = (agent: AnyAgentDefinition, n: number): HistoryEntry => ({
  _tag: "SubmissionAccepted",
  agentId: agent.id,
  agentDigest: agent.digest,
  input: { n },
})

const step = (index: number, name: string, result: unknown): HistoryEntry => ({
  _tag: "StepCompleted",
  step: index,
  name,
  result: result as never,
})

/** A Submission of `agent` on input `{ n }`, first in a lane named after it. */
const lone = <const State extends string>(
  id: string,
  agent: AnyAgentDefinition,
  n: number,
  state: State,
  epoch: number,
  records: ReadonlyArray<HistoryEntry>,
) => ({ id, thread: id, sequence: 1, agent, input: { n }, state, epoch, records })

/** The settlement of an aborted Submission, as both releases stored it. */
const abortedSettlement = (id: string, now: number) => ({
  submissionId: id,
  threadId: id,
  outcome: "aborted",
  settledAt: now - 7_000,
})

/** A three-step Submission both releases stored settled: its row fields and its records. */
const settledThreeSteps = (three: AnyAgentDefinition, now: number) => ({
  ...lone("done", three, 1, "settled", 1, [
    accepted(three, 1),
    { _tag: "InputApplied" },
    step(0, "one", 2),
    step(1, "two", 3),
    step(2, "three", 4),
    { _tag: "SubmissionSettled", outcome: "completed", output: 9 },
  ]),
  settlement: {
    submissionId: "done",
    threadId: "done",
    outcome: "completed",
    output: 9,
    settledAt: now - 7_000,
  },
})

/** A reviewed Submission both releases stored waiting for its approval. */
const awaitingApproval = (review: AnyAgentDefinition) => ({
  ...lone("waits", review, 1, "suspended", 1, [
    accepted(review, 1),
    { _tag: "InputApplied" },
    step(0, "draft", "draft-1"),
    { _tag: "ApprovalRequested", step: 1, payload: { draft: "draft-1" } },
  ]),
  thread: "approval",
})

/** Writes the previous release's schema and rows, with the clock at `now`. */
const writeLegacy = (storage: DurableObjectStorage, now: number, rows: ReadonlyArray<Legacy>) =>
  Effect.gen(function* () {
    yield* Effect.provide(runMigrations(storeMigrations.slice(0, 3)), sqlClientLayer(storage))
    const sequences = new Map<string, number>()
    let settled = 0
    for (const row of rows) {
      const payload = canonicalJson(row.input)
      if (row.state === "settled") settled += 1
      storage.sql.exec(
        `INSERT INTO ${SUBMISSIONS_TABLE} (submission_id, thread_id, lane_key, queue_sequence, idempotency_key,
          agent_id, agent_digest, input_payload, input_digest, receipt_id, state, producer_epoch, attempt_id,
          ownership_token, lease_expires_at, abort_requested, settlement, created_at, ready_at, settled_ordinal)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)`,
        row.id,
        row.thread,
        laneKey(row.thread),
        row.sequence,
        `key-${row.id}`,
        row.agent.id,
        row.agent.digest,
        payload,
        contentDigest(payload),
        `receipt-${row.id}`,
        row.state,
        row.epoch ?? 0,
        row.owned === true ? `attempt-${row.id}` : null,
        row.owned === true ? `token-${row.id}` : null,
        // A lease of the old release that is still live by the clock.
        row.owned === true ? now + 3_600_000 : null,
        row.settlement === undefined ? null : JSON.stringify(row.settlement),
        now - 10_000,
        row.state === "admitted" ? null : now - 9_000,
        row.state === "settled" ? settled : null,
      )
      for (const entry of row.records) {
        const sequence = (sequences.get(row.thread) ?? 0) + 1
        sequences.set(row.thread, sequence)
        storage.sql.exec(
          `INSERT INTO ${HISTORY_TABLE} (thread_id, sequence, submission_id, recorded_at, entry) VALUES (?, ?, ?, ?, ?)`,
          row.thread,
          sequence,
          row.id,
          now - 8_000,
          JSON.stringify(entry),
        )
      }
    }
  })

/** A Submission as the billed-rows release (`thread-store/003`) stored it. */
interface Billed {
  readonly id: string
  readonly thread: string
  readonly agent: AnyAgentDefinition
  readonly input: { readonly n: number }
  readonly state: "ready" | "running" | "suspended" | "unknown" | "settled"
  readonly epoch: number
  readonly settlement?: object
  readonly records: ReadonlyArray<HistoryEntry>
}

/** Writes the billed-rows release's schema and rows (one history row each), at `now`. */
const writeBilled = (storage: DurableObjectStorage, now: number, rows: ReadonlyArray<Billed>) =>
  Effect.gen(function* () {
    yield* Effect.provide(runMigrations(storeMigrations.slice(0, 4)), sqlClientLayer(storage))
    let position = 1
    let settled = 0
    for (const [index, row] of rows.entries()) {
      const payload = canonicalJson(row.input)
      if (row.state === "settled") settled += 1
      storage.sql.exec(
        `INSERT INTO ${SUBMISSIONS_TABLE} (submission_id, thread_id, lane_key, queue_sequence, idempotency_key,
          agent_id, agent_digest, input_payload, input_digest, receipt_id, state, lane_status, producer_epoch,
          attempt_id, ownership_token, lease_expires_at, owner_incarnation, abort_requested, settlement,
          created_at, ready_at, history_from)
          VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, 1)`,
        row.id,
        row.thread,
        laneKey(row.thread),
        `key-${row.id}`,
        row.agent.id,
        row.agent.digest,
        payload,
        contentDigest(payload),
        `receipt-${row.id}`,
        row.state,
        row.state === "settled"
          ? "closed"
          : row.state === "suspended" || row.state === "unknown"
            ? "parked"
            : "open",
        row.epoch,
        row.state === "running" ? `attempt-${row.id}` : null,
        row.state === "running" ? `token-${row.id}` : null,
        // A Claim of the old release's incarnation, its lease still live by the clock.
        row.state === "running" ? now + 3_600_000 : null,
        row.state === "running" ? "incarnation-of-003" : null,
        row.settlement === undefined ? null : JSON.stringify(row.settlement),
        now - 10_000,
        now - 9_000,
      )
      storage.sql.exec(
        `INSERT INTO ${HISTORY_TABLE} (position, thread_id, sequence, records, submission_id, recorded_at,
          entries, lane_tail, admitted, settled) VALUES (?, ?, 1, ?, ?, ?, ?, 1, ?, ?)`,
        position,
        row.thread,
        row.records.length,
        row.id,
        now - 8_000,
        JSON.stringify(row.records),
        index + 1,
        settled,
      )
      position += row.records.length
    }
  })

/** Charges in an uncertain step whose reconcile finds the charge. */
const reconciling = (runs: Runs) =>
  define({
    id: "reconciling",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Struct({ receipt: Schema.String, note: Schema.String }),
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        yield* ctx.step("prepare", Effect.as(ran(runs, "prepare"), n))
        const receipt = yield* ctx.uncertainStep("charge", Effect.as(ran(runs, "charge"), `charged-${n}`), {
          result: Schema.String,
          reconcile: Effect.as(ran(runs, "reconcile"), Reconcile.happened(`found-${n}`)),
        })
        const note = yield* ctx.step("after", Effect.as(ran(runs, "after"), "done"))
        return { receipt, note }
      }),
  })

describe("the upgrade to the billed-rows schema", () => {
  it.effect("settles live Submissions of every state exactly once after an in-place upgrade", () =>
    inObject(objectName("upgrade"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const three = threeSteps(runs)
        const review = reviewed(runs)
        const charge = charging(runs)
        const rows: ReadonlyArray<Legacy> = [
          settledThreeSteps(three, now),
          // Admitted, killed before the acceptance record; and after it, before readiness.
          lone("bare", three, 1, "admitted", 0, []),
          lone("unready", three, 2, "admitted", 0, [accepted(three, 2)]),
          lone("replay", three, 10, "admitted", 0, []),
          lone("ready", three, 3, "ready", 0, [accepted(three, 3)]),
          // A Claim of the old release, its lease still live: taken over at once.
          {
            ...lone("running", three, 4, "running", 1, [
              accepted(three, 4),
              { _tag: "InputApplied" },
              step(0, "one", 5),
            ]),
            owned: true,
          },
          awaitingApproval(review),
          // Queued behind the approval: dormant until it is resolved.
          { ...lone("behind", three, 5, "ready", 0, [accepted(three, 5)]), thread: "approval", sequence: 2 },
          // Approved, killed before the row moved: recovery resumes it.
          lone("approved", review, 2, "suspended", 1, [
            accepted(review, 2),
            { _tag: "InputApplied" },
            step(0, "draft", "draft-2"),
            { _tag: "ApprovalRequested", step: 1, payload: { draft: "draft-2" } },
            { _tag: "ApprovalResolved", step: 1, approved: true },
          ]),
          lone("unknown", charge, 1, "unknown", 2, [
            accepted(charge, 1),
            { _tag: "InputApplied" },
            step(0, "prepare", 1),
            { _tag: "UncertainStepStarted", step: 1, name: "charge" },
            { _tag: "UnknownOutcomeRecorded", step: 1, name: "charge" },
          ]),
          lone("resolved", charge, 2, "unknown", 2, [
            accepted(charge, 2),
            { _tag: "InputApplied" },
            step(0, "prepare", 2),
            { _tag: "UncertainStepStarted", step: 1, name: "charge" },
            { _tag: "UnknownOutcomeRecorded", step: 1, name: "charge" },
            { _tag: "UnknownOutcomeResolved", step: 1, resolution: { _tag: "Succeeded", value: "r-2" } },
          ]),
          // Reserved, then killed before the record; and recorded, killed before the finalize.
          {
            ...lone("reserved", three, 6, "terminalizing", 1, [
              accepted(three, 6),
              { _tag: "AbortRequested" },
            ]),
            settlement: abortedSettlement("reserved", now),
          },
          {
            ...lone("recorded", three, 7, "terminalizing", 1, [
              accepted(three, 7),
              { _tag: "AbortRequested" },
              { _tag: "SubmissionSettled", outcome: "aborted" },
            ]),
            settlement: abortedSettlement("recorded", now),
          },
        ]
        yield* writeLegacy(ctx.storage, now, rows)

        const inc = yield* incarnation(ctx, { agents: [three, review, charge] })
        const ids = (id: string) => SubmissionId.make(id)
        // Every Submission but the settled one and the one whose settlement is recorded is nonterminal.
        expect(yield* inc.ledger.countAllNonterminal).toBe(rows.length - 2)
        // The waits nothing resolved are parked: no pass reads them.
        const candidates = yield* Stream.runCollect(inc.ledger.scanRecoveryCandidates)
        expect(candidates.map((row) => row.submissionId).sort()).toEqual(
          ["approved", "bare", "recorded", "replay", "reserved", "resolved", "unready"].sort(),
        )
        // A used key replays its Submission, and finishes a half-admitted one.
        const replayed = yield* submit(inc, "replay", three.id, "key-replay", { n: 10 })
        expect([replayed.replayed, replayed.submissionId]).toEqual([true, "replay"])
        expect((yield* rowOf(inc, ids("replay"))).state).toBe("ready")
        const readyAgain = yield* submit(inc, "ready", three.id, "key-ready", { n: 3 })
        expect([readyAgain.replayed, readyAgain.submissionId]).toEqual([true, "ready"])
        const conflict = yield* Effect.flip(submit(inc, "ready", three.id, "key-ready", { n: 99 }))
        expect(conflict._tag).toBe("IdempotencyConflict")
        // A new Submission in an old lane is numbered after the old ones.
        const after = yield* submit(inc, "approval", three.id, "after-upgrade", { n: 6 })
        expect(after.queueSequence).toBe(3)
        // A page of the old lane after a cursor lists the old rows and the new one in queue order.
        const lane = ThreadId.make("approval")
        for (const cursor of [0, 1, 2])
          expect(
            (yield* inc.ledger.lanePage(lane, { after: cursor, limit: 10 })).map((row) => row.queueSequence),
          ).toEqual([1, 2, 3].filter((q) => q > cursor))

        yield* inc.maintenance.ensureAlarm
        yield* converge(ctx, inc.maintenance)
        yield* inc.maintenance.withMutation(
          inc.runtime.resolveApproval(ids("waits"), { approved: true, note: "ok" }),
        )
        yield* inc.maintenance.withMutation(
          inc.runtime.resolveUnknown(ids("unknown"), { _tag: "Succeeded", value: "r-1" }),
        )
        yield* converge(ctx, inc.maintenance)

        const outcome = (id: string) =>
          Effect.map(rowOf(inc, ids(id)), (row) => [
            row.state,
            row.settlement?.outcome,
            row.settlement?.output,
          ])
        expect(yield* outcome("done")).toEqual(["settled", "completed", 9])
        expect(yield* outcome("bare")).toEqual(["settled", "completed", 9])
        expect(yield* outcome("unready")).toEqual(["settled", "completed", 12])
        expect(yield* outcome("replay")).toEqual(["settled", "completed", 36])
        expect(yield* outcome("ready")).toEqual(["settled", "completed", 15])
        expect(yield* outcome("running")).toEqual(["settled", "completed", 18])
        expect(yield* outcome("waits")).toEqual(["settled", "completed", "draft-1 published (ok)"])
        expect(yield* outcome("behind")).toEqual(["settled", "completed", 21])
        expect(yield* outcome("approved")).toEqual(["settled", "completed", "draft-2 published (no note)"])
        expect(yield* outcome("unknown")).toEqual(["settled", "completed", { receipt: "r-1", note: "done" }])
        expect(yield* outcome("resolved")).toEqual(["settled", "completed", { receipt: "r-2", note: "done" }])
        expect(yield* outcome("reserved")).toEqual(["settled", "aborted", undefined])
        expect(yield* outcome("recorded")).toEqual(["settled", "aborted", undefined])
        expect((yield* rowOf(inc, after.submissionId)).settlement?.output).toBe(24)

        for (const row of [...rows.map((each) => ids(each.id)), after.submissionId]) {
          const tags = yield* tagsOf(inc, row)
          expect(
            tags.filter((tag) => tag === "SubmissionSettled"),
            row,
          ).toHaveLength(1)
          expect(
            tags.filter((tag) => tag === "SubmissionAccepted"),
            row,
          ).toHaveLength(1)
          expect(tags.filter((tag) => tag === "InputApplied").length, row).toBeLessThanOrEqual(1)
        }
        // No step that the old release journaled ran again; the charges never ran.
        expect(yield* runsOf(runs)).toEqual({ one: 6, two: 7, three: 7, publish: 2, after: 2 })
        expect(yield* inc.ledger.countAllNonterminal).toBe(0)
        expect(yield* alarmOf(ctx)).toBeNull()
        const { dirty, processed } = yield* generationsOf(ctx)
        expect(processed).toBe(dirty)
      }),
    ),
  )

  it.effect("upgrades a database of the billed-rows release in place for subagents and joins", () =>
    inObject(objectName("upgrade-links"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const three = threeSteps(runs)
        const review = reviewed(runs)
        const rows: ReadonlyArray<Billed> = [
          settledThreeSteps(three, now),
          lone("queued", three, 3, "ready", 0, [accepted(three, 3)]),
          lone("running", three, 4, "running", 1, [
            accepted(three, 4),
            { _tag: "InputApplied" },
            step(0, "one", 5),
          ]),
          awaitingApproval(review),
        ]
        yield* writeBilled(ctx.storage, now, rows)

        const inc = yield* incarnation(ctx, { agents: [three, review] })
        const applied = ctx.storage.sql
          .exec("SELECT name FROM effect_agent_migrations ORDER BY name")
          .toArray()
          .map((row) => String(row.name))
        expect(applied.slice(-10)).toEqual([
          "thread-store/003-billed-rows",
          "thread-store/004-subagent-links",
          "thread-store/005-durable-waits",
          "thread-store/006-retention",
          "thread-store/007-schedules",
          "thread-store/008-ordered-incarnations",
          "thread-store/009-retention-when-used",
          "thread-store/010-schedule-overlap",
          "thread-store/011-event-ids",
          "thread-store/012-removed-counts",
        ])
        // The recovery index now takes joins in; the parked wait and the old Claim stay out of it.
        const [index] = ctx.storage.sql
          .exec("SELECT sql FROM sqlite_master WHERE name = ?", `${SUBMISSIONS_TABLE}_recovery`)
          .toArray()
        expect(String(index?.sql)).toContain("'joining', 'joined'")
        expect(yield* Stream.runCollect(inc.ledger.scanRecoveryCandidates)).toEqual([])
        expect(yield* inc.ledger.countAllNonterminal).toBe(3)

        yield* inc.maintenance.ensureAlarm
        yield* converge(ctx, inc.maintenance)
        yield* inc.maintenance.withMutation(
          inc.runtime.resolveApproval(SubmissionId.make("waits"), { approved: true, note: "ok" }),
        )
        yield* converge(ctx, inc.maintenance)
        const outcome = (id: string) =>
          Effect.map(rowOf(inc, SubmissionId.make(id)), (row) => [row.state, row.settlement?.output])
        expect(yield* outcome("done")).toEqual(["settled", 9])
        expect(yield* outcome("queued")).toEqual(["settled", 15])
        expect(yield* outcome("running")).toEqual(["settled", 18])
        expect(yield* outcome("waits")).toEqual(["settled", "draft-1 published (ok)"])
        for (const row of rows) {
          const tags = yield* tagsOf(inc, SubmissionId.make(row.id))
          expect(
            tags.filter((tag) => tag === "SubmissionSettled"),
            row.id,
          ).toHaveLength(1)
        }
        expect(yield* runsOf(runs)).toEqual({ one: 1, two: 2, three: 2, publish: 1 })
        // The old rows have no parent and no host.
        const links = ctx.storage.sql
          .exec(
            `SELECT count(*) AS linked FROM ${SUBMISSIONS_TABLE}
            WHERE parent_link IS NOT NULL OR host_submission_id IS NOT NULL`,
          )
          .toArray()
        expect(Number(links[0]?.linked)).toBe(0)
        expect(yield* alarmOf(ctx)).toBeNull()
        const { dirty, processed } = yield* generationsOf(ctx)
        expect(processed).toBe(dirty)
      }),
    ),
  )

  it.effect("wakes an idle Object once to decide again the Unknown Outcomes an older release parked", () =>
    inObject(objectName("upgrade-unknown"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const agent = reconciling(runs)
        yield* writeBilled(ctx.storage, now, [
          {
            id: "charge",
            thread: "charge",
            agent,
            input: { n: 1 },
            state: "unknown",
            epoch: 2,
            records: [
              accepted(agent, 1),
              { _tag: "InputApplied" },
              step(0, "prepare", 1),
              { _tag: "UncertainStepStarted", step: 1, name: "charge", reconcileAttempts: 3 },
              { _tag: "UnknownOutcomeRecorded", step: 1, name: "charge" },
            ],
          },
        ])
        // The older release had nothing left to do: its record is caught up and no alarm is set.
        yield* putRawState(ctx, caughtUpRecord(4n, { nonterminal: 1 }))

        const inc = yield* incarnation(ctx, { agents: [agent] })
        yield* inc.maintenance.ensureAlarm
        // The migration made the wait due: the Object wakes for it with no request.
        expect(yield* alarmOf(ctx)).not.toBeNull()
        yield* converge(ctx, inc.maintenance)
        const row = yield* rowOf(inc, SubmissionId.make("charge"))
        expect([row.state, row.settlement?.output]).toEqual(["settled", { receipt: "found-1", note: "done" }])
        // The uncertain effect never ran again: the reconcile decided.
        expect(yield* runsOf(runs)).toEqual({ reconcile: 1, after: 1 })
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )
})

describe("an upgrade cut short", () => {
  it.effect("rolls back a migration that fails half-way and runs it whole the next time", () =>
    inObject(objectName("upgrade-cut"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const three = threeSteps(runs)
        yield* writeLegacy(ctx.storage, now, [
          settledThreeSteps(three, now),
          lone("ready", three, 3, "ready", 0, [accepted(three, 3)]),
        ])
        const schema = () =>
          ctx.storage.sql
            .exec("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE '_cf_%' ORDER BY name")
            .toArray()
        const before = schema()
        // The billed-rows rebuild, failing after its last statement (a kill mid-way leaves the same).
        const cut = storeMigrations.map((migration) =>
          migration.name === "thread-store/003-billed-rows"
            ? {
                ...migration,
                statements: [...migration.statements, "SELECT no_such_column FROM effect_agent_history"],
              }
            : migration,
        )
        const failed = yield* Effect.exit(Effect.provide(runMigrations(cut), sqlClientLayer(ctx.storage)))
        expect(failed._tag).toBe("Failure")
        expect(schema()).toEqual(before)
        const applied = yield* Effect.provide(runMigrations(storeMigrations), sqlClientLayer(ctx.storage))
        expect(applied[0]).toBe("thread-store/003-billed-rows")
        const inc = yield* incarnation(ctx, { agents: [three] })
        yield* inc.maintenance.ensureAlarm
        yield* converge(ctx, inc.maintenance)
        expect((yield* rowOf(inc, SubmissionId.make("ready"))).settlement?.output).toBe(15)
        expect((yield* rowOf(inc, SubmissionId.make("done"))).settlement?.output).toBe(9)
      }),
    ),
  )
})
