/**
 * The SQLite history remembers the journals of live Submissions and continues a read from the
 * last row it saw: what it returns is always what a whole read returns (records appended since,
 * other Submissions' records left out, a rollback's records gone, a removed Submission empty),
 * and a read again reads only the rows appended since, not the Thread from the acceptance.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import type { Fence } from "../../src/core/SubmissionLedger.ts"
import { type HistoryEntry, ThreadHistory } from "../../src/core/ThreadHistory.ts"
import { layerWithLedger } from "../../src/core/ThreadHistory.ts"
import { instrumentStorage } from "../../src/internal/object/instrumentedStorage.ts"
import { overlaysStorage, sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { admitReady, claimHead, grant, owner, request, settlementOf } from "./SubmissionLedgerFixtures.ts"
import { inObject } from "./SubmissionLedgerHarness.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"

/** `storage` with the rows its statements read counted. */
const counted = (storage: DurableObjectStorage) => {
  const cursors: Array<SqlStorageCursor<Record<string, SqlStorageValue>>> = []
  const sql = storage.sql
  const counting = new Proxy(sql, {
    get: (target, property) => {
      if (property === "exec")
        return (query: string, ...bindings: Array<unknown>) => {
          const cursor = target.exec(query, ...bindings)
          cursors.push(cursor)
          return cursor
        }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === "function" ? value.bind(target) : value
    },
  })
  // The instrumented overlay (observing nothing) binds the storage's methods for the proxy.
  const overlay = instrumentStorage(storage, () => {})
  const withCount = new Proxy(overlay, {
    get: (target, property) =>
      property === "sql" ? counting : (Reflect.get(target, property, target) as unknown),
  })
  overlaysStorage(withCount, overlay)
  return { storage: withCount, rowsRead: () => cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0) }
}

const over = (storage: DurableObjectStorage) =>
  layerWithLedger.pipe(Layer.provideMerge(sqlClientLayer(storage)))

const event = (n: number): HistoryEntry => ({
  _tag: "EventReceived",
  event: "poke",
  eventId: `e-${n}`,
  payload: n,
})

/** A Submission's records as a whole scan of its Thread finds them, behind the memory's back. */
const scanned = (threadId: string, submissionId: SubmissionId) =>
  Effect.gen(function* () {
    const history = yield* ThreadHistory
    const page = yield* history.page(ThreadId.make(threadId), { after: 0, limit: 1_000 })
    return page.records.filter((record) => record.submissionId === submissionId)
  })

const journal = (submissionId: SubmissionId) =>
  Effect.gen(function* () {
    const history = yield* ThreadHistory
    return yield* history.forSubmission(submissionId)
  })

/** Admits `count` Submissions to Thread `t` and claims the first: the running one and its fence. */
const runningBehindQueue = (count: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < count; i++) yield* admitReady(request("t", `k-${i}`))
    const claim = yield* claimHead("t", grant(1, 2_000))
    return { claim, fence: owner(claim) as Fence }
  })

describe("ThreadHistory's memory of live journals", () => {
  it.effect("returns what a whole read returns, and reads only the rows appended since", () =>
    inObject((raw) => {
      const { storage, rowsRead } = counted(raw)
      return Effect.gen(function* () {
        const history = yield* ThreadHistory
        const { claim, fence } = yield* runningBehindQueue(30)
        const id = claim.submissionId
        const first = yield* journal(id)
        expect(first).toEqual(yield* scanned("t", id))
        for (let n = 0; n < 5; n++) {
          // One record, then two in one row.
          if (n % 2 === 0) yield* history.append(id, event(n), fence, 3_000 + n)
          else yield* history.appendAll(id, [event(n), event(n + 100)], fence, 3_000 + n)
          const whole = yield* scanned("t", id)
          const before = rowsRead()
          const again = yield* journal(id)
          const read = rowsRead() - before
          expect(again).toEqual(whole)
          expect(again.map((record) => record.entry._tag).slice(-1)).toEqual(["EventReceived"])
          // The ledger row, the Thread's end and the row appended since, not the 30 acceptances.
          expect(read).toBeLessThanOrEqual(4)
        }
        // Nothing appended since: the same records, from the ledger row and the Thread's end.
        const whole = yield* scanned("t", id)
        const before = rowsRead()
        const same = yield* journal(id)
        expect(rowsRead() - before).toBeLessThanOrEqual(3)
        expect(same).toEqual(whole)
      }).pipe(Effect.provide(over(storage)))
    }),
  )

  it.effect("leaves out the records of other Submissions appended in between", () =>
    inObject((raw) =>
      Effect.gen(function* () {
        const history = yield* ThreadHistory
        const ledger = yield* SubmissionLedger
        const { claim, fence } = yield* runningBehindQueue(1)
        yield* journal(claim.submissionId)
        const later = yield* admitReady(request("t", "later"))
        yield* history.append(claim.submissionId, event(1), fence, 3_000)
        expect(yield* journal(claim.submissionId)).toEqual(yield* scanned("t", claim.submissionId))
        expect((yield* journal(later.submissionId)).map((record) => record.entry._tag)).toEqual([
          "SubmissionAccepted",
        ])
        // Settled, its journal closes with its settlement and is not kept.
        yield* ledger.settle(fence, settlementOf(claim))
        const settled = yield* journal(claim.submissionId)
        expect(settled).toEqual(yield* scanned("t", claim.submissionId))
        expect(settled.map((record) => record.entry._tag).slice(-1)).toEqual(["SubmissionSettled"])
      }).pipe(Effect.provide(over(raw))),
    ),
  )

  it.effect("decodes every read afresh: a change to records returned is not in the next read", () =>
    inObject((raw) =>
      Effect.gen(function* () {
        const history = yield* ThreadHistory
        const { claim, fence } = yield* runningBehindQueue(2)
        const id = claim.submissionId
        yield* history.append(
          id,
          { _tag: "EventReceived", event: "poke", eventId: "e-items", payload: { items: [1] } },
          fence,
          3_000,
        )
        const first = yield* journal(id)
        const received = first[first.length - 1]!.entry
        if (received._tag !== "EventReceived") throw new Error("expected the event")
        ;(received.payload as { items: Array<number> }).items.push(2)
        const again = yield* journal(id)
        expect(again[again.length - 1]!.entry).toMatchObject({ payload: { items: [1] } })
      }).pipe(Effect.provide(over(raw))),
    ),
  )

  it.effect(
    "reads what is stored: not an appender's changes to its records, a row rewritten behind the client's back",
    () =>
      inObject((raw) =>
        Effect.gen(function* () {
          const history = yield* ThreadHistory
          const { claim, fence } = yield* runningBehindQueue(1)
          const id = claim.submissionId
          const [appended] = yield* history.appendAll(id, [event(1)], fence, 3_000)
          // The appender's records are its own: a change to them is not in a read.
          ;(appended!.entry as { payload: unknown }).payload = "changed by the appender"
          expect((yield* journal(id)).at(-1)!.entry).toMatchObject({ payload: 1 })
          // A writer the client does not see rewrites the row: the next read decodes what is stored.
          raw.sql.exec(
            `UPDATE effect_agent_history SET entries = ? WHERE thread_id = 't' AND sequence = ?`,
            JSON.stringify([event(2)]),
            appended!.sequence,
          )
          const page = yield* history.page(ThreadId.make("t"), { after: 0, limit: 100 })
          expect(page.records.at(-1)!.entry).toMatchObject({ eventId: "e-2", payload: 2 })
        }).pipe(Effect.provide(over(raw))),
      ),
  )

  it.effect("forgets the records a rolled-back transaction appended", () =>
    inObject((raw) =>
      Effect.gen(function* () {
        const history = yield* ThreadHistory
        const sql = yield* SqlClient
        const { claim, fence } = yield* runningBehindQueue(3)
        const id = claim.submissionId
        const before = yield* journal(id)
        let inside = 0
        const exit = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* history.append(id, event(1), fence, 3_000)
              inside = (yield* journal(id)).length
              return yield* Effect.fail("roll back")
            }),
          )
          .pipe(Effect.exit)
        expect(exit._tag).toBe("Failure")
        expect(inside).toBe(before.length + 1)
        expect(yield* journal(id)).toEqual(before)
        // The next append takes the sequence the rolled-back one took, and is read.
        yield* history.append(id, event(2), fence, 3_001)
        expect(yield* journal(id)).toEqual(yield* scanned("t", id))
      }).pipe(Effect.provide(over(raw))),
    ),
  )

  it.effect("answers nothing once the Submission's row is gone", () =>
    inObject((raw) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const { claim } = yield* runningBehindQueue(2)
        expect((yield* journal(claim.submissionId)).length).toBeGreaterThan(0)
        yield* sql.unsafe("DELETE FROM effect_agent_submissions WHERE submission_id = ?", [
          claim.submissionId,
        ])
        expect(yield* journal(claim.submissionId)).toEqual([])
      }).pipe(Effect.provide(over(raw))),
    ),
  )

  it.effect("sees records appended through another client of the same storage", () =>
    inObject((raw) =>
      Effect.gen(function* () {
        const { claim, fence } = yield* runningBehindQueue(2)
        const id = claim.submissionId
        yield* journal(id)
        const appendElsewhere = Effect.gen(function* () {
          const history = yield* ThreadHistory
          yield* history.append(id, event(1), fence, 3_000)
        })
        yield* appendElsewhere.pipe(Effect.provide(over(raw)))
        expect(yield* journal(id)).toEqual(yield* scanned("t", id))
      }).pipe(Effect.provide(over(raw))),
    ),
  )
})
