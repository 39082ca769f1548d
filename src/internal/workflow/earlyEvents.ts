/**
 * Deferred completions that arrive before their execution starts, kept in the Object that will
 * host it (as Effect's in-memory engine keeps them by execution id and deferred name) until the
 * execution's Submission is admitted, which records them with its acceptance.
 *
 * `keep` decides in one synchronous storage transaction: the Submission admitted under the key
 * is there (the caller sends the event to it as any event), or the event is kept, once per event
 * id (a second completion of the same deferred changes nothing). `take` runs in the admission's
 * transaction (`AdmissionArrivals`), removes what was kept for the Submission's key and agent,
 * and answers the `EventReceived` records an ordinary event would have written. Neither can
 * interleave with the other, so a completion racing the execution's start is recorded exactly
 * once: by its send, or by the admission.
 *
 * Bounded by count and bytes per Object, not by age: an Object is named by one execution id, so
 * what it keeps is that execution's completions, few by nature, and one kept for an execution
 * that starts late is still wanted then (the in-memory engine keeps it for good too). Expiring
 * them would need an alarm per Object that never starts (billed) and could drop a completion a
 * late start needs; the limits bound what an Object that never starts holds.
 *
 * The table is created when the first event is kept, not by a migration: an Object that never
 * keeps one pays nothing for it, and an admission learns once per storage whether it exists.
 */
import { Clock, Effect, Layer, Option, type Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { rowsRunner, type StorageClock, storageClock } from "../../core/internal/directRows.ts"
import type { HistoryEntry } from "../../core/internal/history/model.ts"
import { AdmissionArrivals } from "../../core/internal/ledger/arrivals.ts"
import { LedgerError, type SubmissionSnapshot } from "../../core/internal/ledger/model.ts"
import { utf8ByteLength } from "../../core/internal/ledger/rules.ts"
import type { SubmissionLedger } from "../../core/SubmissionLedger.ts"
import { WORKFLOW_AGENT_PREFIX } from "./codec.ts"
import { type EarlyEventInput, EarlyEventRefused } from "./earlyEventCall.ts"

/** @internal */
export const EARLY_EVENTS_TABLE = "effect_agent_early_events"

/** Events an Object keeps for Submissions not yet admitted, at most. @internal */
export const MAX_EARLY_EVENTS = 64

/** Bytes of payloads an Object keeps for Submissions not yet admitted, at most. @internal */
export const MAX_EARLY_BYTES = 1_048_576

const t = EARLY_EVENTS_TABLE

const statements = {
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
  // No billed row, where a `sqlite_master` lookup scans the whole schema (21 rows on an Object).
  exists: `PRAGMA table_info(${t})`,
  kept: `SELECT event FROM ${t} WHERE thread_id = ? AND idempotency_key = ? AND event_id = ?`,
  totals: `SELECT count(*) AS count, coalesce(sum(length(CAST(payload AS BLOB))), 0) AS bytes FROM ${t}`,
  insert: `INSERT INTO ${t} (thread_id, idempotency_key, event_id, agent_id, event, payload, kept_at)
    VALUES (?, ?, ?, ?, ?, ?, ?)`,
  forKey: `SELECT event, event_id, agent_id, payload FROM ${t} WHERE thread_id = ? AND idempotency_key = ?
    ORDER BY kept_at, event_id`,
  take: `DELETE FROM ${t} WHERE thread_id = ? AND idempotency_key = ? AND agent_id = ?`,
} as const

/**
 * Whether the table exists, per storage (two incarnations over one storage in a test share it):
 * learned once, and set when `keep` creates it. Tables are never dropped.
 */
const tableKnown = new WeakMap<StorageClock, boolean>()

/** What `keep` decided. @internal */
export type KeepOutcome =
  | { readonly _tag: "Admitted"; readonly row: SubmissionSnapshot }
  | { readonly _tag: "Kept"; readonly replayed: boolean }

const storageFailed = (operation: string) => (cause: SqlError) =>
  new LedgerError({ operation, message: `storage failed: ${cause.message}`, cause })

/** The store over one storage's `SqlClient`. @internal */
export const makeEarlyEvents = (sql: SqlClient) => {
  const rows = rowsRunner(sql)
  const clock = storageClock(sql)
  const query = (operation: string, text: string, params: ReadonlyArray<unknown> = []) =>
    rows(text, params).pipe(Effect.mapError(storageFailed(operation)))

  /** Whether the table exists: remembered per storage, else asked of the schema (no billed row). */
  const exists = (operation: string) =>
    Effect.suspend(() => {
      const known = clock === undefined ? undefined : tableKnown.get(clock)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.map(query(operation, statements.exists), (found) => {
        if (clock !== undefined) tableKnown.set(clock, found.length > 0)
        return found.length > 0
      })
    })

  const create = (operation: string) =>
    Effect.gen(function* () {
      if (yield* exists(operation)) return
      yield* query(operation, statements.create)
      if (clock !== undefined) tableKnown.set(clock, true)
    })

  /**
   * Sends nothing: answers the Submission admitted under the key, or keeps the event for it,
   * in one transaction. A payload, count or bytes over its limit is refused by name.
   */
  const keep = (
    ledger: SubmissionLedger["Service"],
    request: EarlyEventInput,
    maxStoredValueBytes: number,
  ): Effect.Effect<KeepOutcome, EarlyEventRefused | LedgerError> =>
    Effect.gen(function* () {
      const operation = "EarlyEvents.keep"
      const payload = JSON.stringify(request.payload)
      const bytes = utf8ByteLength(payload)
      const refuse = (reason: EarlyEventRefused["reason"], message: string) =>
        new EarlyEventRefused({
          threadId: request.threadId,
          idempotencyKey: request.idempotencyKey,
          event: request.event,
          reason,
          message,
        })
      if (bytes > maxStoredValueBytes)
        return yield* refuse(
          "payload-bytes",
          `the payload is ${bytes} bytes; the limit is ${maxStoredValueBytes}`,
        )
      // Outside the transaction: a rolled-back one would leave the memory saying it exists.
      yield* create(operation)
      const now = yield* Clock.currentTimeMillis
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const admitted = yield* ledger.lookupByKey(request.threadId, request.idempotencyKey)
            if (Option.isSome(admitted)) return { _tag: "Admitted", row: admitted.value } as const
            const params = [request.threadId, request.idempotencyKey, request.eventId]
            if ((yield* query(operation, statements.kept, params)).length > 0)
              return { _tag: "Kept", replayed: true } as const
            const [totals] = yield* query(operation, statements.totals)
            const count = Number(totals?.count ?? 0)
            const stored = Number(totals?.bytes ?? 0)
            if (count >= MAX_EARLY_EVENTS)
              return yield* refuse(
                "early-count",
                `this Object already keeps ${count} events for executions not yet started; the limit (MAX_EARLY_EVENTS) is ${MAX_EARLY_EVENTS}`,
              )
            if (stored + bytes > MAX_EARLY_BYTES)
              return yield* refuse(
                "early-bytes",
                `this Object keeps ${stored} bytes of events for executions not yet started; ${bytes} more would pass the limit (MAX_EARLY_BYTES) of ${MAX_EARLY_BYTES}`,
              )
            yield* query(operation, statements.insert, [
              ...params,
              request.agentId,
              request.event,
              payload,
              now,
            ])
            return { _tag: "Kept", replayed: false } as const
          }),
        )
        .pipe(
          Effect.catchTag("SqlError", (error) => Effect.fail(storageFailed(operation)(error))),
        ) as Effect.Effect<KeepOutcome, EarlyEventRefused | LedgerError>
    })

  /**
   * The kept events of a workflow's Submission being admitted, removed: runs in its admission's
   * transaction. Any other agent's admission runs no statement; a workflow's asks the schema
   * once per storage (no billed row) and then, only once the table exists, seeks its key (at
   * most one row read when nothing is kept for it).
   */
  const take = (admitted: SubmissionSnapshot): Effect.Effect<ReadonlyArray<HistoryEntry>, LedgerError> =>
    Effect.gen(function* () {
      const operation = "EarlyEvents.take"
      // A join reads no events; it runs as its host's input.
      if (!admitted.agentId.startsWith(WORKFLOW_AGENT_PREFIX) || admitted.state === "joining") return []
      if (!(yield* exists(operation))) return []
      const found = yield* query(operation, statements.forKey, [admitted.threadId, admitted.idempotencyKey])
      const mine = found.filter((row) => row.agent_id === admitted.agentId)
      if (mine.length === 0) return []
      yield* query(operation, statements.take, [admitted.threadId, admitted.idempotencyKey, admitted.agentId])
      return yield* Effect.forEach(mine, (row) =>
        Effect.try({
          try: (): HistoryEntry => ({
            _tag: "EventReceived",
            event: String(row.event),
            eventId: String(row.event_id),
            payload: JSON.parse(String(row.payload)) as Schema.Json,
          }),
          catch: (cause) =>
            new LedgerError({ operation, message: `a kept event's payload is not JSON`, cause }),
        }),
      )
    })

  return { keep, take }
}

/** The admission's arrivals over the Object's storage: its kept events. @internal */
export const earlyArrivalsLayer: Layer.Layer<never, never, SqlClient> = Layer.effect(
  AdmissionArrivals,
  Effect.gen(function* () {
    return { take: makeEarlyEvents(yield* SqlClient).take }
  }),
)
