/**
 * The SQLite ledger remembers the rows it decoded while the storage writes nothing: a read
 * repeated in between runs no statement, and any write or rollback through a client of the same
 * storage (or its instrumented overlay) makes the next read go to storage again.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { type Fence, SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { instrumentStorage } from "../../src/internal/object/instrumentedStorage.ts"
import { overlaysStorage, sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { type HistoryEntry, layerWithLedger, ThreadHistory } from "../../src/core/ThreadHistory.ts"
import {
  admitReady,
  claimHead,
  grant,
  owner,
  request,
  settleHead,
  settlementOf,
} from "./SubmissionLedgerFixtures.ts"
import { inObject } from "./SubmissionLedgerHarness.ts"

/** `storage` with its statements counted (the instrumented overlay, observing nothing). */
const counted = (storage: DurableObjectStorage) => {
  const count = { statements: 0 }
  const sql = storage.sql
  const counting = new Proxy(sql, {
    get: (target, property) => {
      if (property === "exec")
        return (query: string, ...bindings: Array<unknown>) => {
          count.statements++
          return target.exec(query, ...bindings)
        }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === "function" ? value.bind(target) : value
    },
  })
  const overlay = instrumentStorage(storage, () => {})
  const withCount = new Proxy(overlay, {
    get: (target, property) => (property === "sql" ? counting : Reflect.get(target, property, target)),
  })
  overlaysStorage(withCount, overlay)
  return { storage: withCount, count }
}

/** The ledger (with its SQL client) over `storage`. */
const ledgerOver = (storage: DurableObjectStorage) =>
  layerWithLedger.pipe(Layer.provideMerge(sqlClientLayer(storage)))

/** What `effect` returns, and the statements it ran. */
const statementsOf = <A, E, R>(count: { statements: number }, effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const before = count.statements
    return Effect.map(effect, (value) => ({ value, statements: count.statements - before }))
  })

/** Sets a row's abort flag behind the ledger's back, through the client in context. */
const flagAbort = (submissionId: SubmissionId) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    yield* sql.unsafe("UPDATE effect_agent_submissions SET abort_requested = 1 WHERE submission_id = ?", [
      submissionId,
    ])
  })

/** The abort flag of the row the ledger reads. */
const abortRead = (submissionId: SubmissionId) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    return Option.getOrThrow(yield* ledger.lookup(submissionId)).abortRequested
  })

describe("SubmissionLedger's memo of decoded rows", () => {
  it.effect("answers a repeated read with no statement until something writes", () =>
    inObject((raw) => {
      const { storage, count } = counted(raw)
      return Effect.gen(function* () {
        const ledger = yield* SubmissionLedger
        const row = yield* admitReady(request("t", "a"))
        const first = yield* statementsOf(count, ledger.lookup(row.submissionId))
        const again = yield* statementsOf(count, ledger.lookup(row.submissionId))
        expect(Option.getOrThrow(again.value)).toBe(Option.getOrThrow(first.value))
        expect(again.statements).toBe(0)
        // A write to the ledger's table moves its count: the row is read again, and the change is seen.
        yield* flagAbort(row.submissionId)
        const after = yield* statementsOf(count, ledger.lookup(row.submissionId))
        expect(after.statements).toBe(1)
        expect(Option.getOrThrow(after.value).abortRequested).toBe(true)
      }).pipe(Effect.provide(ledgerOver(storage)))
    }),
  )

  it.effect("keeps a row across writes to other tables, not across one that may write the ledger's", () =>
    inObject((raw) => {
      const { storage, count } = counted(raw)
      return Effect.gen(function* () {
        const ledger = yield* SubmissionLedger
        const sql = yield* SqlClient
        yield* admitReady(request("t", "a"))
        const row = yield* claimHead("t", grant(1, 2_000))
        yield* ledger.lookup(row.submissionId)
        // An application's table and the library's history are written: the row stands.
        yield* sql.unsafe("CREATE TABLE IF NOT EXISTS app_notes (note TEXT)", [])
        yield* sql.unsafe("INSERT INTO app_notes (note) VALUES (?)", ["x"])
        yield* sql.unsafe('UPDATE "app_notes" SET note = ?', ["y"])
        const history = yield* ThreadHistory
        const poke: HistoryEntry = { _tag: "EventReceived", event: "poke", eventId: "e-1", payload: 1 }
        yield* history.append(row.submissionId, poke, owner(row) as Fence, 3_000)
        expect((yield* statementsOf(count, ledger.lookup(row.submissionId))).statements).toBe(0)
        // Writes that may reach the ledger's table, each seen by the next read: one naming it with
        // its schema, one behind a WITH and one after another table's write in the same text (not
        // one plain write, so counted whatever they write).
        const writes: ReadonlyArray<readonly [string, ReadonlyArray<unknown>, boolean]> = [
          [
            "UPDATE main.effect_agent_submissions SET abort_requested = 1 WHERE submission_id = ?",
            [row.submissionId],
            true,
          ],
          [
            "WITH target AS (SELECT ? AS id) UPDATE effect_agent_submissions SET abort_requested = 0 WHERE submission_id = (SELECT id FROM target)",
            [row.submissionId],
            false,
          ],
          [
            `INSERT INTO app_notes (note) VALUES ('w'); UPDATE effect_agent_submissions SET abort_requested = 1 WHERE submission_id = '${row.submissionId}'`,
            [],
            true,
          ],
        ]
        for (const [text, params, aborted] of writes) {
          yield* ledger.lookup(row.submissionId)
          yield* sql.unsafe(text, params)
          const next = yield* statementsOf(count, ledger.lookup(row.submissionId))
          expect({
            text,
            statements: next.statements,
            aborted: Option.getOrThrow(next.value).abortRequested,
          }).toEqual({
            text,
            statements: 1,
            aborted,
          })
        }
      }).pipe(Effect.provide(ledgerOver(storage)))
    }),
  )

  it.effect("relies on a schema with no trigger (a trigger could write the ledger's table unseen)", () =>
    inObject((raw) =>
      Effect.gen(function* () {
        yield* admitReady(request("t", "a"))
        const sql = yield* SqlClient
        const triggers = yield* sql.unsafe("SELECT name FROM sqlite_master WHERE type = 'trigger'", [])
        expect(triggers).toEqual([])
      }).pipe(Effect.provide(ledgerOver(raw))),
    ),
  )

  it.effect("remembers a missing row until a write, then finds it once admitted", () =>
    inObject((raw) => {
      const { storage, count } = counted(raw)
      return Effect.gen(function* () {
        const ledger = yield* SubmissionLedger
        const sql = yield* SqlClient
        const row = yield* admitReady(request("t", "a"))
        // Take the row away behind the ledger's back, through the client: a write.
        yield* sql.unsafe(
          "UPDATE effect_agent_submissions SET submission_id = 'moved' WHERE submission_id = ?",
          [row.submissionId],
        )
        expect(Option.isNone(yield* ledger.lookup(row.submissionId))).toBe(true)
        expect((yield* statementsOf(count, ledger.lookup(row.submissionId))).statements).toBe(0)
        yield* sql.unsafe(
          "UPDATE effect_agent_submissions SET submission_id = ? WHERE submission_id = 'moved'",
          [row.submissionId],
        )
        const back = yield* statementsOf(count, ledger.lookup(row.submissionId))
        expect(back.statements).toBe(1)
        expect(Option.getOrThrow(back.value).submissionId).toBe(row.submissionId)
      }).pipe(Effect.provide(ledgerOver(storage)))
    }),
  )

  it.effect("counts a statement that failed after it wrote as a write", () =>
    inObject((raw) => {
      // A failpoint after every write to the submissions table, armed once the row is admitted.
      let armed = false
      const failing = instrumentStorage(raw, (location, detail) => {
        if (armed && location === "storage:sql:after" && detail === "update effect_agent_submissions") {
          throw new Error("failpoint after the write")
        }
      })
      return Effect.gen(function* () {
        const row = yield* admitReady(request("t", "a"))
        expect(yield* abortRead(row.submissionId)).toBe(false)
        armed = true
        const failed = yield* Effect.flip(flagAbort(row.submissionId))
        armed = false
        expect(failed._tag).toBe("SqlError")
        // The write stands (no transaction rolled it back), and the next read sees it.
        expect(yield* abortRead(row.submissionId)).toBe(true)
      }).pipe(Effect.provide(ledgerOver(failing)))
    }),
  )

  it.effect("forgets what a rolled-back transaction read", () =>
    inObject((raw) => {
      const { storage } = counted(raw)
      return Effect.gen(function* () {
        const sql = yield* SqlClient
        const row = yield* admitReady(request("t", "a"))
        let seenInside: boolean | undefined
        const exit = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* flagAbort(row.submissionId)
              seenInside = yield* abortRead(row.submissionId)
              return yield* Effect.fail("roll back")
            }),
          )
          .pipe(Effect.exit)
        expect(exit._tag).toBe("Failure")
        expect(seenInside).toBe(true)
        expect(yield* abortRead(row.submissionId)).toBe(false)
      }).pipe(Effect.provide(ledgerOver(storage)))
    }),
  )

  it.effect("sees a write made through another client of the same storage", () =>
    inObject((raw) => {
      const { storage } = counted(raw)
      return Effect.gen(function* () {
        const row = yield* admitReady(request("t", "a"))
        expect(yield* abortRead(row.submissionId)).toBe(false)
        // The raw storage under the overlay, through a client of its own.
        yield* flagAbort(row.submissionId).pipe(Effect.provide(sqlClientLayer(raw)))
        expect(yield* abortRead(row.submissionId)).toBe(true)
      }).pipe(Effect.provide(ledgerOver(storage)))
    }),
  )

  it.effect(
    "answers a lane seek repeated before any write, and a fenced read after a claim, from memory",
    () =>
      inObject((raw) => {
        const { storage, count } = counted(raw)
        return Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          yield* admitReady(request("t", "a"))
          const seek = yield* statementsOf(count, ledger.nextLaneHead(undefined))
          expect(seek.statements).toBe(1)
          const repeat = yield* statementsOf(count, ledger.nextLaneHead(undefined))
          expect(repeat.statements).toBe(0)
          expect(Option.getOrThrow(repeat.value).submissionId).toBe(
            Option.getOrThrow(seek.value).submissionId,
          )
          // A fence check after the Attempt's own read of its row reads nothing more.
          const claim = yield* claimHead("t", grant(1, 2_000))
          yield* ledger.lookup(claim.submissionId)
          const fenced = yield* statementsOf(count, ledger.checkFence(owner(claim)))
          expect(fenced.statements).toBe(0)
          expect(fenced.value.state).toBe("running")
          // Settled, the lane has no head: the seek reads again and finds none.
          yield* ledger.settle(owner(claim), settlementOf(claim))
          expect(Option.isNone(yield* ledger.nextLaneHead(undefined))).toBe(true)
          expect(Option.isNone(yield* ledger.head(ThreadId.make("t")))).toBe(true)
        }).pipe(Effect.provide(ledgerOver(storage)))
      }),
  )

  it.effect(
    "passes over lanes whose head waits with work queued behind it in one statement after the first",
    () =>
      inObject((raw) => {
        const { storage, count } = counted(raw)
        return Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          // Fifty lanes whose head waits (for an approval, a child) with input queued behind it,
          // before the one lane with work to run: a selection used to read each of them.
          const waiting = Array.from({ length: 50 }, (_, i) => `w${String(i).padStart(2, "0")}`)
          for (const lane of waiting) {
            yield* admitReady(request(lane, "1"))
            yield* ledger.park(yield* claimHead(lane, grant(1, 2_000)), "suspended")
            yield* admitReady(request(lane, "2"))
          }
          yield* admitReady(request("z", "1"))
          // The first lane, found parked, then one walk past all of them.
          const seek = yield* statementsOf(count, ledger.nextLaneHead(undefined))
          expect(seek.statements).toBe(2)
          expect(Option.map(seek.value, (row) => row.threadId)).toEqual(Option.some("z"))
          expect(Option.map(yield* ledger.nextLaneHead(ThreadId.make("w10")), (row) => row.threadId)).toEqual(
            Option.some("z"),
          )
          // Past the last runnable lane there is none; a lane that is not parked is one statement.
          const none = yield* statementsOf(count, ledger.nextLaneHead(ThreadId.make("z")))
          expect(none).toEqual({ value: Option.none(), statements: 1 })
          yield* admitReady(request("a", "1"))
          const first = yield* statementsOf(count, ledger.nextLaneHead(undefined))
          expect(first.statements).toBe(1)
          expect(Option.map(first.value, (row) => row.threadId)).toEqual(Option.some("a"))
          // Every lane parked: none, in two statements.
          const last = Option.getOrThrow(yield* ledger.head(ThreadId.make("z")))
          yield* ledger.park(yield* claimHead("z", grant(2, 3_000)), "suspended")
          expect(last.threadId).toBe("z")
          const all = yield* statementsOf(count, ledger.nextLaneHead(ThreadId.make("a")))
          expect(all).toEqual({ value: Option.none(), statements: 2 })
        }).pipe(Effect.provide(ledgerOver(storage)))
      }),
  )

  it.effect(
    "answers the feed's end and the unsettled count from the last append, and reads after a rollback",
    () =>
      inObject((raw) => {
        const { storage, count } = counted(raw)
        return Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          const sql = yield* SqlClient
          yield* admitReady(request("t", "a"))
          yield* admitReady(request("u", "b"))
          const stored = Effect.map(
            // The last position taken: a row holds `records` positions from its own.
            sql.unsafe<{ readonly position: number }>(
              "SELECT max(position + records) - 1 AS position FROM effect_agent_history",
            ),
            (rows) => rows[0]!.position,
          )
          const end = yield* statementsOf(count, history.feedEnd)
          const unsettled = yield* statementsOf(count, ledger.countAllNonterminal)
          expect([end.value, end.statements]).toEqual([yield* stored, 0])
          expect([unsettled.value, unsettled.statements]).toEqual([2, 0])
          // An admission rolled back: the memory is dropped and the figures are read, as stored.
          const exit = yield* sql
            .withTransaction(Effect.andThen(admitReady(request("v", "c")), Effect.fail("roll back")))
            .pipe(Effect.exit)
          expect(exit._tag).toBe("Failure")
          const after = yield* statementsOf(count, ledger.countAllNonterminal)
          expect([after.value, after.statements]).toEqual([2, 1])
          expect(yield* history.feedEnd).toBe(yield* stored)
          // Settled, the count follows the settlement's append.
          yield* settleHead("t", 3_000)
          expect(yield* statementsOf(count, ledger.countAllNonterminal)).toEqual({ value: 1, statements: 0 })
          const settledEnd = yield* statementsOf(count, history.feedEnd)
          expect([settledEnd.value, settledEnd.statements]).toEqual([yield* stored, 0])
        }).pipe(Effect.provide(ledgerOver(storage)))
      }),
  )
})
