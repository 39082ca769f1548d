/**
 * A durable settlement outbox: an application `ThreadHostMaintenance` hook that relays every
 * settled refund (not the other agents' Submissions) to the relay inbox, sharing the Thread
 * Object's alarm.
 *
 * - Envelopes are persisted (read from the canonical history feed after a stored cursor)
 *   before anything is dispatched, in one SQL transaction with the cursor.
 * - A wave's envelopes go in one call, and their receipts (after it succeeds) or their retry
 *   times (after it fails) in one commit; retries fall to later alarms through
 *   `pendingDeadline`, never to a sleep here.
 * - Every write is receipt-only bookkeeping, so it goes through the mutation gate with
 *   `invalidatesRecovery: false`: it must not create native recovery debt.
 * - One wave per maintenance event, and only if it fits before `dispatchUntil`. When native
 *   work finishes, settlements it produced are collected (local bookkeeping, no dispatch), so
 *   their envelopes are due at the next alarm.
 */
import { Clock, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import {
  ThreadHostMaintenance,
  ThreadHostMaintenanceError,
  ThreadMutationGate,
} from "@effect-agent/platform-cloudflare/Alarm"
import { DurableObjectContext } from "@effect-agent/platform-cloudflare/CloudflareBindings"
import { SubmissionLedger } from "@effect-agent/platform-cloudflare/SubmissionLedger"
import { type HistoryRecord, ThreadHistory } from "@effect-agent/platform-cloudflare/ThreadHistory"
import { Envelope, type RelayInboxRpc } from "./relayInbox.ts"
import { refundAgent } from "./refundAgent.ts"

/** Envelopes dispatched per wave, all in one call. */
const waveSize = 5
/** How long a wave's call may take. */
const callMillis = 2_000
/**
 * The wave's allowance: its call, and around it the feed's collection, the due read and the
 * receipts' commit, so that a call cut off at its own timeout still has time to record its retry.
 */
const dispatchMillis = 3_000
const feedBatch = 100
/** Feed positions the cursor may move in memory alone before it is stored anyway. */
const storeEvery = 1_000

const migrations = [
  `CREATE TABLE IF NOT EXISTS refund_outbox (
    envelope_id TEXT PRIMARY KEY NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    delivered_at REAL
  )`,
  `CREATE INDEX IF NOT EXISTS refund_outbox_due ON refund_outbox (next_attempt_at) WHERE delivered_at IS NULL`,
  `CREATE TABLE IF NOT EXISTS refund_outbox_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), position INTEGER NOT NULL)`,
  `INSERT OR IGNORE INTO refund_outbox_cursor (id, position) VALUES (1, 0)`,
]

const retryDelay = (attempts: number) => Math.min(60_000, 1_000 * 2 ** attempts)

const encodeEnvelope = Schema.encodeSync(Schema.fromJsonString(Envelope))

const outboxError = (operation: string) => (cause: unknown) =>
  new ThreadHostMaintenanceError({
    hook: "refund-outbox",
    operation,
    message: `the refund outbox could not ${operation}`,
    cause,
  })

/** The outbox hook, built once per incarnation over the Object's own storage. */
export const RefundOutbox = Layer.effect(
  ThreadHostMaintenance,
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const gate = yield* ThreadMutationGate
    const history = yield* ThreadHistory
    const ledger = yield* SubmissionLedger
    const { env } = yield* DurableObjectContext
    yield* Effect.forEach(migrations, (statement) => sql.unsafe(statement), { discard: true })
    const inbox = () => env.RELAY.getByName("relay") as unknown as RelayInboxRpc

    // Receipt-only bookkeeping, one statement per envelope of a wave, in one transaction; a
    // failure of the write or of the gate's prearm is this hook's.
    const receipts = (operation: string, statement: string, params: ReadonlyArray<ReadonlyArray<unknown>>) =>
      gate
        .withMutation(
          sql.withTransaction(
            Effect.forEach(params, (each) => sql.unsafe(statement, each), { discard: true }),
          ),
          { invalidatesRecovery: false },
        )
        .pipe(Effect.mapError(outboxError(operation)))

    // The cursor as last read, written or passed. Only this hook writes it, and a position is
    // remembered only once the transaction that stored it committed (or once nothing needed
    // storing), so a pass (which reads it three times) reads it from storage once per
    // incarnation, and a write that failed is read again.
    let knownCursor: number | undefined
    /** The position last read from or written to storage. */
    let storedCursor = 0
    const cursor = Effect.suspend(() =>
      knownCursor !== undefined
        ? Effect.succeed(knownCursor)
        : Effect.map(
            sql<{ position: number }>`SELECT position FROM refund_outbox_cursor WHERE id = 1`,
            ([row]) => (knownCursor = storedCursor = row?.position ?? 0),
          ),
    )

    /**
     * Persists the envelopes of `refunds` with the cursor at `last`, atomically. Through the
     * mutation gate, as every write here is; the gate's prearm is a transaction of its own, so
     * `collected` enters it only when there is something to write.
     */
    const store = (refunds: ReadonlyArray<HistoryRecord>, last: number) =>
      gate.withMutation(
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          // Until the write below has committed, the stored cursor is the truth.
          knownCursor = undefined
          yield* sql.withTransaction(
            Effect.gen(function* () {
              for (const record of refunds) {
                if (record.entry._tag !== "SubmissionSettled") continue
                const envelope = Envelope.make({
                  envelopeId: `settled:${record.submissionId}`,
                  threadId: record.threadId,
                  submissionId: record.submissionId,
                  outcome: record.entry.outcome,
                  settledAt: record.recordedAt,
                  ...(record.entry.output === undefined ? {} : { output: record.entry.output }),
                })
                yield* sql`INSERT OR IGNORE INTO refund_outbox (envelope_id, payload, next_attempt_at)
                  VALUES (${envelope.envelopeId}, ${encodeEnvelope(envelope)}, ${now})`
              }
              yield* sql`UPDATE refund_outbox_cursor SET position = ${last} WHERE id = 1`
            }),
          )
          knownCursor = storedCursor = last
        }),
        { invalidatesRecovery: false },
      )

    // Envelopes for new settlements, persisted before any dispatch. Reading needs no gate: only
    // this hook writes the cursor, and the feed only grows.
    const collected = Effect.gen(function* () {
      const after = yield* cursor
      // Settlements only: the steps and inputs in between are passed over without being decoded.
      const feed = yield* history.feed({ after, limit: feedBatch, kinds: ["SubmissionSettled"] })
      if (feed.last === after) return
      // Only refunds are relayed: the fraud checks and reconciliations settled in these
      // Objects too are not the relay's business.
      const refunds = yield* Effect.filter(
        feed.entries.map(({ record }) => record),
        (record) =>
          record.entry._tag !== "SubmissionSettled"
            ? Effect.succeed(false)
            : Effect.map(ledger.lookup(record.submissionId), (row) =>
                Option.exists(row, (found) => found.agentId === refundAgent.id),
              ),
      )
      if (refunds.length === 0 && feed.last - storedCursor < storeEvery) {
        // Nothing to persist: move on in memory only. After a restart the stored cursor is
        // behind (by less than `storeEvery`), and those records are passed over again.
        knownCursor = feed.last
        return
      }
      yield* store(refunds, feed.last)
    }).pipe(Effect.mapError(outboxError("collect settlements")))

    type Due = { envelope_id: string; payload: string; attempts: number }

    // One call for the whole wave, and one commit for its receipts (or its retries).
    // RPC arguments are structured-cloned: send the encoded envelopes, not class instances.
    const dispatch = (rows: ReadonlyArray<Due>) =>
      Effect.tryPromise(() =>
        inbox().deliver(rows.map((row) => JSON.parse(row.payload) as typeof Envelope.Encoded)),
      ).pipe(
        Effect.timeout(callMillis),
        Effect.matchEffect({
          onSuccess: () =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              receipts(
                "record a delivery",
                "UPDATE refund_outbox SET delivered_at = ? WHERE envelope_id = ?",
                rows.map((row) => [now, row.envelope_id]),
              ),
            ),
          onFailure: (cause) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.andThen(
                Effect.logWarning(
                  "Refund relay failed; retrying at a later alarm",
                  { envelopes: rows.map((row) => row.envelope_id) },
                  cause,
                ),
                receipts(
                  "schedule a retry",
                  "UPDATE refund_outbox SET attempts = attempts + 1, next_attempt_at = ? WHERE envelope_id = ?",
                  rows.map((row) => [now + retryDelay(row.attempts), row.envelope_id]),
                ),
              ),
            ),
        }),
      )

    const wave = (dispatchUntil: DateTime.Utc) =>
      Effect.gen(function* () {
        yield* collected
        const now = yield* Clock.currentTimeMillis
        // Admit the wave only if its allowance fits before the horizon.
        if (now + dispatchMillis > DateTime.toEpochMillis(dispatchUntil)) return
        // The limit is written into the text: a bound LIMIT has SQLite prepare the statement anew
        // at every run.
        const due = yield* sql<Due>`
          SELECT envelope_id, payload, attempts FROM refund_outbox
          WHERE delivered_at IS NULL AND next_attempt_at <= ${now}
          ORDER BY next_attempt_at LIMIT ${sql.literal(String(waveSize))}`.pipe(
          Effect.mapError(outboxError("read due envelopes")),
        )
        if (due.length > 0) yield* dispatch(due)
      })

    const pendingDeadline = Effect.gen(function* () {
      const [due] = yield* sql<{ at: number | null }>`
        SELECT min(next_attempt_at) AS at FROM refund_outbox WHERE delivered_at IS NULL`
      const position = yield* cursor
      const end = yield* history.feedEnd
      // Settlements not yet collected are due now.
      const uncollected = end > position ? Option.some(0) : Option.none<number>()
      const retry = due?.at === null || due?.at === undefined ? Option.none<number>() : Option.some(due.at)
      return Option.isSome(uncollected) ? uncollected : retry
    }).pipe(Effect.mapError(outboxError("read its deadline")))

    return {
      dispatchTimeoutMillis: dispatchMillis,
      drainUntil: (sourceFinished, dispatchUntil) =>
        wave(dispatchUntil).pipe(Effect.andThen(sourceFinished), Effect.andThen(collected)),
      pendingDeadline,
    }
  }),
)
