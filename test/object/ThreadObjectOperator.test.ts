/**
 * The operator entry points: `explain` names the one decisive reason a Submission is not
 * moving, `obligations` lists what the Object owes against the alarm it holds, `verify` finds
 * storage inconsistencies with their rows, `awaitProgress` long-polls a Submission. None of
 * them writes: the record, the alarm, the ledger and the history stay byte-identical.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test"
import { Effect, Fiber } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import {
  built,
  clientOf,
  deliverUntil,
  inState,
  failureOf,
  storedEverything,
  putMaintenanceRecord,
  storedMaintenance,
  stubOf,
  threadName,
} from "./support.ts"

const snapshot = (objectName: string) => storedEverything(stubOf(objectName))

const sql = (objectName: string, statement: string, ...bindings: Array<unknown>) =>
  Effect.promise(() =>
    runInDurableObject(stubOf(objectName), (_instance, state) => {
      state.storage.sql.exec(statement, ...bindings)
    }),
  )

/** Nothing owed and no alarm: a pass cannot be running or about to run. */
const quiet = (objectName: string) =>
  Effect.map(storedMaintenance(objectName), (stored) => {
    const record = stored.record as { dirty: string; processed: string } | undefined
    return stored.alarm === null && record !== undefined && record.dirty === record.processed
  })

describe("ThreadObject operator entry points", () => {
  it.live("explains a wait for approval, a queued follower and a settlement, reading only", () =>
    Effect.gen(function* () {
      const thread = threadName("explain")
      const client = clientOf(thread)
      const head = yield* client.submit({ agentId: "review", idempotencyKey: "h", input: { draft: "plan" } })
      yield* deliverUntil(thread, inState(client, head.submissionId, "suspended"))
      const follower = yield* client.submit({ agentId: "echo", idempotencyKey: "f", input: { text: "next" } })
      yield* deliverUntil(thread, quiet(thread))

      const before = yield* snapshot(thread)
      const waiting = yield* client.explain(head.submissionId)
      expect(waiting).toMatchObject({
        state: "suspended",
        decision: { _tag: "AwaitApprovalDecision" },
        reason: { _tag: "WaitingForApproval", payload: { draft: "plan" } },
      })
      expect(waiting.reason._tag === "WaitingForApproval" && waiting.reason.since).toBeGreaterThan(0)
      expect((yield* client.explain(follower.submissionId)).reason).toEqual({
        _tag: "QueuedBehind",
        head: head.submissionId,
        headState: "suspended",
        ahead: 1,
      })
      // Stable waits only: nothing owed, no alarm, nothing flagged.
      const owed = yield* client.obligations
      expect(owed).toMatchObject({ impliedAlarm: null, scheduledAlarm: null })
      expect(owed.mismatch).toBeUndefined()
      expect(owed.obligations).toEqual([])
      const report = yield* client.verify
      expect(report.violations).toEqual([])
      expect(report).toMatchObject({ submissions: 2 })
      yield* client.awaitProgress(head.submissionId, { timeoutMillis: 0 })
      yield* client.submissions()
      yield* client.threads
      yield* client.inspectMaintenance
      expect(yield* snapshot(thread)).toEqual(before)

      yield* client.resolveApproval(head.submissionId, { approved: true, note: "ok" })
      // The approval is owed work: its alarm (or the pass it started) serves it.
      expect((yield* client.obligations).mismatch).toBeUndefined()
      yield* deliverUntil(thread, inState(client, follower.submissionId, "settled"))
      expect((yield* client.explain(head.submissionId)).reason).toMatchObject({
        _tag: "Settled",
        settlement: { outcome: "completed" },
      })
      expect((yield* client.verify).violations).toEqual([])
      expect((yield* client.submissions()).map((s) => s.state)).toEqual(["settled", "settled"])
      expect(yield* client.threads).toEqual([thread])
    }),
  )

  it.live(
    "explains a queued Submission from its lane's unsettled rows, not the Thread's whole history",
    () =>
      Effect.gen(function* () {
        // The default queue depth (256), so a Thread can carry a long settled history.
        const thread = threadName("explain-history")
        const stub = env.THREADS_WAKE.getByName(thread)
        const client = ThreadClient.make(env.THREADS_WAKE, thread)
        const deliverUntilSettled = (submissionId: string) =>
          Effect.gen(function* () {
            for (let round = 0; round < 60; round++) {
              if ((yield* client.status(submissionId)).state === "settled") return
              yield* Effect.promise(() => runDurableObjectAlarm(stub).catch(() => false))
            }
            return yield* Effect.die(new Error(`${submissionId} did not settle`))
          })
        let last = ""
        for (let index = 0; index < 200; index++)
          last = (yield* client.submit({
            agentId: "echo",
            idempotencyKey: `s${index}`,
            input: { text: "x" },
          })).submissionId
        yield* deliverUntilSettled(last)
        const head = yield* client.submit({
          agentId: "review",
          idempotencyKey: "h",
          input: { draft: "plan" },
        })
        const first = yield* client.submit({ agentId: "echo", idempotencyKey: "f1", input: { text: "a" } })
        const second = yield* client.submit({ agentId: "echo", idempotencyKey: "f2", input: { text: "b" } })
        for (
          let round = 0;
          round < 60 && (yield* client.status(head.submissionId)).state !== "suspended";
          round++
        )
          yield* Effect.promise(() => runDurableObjectAlarm(stub).catch(() => false))

        // The rows SQLite reads for one explain, from a meter on the Object's SQL.
        const explainMetered = (submissionId: string) =>
          Effect.gen(function* () {
            const cursors = yield* Effect.promise(() =>
              runInDurableObject(stub, (_instance, state) => {
                const sqlStorage = state.storage.sql
                const original = sqlStorage.exec
                const seen: Array<{ readonly rowsRead: number }> = []
                sqlStorage.exec = ((query: string, ...bindings: Array<SqlStorageValue>) => {
                  const cursor = original.call(sqlStorage, query, ...bindings)
                  seen.push(cursor)
                  return cursor
                }) as typeof sqlStorage.exec
                return { seen, restore: () => (sqlStorage.exec = original) }
              }),
            )
            const explained = yield* client.explain(submissionId)
            cursors.restore()
            return { explained, rowsRead: cursors.seen.reduce((sum, cursor) => sum + cursor.rowsRead, 0) }
          })
        const behind = yield* explainMetered(second.submissionId)
        expect(behind.explained.reason).toEqual({
          _tag: "QueuedBehind",
          head: head.submissionId,
          headState: "suspended",
          ahead: 2,
        })
        // 200 settled Submissions came before the head: their records are not read.
        expect(behind.rowsRead).toBeLessThan(60)
        expect((yield* client.explain(first.submissionId)).reason).toMatchObject({ ahead: 1 })
      }),
    // 200 submits and the deliveries that settle them: seconds on a loaded machine.
    30_000,
  )

  it.live("explains a follow-up by the host it joined, not as queued behind it", () =>
    Effect.gen(function* () {
      const thread = threadName("explain-join")
      const client = clientOf(thread)
      const host = yield* client.submit({ agentId: "tally", idempotencyKey: "h", input: { n: 1 } })
      yield* deliverUntil(thread, inState(client, host.submissionId, "suspended"))
      const follow = yield* client.submit({
        agentId: "tally",
        idempotencyKey: "f",
        input: { n: 10 },
        mode: "join",
      })
      // It never runs after its host: its host reads it, or it reverts when the host ends.
      expect((yield* client.explain(follow.submissionId)).reason).toEqual({
        _tag: "JoinedTo",
        host: host.submissionId,
        hostState: "suspended",
        read: false,
      })
      yield* client.resolveApproval(host.submissionId, { approved: true })
      yield* deliverUntil(thread, inState(client, follow.submissionId, "settled"))
      expect((yield* client.explain(follow.submissionId)).reason).toMatchObject({
        _tag: "Settled",
        settlement: { outcome: "completed", output: 11, host: host.submissionId },
      })
    }),
  )

  it.live("verifies storage and reports each violation with the rows involved", () =>
    Effect.gen(function* () {
      const thread = threadName("verify")
      const client = clientOf(thread)
      const first = yield* client.submit({ agentId: "echo", idempotencyKey: "a", input: { text: "1" } })
      yield* deliverUntil(thread, inState(client, first.submissionId, "settled"))
      const parked = yield* client.submit({ agentId: "review", idempotencyKey: "b", input: { draft: "d" } })
      yield* deliverUntil(thread, inState(client, parked.submissionId, "suspended"))
      yield* deliverUntil(thread, quiet(thread))
      expect((yield* client.verify).violations).toEqual([])

      // Damage the stored evidence behind the library's back.
      yield* sql(
        thread,
        `UPDATE effect_agent_submissions SET settlement = json_set(settlement, '$.outcome', 'failed') WHERE submission_id = ?`,
        first.submissionId,
      )
      yield* sql(thread, "DELETE FROM effect_agent_history WHERE thread_id = ? AND sequence = 2", thread)
      yield* sql(
        thread,
        "UPDATE effect_agent_submissions SET state = 'ready' WHERE submission_id = ?",
        parked.submissionId,
      )
      const report = yield* client.verify
      const found = report.violations.map((v) => v.invariant).sort()
      expect(found).toEqual(["history-gap-free", "owed-work-has-alarm", "settlement-agreement"])
      expect(report.violations.find((v) => v.invariant === "settlement-agreement")).toMatchObject({
        submissionIds: [first.submissionId],
        evidence: { ledger: "failed", history: ["completed"] },
      })
      // The runnable head with no alarm is flagged by obligations too.
      const owed = yield* client.obligations
      expect(owed.mismatch?.kind).toBe("missing")
      expect(owed.obligations).toContainEqual(
        expect.objectContaining({ source: "lane-head", submissionId: parked.submissionId }),
      )
    }),
  )

  it.live("long-polls a Submission until it moves past the token it was given", () =>
    Effect.gen(function* () {
      const thread = threadName("progress")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "review", idempotencyKey: "p", input: { draft: "go" } })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
      yield* deliverUntil(thread, quiet(thread))
      const start = yield* client.awaitProgress(receipt.submissionId, { timeoutMillis: 0 })
      expect(start).toMatchObject({ changed: true, state: "suspended" })
      expect(start.records.map((r) => r.entry._tag)).toEqual([
        "SubmissionAccepted",
        "InputApplied",
        "ApprovalRequested",
      ])
      const idle = yield* client.awaitProgress(receipt.submissionId, {
        after: start.token,
        timeoutMillis: 50,
      })
      expect(idle).toMatchObject({ changed: false, token: start.token, records: [] })
      // A waiter sees the approval's record as soon as it lands.
      const waiter = yield* Effect.forkChild(
        client.awaitProgress(receipt.submissionId, { after: start.token, timeoutMillis: 5_000 }),
      )
      yield* client.resolveApproval(receipt.submissionId, { approved: true, note: "yes" })
      const moved = yield* Fiber.join(waiter)
      expect(moved.changed).toBe(true)
      expect(moved.records.map((r) => r.entry._tag)).toContain("ApprovalResolved")
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      // Without a token the current progress returns at once.
      const settled = yield* client.awaitProgress(receipt.submissionId, { timeoutMillis: 0 })
      expect(settled).toMatchObject({ changed: true, state: "settled", settlement: { outcome: "completed" } })
      expect(settled.token).not.toBe(start.token)
      expect(settled.records.at(-1)?.entry._tag).toBe("SubmissionSettled")
    }),
  )

  it.live("wakes a quiet Object with a droppable alarm hint that runs a pass", () =>
    Effect.gen(function* () {
      const thread = threadName("wake")
      const client = clientOf(thread)
      yield* built(client)
      yield* deliverUntil(thread, quiet(thread))
      const before = (yield* client.inspectMaintenance).counters.passes
      yield* client.wake
      // workerd delivers the hinted alarm by itself; the pass finds nothing owed.
      let passes = before
      for (let i = 0; i < 200 && passes === before; i++) {
        yield* Effect.sleep(10)
        passes = (yield* client.inspectMaintenance).counters.passes
      }
      expect(passes).toBeGreaterThan(before)
      yield* deliverUntil(thread, quiet(thread))
    }),
  )

  it.live("keeps a damaged Object reachable, refuses mutations by name, and repairs it from the ledger", () =>
    Effect.gen(function* () {
      const thread = threadName("repair")
      const client = clientOf(thread)
      const parked = yield* client.submit({ agentId: "review", idempotencyKey: "r", input: { draft: "d" } })
      yield* deliverUntil(thread, inState(client, parked.submissionId, "suspended"))
      const queued = yield* client.submit({ agentId: "echo", idempotencyKey: "q", input: { text: "q" } })
      yield* deliverUntil(thread, quiet(thread))
      const healthy = (yield* client.inspectMaintenance).record
      yield* putMaintenanceRecord(thread, {
        schemaVersion: 1,
        dirty: "41",
        processed: "oops",
        nonterminal: 2,
      })

      // Reads answer, and say why nothing moves.
      expect((yield* client.explain(queued.submissionId)).reason).toMatchObject({
        _tag: "MaintenanceRecordDamaged",
        field: "processed",
      })
      expect((yield* client.verify).violations.map((v) => v.invariant)).toEqual(["maintenance-record"])
      expect((yield* client.obligations).damaged).toMatchObject({ field: "processed" })
      // Mutations refuse with the damage and write nothing.
      const before = yield* snapshot(thread)
      expect(
        failureOf(yield* Effect.exit(client.resolveApproval(parked.submissionId, { approved: true }))),
      ).toMatchObject({ _tag: "MaintenanceRecordDamaged", field: "processed" })
      expect(
        failureOf(
          yield* Effect.exit(client.submit({ agentId: "echo", idempotencyKey: "x", input: { text: "x" } })),
        ),
      ).toMatchObject({
        _tag: "MaintenanceRecordDamaged",
      })
      expect(yield* snapshot(thread)).toEqual(before)

      const repair = yield* client.repairMaintenance
      expect(repair).toMatchObject({
        repaired: true,
        damage: { field: "processed" },
        record: { nonterminal: 2 },
      })
      // A generation above anything stored, owed, with an alarm armed.
      expect(repair.record!.dirty).toBeGreaterThan(41n)
      expect(repair.record!.dirty).toBeGreaterThan(healthy!.dirty)
      expect(repair.record!.dirty).toBe(repair.record!.processed + 1n)
      expect((yield* storedMaintenance(thread)).alarm).not.toBeNull()
      expect(yield* client.repairMaintenance).toMatchObject({ repaired: false })

      yield* client.resolveApproval(parked.submissionId, { approved: true })
      yield* deliverUntil(thread, inState(client, queued.submissionId, "settled"))
      yield* deliverUntil(thread, quiet(thread))
      expect((yield* client.verify).violations).toEqual([])
      expect((yield* client.submissions()).map((s) => s.settlement?.outcome)).toEqual([
        "completed",
        "completed",
      ])
    }),
  )
})
