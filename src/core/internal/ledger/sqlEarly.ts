/**
 * Early events on the SQLite ledger (`early.ts`), in a table of their own.
 *
 * `keep` decides in one synchronous storage transaction: the Submission admitted under the key
 * is there (the caller sends the event to it as any event), or the event is kept, once per event
 * id. `take` runs in the admission's transaction and removes what was kept for the Submission's
 * key and agent. Neither can interleave with the other, so an event racing the admission is
 * recorded exactly once: by its send, or by the admission.
 *
 * The table is created when the first event is kept, not by a migration: an Object that never
 * keeps one pays nothing for it, and every other statement first learns once per storage whether
 * it exists (`PRAGMA table_info`, no billed row, where a `sqlite_master` lookup scans the whole
 * schema).
 */
import { Effect, Option, type Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { AgentId, IdempotencyKey, ThreadId } from "../../Identifiers.ts"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import { rowsRunner, type StorageClock, storageClock } from "../directRows.ts"
import type { HistoryEntry } from "../history/model.ts"
import { submissionIdFor } from "./admission.ts"
import {
  type EarlyEvent,
  type EarlyEventAgentsService,
  type EarlyEventRefused,
  type EarlyEvents,
  type EarlyKeep,
  earlyRefusal,
  earlyView,
  noEarlyEvents,
  receivedEntry,
  takesEarly,
} from "./early.ts"
import { LedgerError, type SubmissionSnapshot } from "./model.ts"
import { utf8ByteLength } from "./rules.ts"
import { numberOr, storageError } from "./sqlQueries.ts"

/** @internal */
export const EARLY_EVENTS_TABLE = "effect_agent_early_events"

const t = EARLY_EVENTS_TABLE

/** @internal */
export const earlyStatements = {
  create: `CREATE TABLE IF NOT EXISTS ${t} (
    thread_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    event_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    kept_at REAL NOT NULL,
    PRIMARY KEY (thread_id, idempotency_key, event_id)
  ) WITHOUT ROWID`,
  exists: `PRAGMA table_info(${t})`,
  kept: `SELECT event FROM ${t} WHERE thread_id = ? AND idempotency_key = ? AND event_id = ?`,
  totals: `SELECT count(*) AS count, coalesce(sum(length(CAST(payload AS BLOB))), 0) AS bytes FROM ${t}`,
  insert: `INSERT INTO ${t} (thread_id, idempotency_key, event_id, agent_id, event, payload, kept_at)
    VALUES (?, ?, ?, ?, ?, ?, ?)`,
  forKey: `SELECT event, event_id, agent_id, payload FROM ${t} WHERE thread_id = ? AND idempotency_key = ?
    ORDER BY kept_at, event_id`,
  take: `DELETE FROM ${t} WHERE thread_id = ? AND idempotency_key = ? AND agent_id = ?`,
  forget: `DELETE FROM ${t} WHERE thread_id = ? AND idempotency_key = ?`,
  byKey: `SELECT thread_id, idempotency_key, agent_id, count(*) AS events,
    sum(length(CAST(payload AS BLOB))) AS bytes, min(kept_at) AS first_kept_at
    FROM ${t} GROUP BY thread_id, idempotency_key, agent_id ORDER BY thread_id, idempotency_key, agent_id`,
} as const

/**
 * Whether the table exists, per storage (two incarnations over one storage in a test share it):
 * learned once, and set when `keep` creates it. Tables are never dropped.
 */
const tableKnown = new WeakMap<StorageClock, boolean>()

/** The early events of the SQLite ledger. @internal */
export const makeSqlEarly = (
  sql: SqlClient,
  options: { readonly salt: string; readonly agents: EarlyEventAgentsService },
) => {
  const rows = rowsRunner(sql)
  const clock = storageClock(sql)
  const query = (operation: string, text: string, params: ReadonlyArray<unknown> = []) =>
    rows(text, params).pipe(Effect.mapError(storageError(operation)))

  /** Whether the table exists: remembered per storage, else asked of the schema (no billed row). */
  const exists = (operation: string) =>
    Effect.suspend(() => {
      const known = clock === undefined ? undefined : tableKnown.get(clock)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.map(query(operation, earlyStatements.exists), (found) => {
        if (clock !== undefined) tableKnown.set(clock, found.length > 0)
        return found.length > 0
      })
    })

  const create = (operation: string) =>
    Effect.gen(function* () {
      if (yield* exists(operation)) return
      yield* query(operation, earlyStatements.create)
      if (clock !== undefined) tableKnown.set(clock, true)
    })

  /**
   * The ledger's `keepEarly`: answers the Submission admitted under the key, or keeps the event
   * for it, in one transaction.
   */
  const keep = (
    lookupByKey: SubmissionLedger["Service"]["lookupByKey"],
    event: EarlyEvent,
  ): Effect.Effect<EarlyKeep, EarlyEventRefused | LedgerError> =>
    Effect.gen(function* () {
      const operation = "SubmissionLedger.keepEarly"
      const bytes = utf8ByteLength(event.payload)
      // Outside the transaction: a rolled-back one would leave the memory saying it exists.
      yield* create(operation)
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const admitted = yield* lookupByKey(event.threadId, event.idempotencyKey)
            if (Option.isSome(admitted)) return { _tag: "Admitted", row: admitted.value } as const
            const params = [event.threadId, event.idempotencyKey, event.eventId]
            if ((yield* query(operation, earlyStatements.kept, params)).length > 0)
              return { _tag: "Kept", replayed: true } as const
            const [totals] = yield* query(operation, earlyStatements.totals)
            const kept = { events: numberOr(totals?.count, 0), bytes: numberOr(totals?.bytes, 0) }
            const refused = earlyRefusal(event, kept, bytes)
            if (refused !== undefined) return yield* refused
            yield* query(operation, earlyStatements.insert, [
              ...params,
              event.agentId,
              event.event,
              event.payload,
              event.now,
            ])
            return { _tag: "Kept", replayed: false } as const
          }),
        )
        .pipe(
          Effect.catchTag("SqlError", (error) => Effect.fail(storageError(operation)(error))),
        ) as Effect.Effect<EarlyKeep, EarlyEventRefused | LedgerError>
    })

  /**
   * The kept events of a Submission being admitted, removed: runs in its admission's transaction.
   * An admission that takes none (`EarlyEventAgents`) runs no statement; one that does asks the
   * schema once per storage (no billed row) and then, only once the table exists, seeks its key.
   */
  const take = (admitted: SubmissionSnapshot): Effect.Effect<ReadonlyArray<HistoryEntry>, LedgerError> =>
    Effect.gen(function* () {
      const operation = "SubmissionLedger.admit"
      if (!takesEarly(options.agents, admitted)) return []
      if (!(yield* exists(operation))) return []
      const found = yield* query(operation, earlyStatements.forKey, [
        admitted.threadId,
        admitted.idempotencyKey,
      ])
      const mine = found.filter((row) => row.agent_id === admitted.agentId)
      if (mine.length === 0) return []
      yield* query(operation, earlyStatements.take, [
        admitted.threadId,
        admitted.idempotencyKey,
        admitted.agentId,
      ])
      return yield* Effect.forEach(mine, (row) =>
        Effect.try({
          try: () =>
            receivedEntry({
              event: String(row.event),
              eventId: String(row.event_id),
              payload: JSON.parse(String(row.payload)) as Schema.Json,
            }),
          catch: (cause) =>
            new LedgerError({ operation, message: `a kept event's payload is not JSON`, cause }),
        }),
      )
    })

  /** Removes every event kept under a key, any agent's; in the caller's transaction, if any. */
  const forgetKey = (operation: string, threadId: ThreadId, idempotencyKey: IdempotencyKey) =>
    Effect.gen(function* () {
      if (!(yield* exists(operation))) return
      yield* query(operation, earlyStatements.forget, [threadId, idempotencyKey])
    })

  /** What the Object keeps, by key: reads every kept event's key (at most `MAX_EARLY_EVENTS`). */
  const view: Effect.Effect<EarlyEvents, LedgerError> = Effect.gen(function* () {
    const operation = "SubmissionLedger.earlyEvents"
    if (!(yield* exists(operation))) return noEarlyEvents
    const found = yield* query(operation, earlyStatements.byKey)
    const keys = found.map((row) => {
      const threadId = String(row.thread_id) as ThreadId
      const idempotencyKey = String(row.idempotency_key) as IdempotencyKey
      return {
        threadId,
        idempotencyKey,
        agentId: String(row.agent_id) as AgentId,
        submissionId: submissionIdFor(options.salt, threadId, idempotencyKey),
        events: numberOr(row.events, 0),
        bytes: numberOr(row.bytes, 0),
        firstKeptAt: numberOr(row.first_kept_at, 0),
      }
    })
    return earlyView(keys)
  })

  return { keep, take, forgetKey, view }
}
