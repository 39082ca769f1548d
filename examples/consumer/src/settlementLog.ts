import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import {
  ThreadHostMaintenance,
  ThreadHostMaintenanceError,
  ThreadMutationGate,
} from "@effect-agent/platform-cloudflare/Alarm"
import { ThreadHistory } from "@effect-agent/platform-cloudflare/ThreadHistory"

const failed = (operation: string) => (cause: unknown) =>
  new ThreadHostMaintenanceError({
    hook: "settlement-log",
    operation,
    message: `the settlement log could not ${operation}`,
    cause,
  })

/**
 * A host maintenance hook: each settlement becomes a row of this Object's own `settlement_log`
 * table at an alarm the Object already has. It reads the canonical history after its cursor,
 * and writes through the mutation gate as receipt-only bookkeeping.
 */
export const SettlementLog = Layer.effect(
  ThreadHostMaintenance,
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const gate = yield* ThreadMutationGate
    const history = yield* ThreadHistory
    yield* sql`CREATE TABLE IF NOT EXISTS settlement_log (
      submission_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, outcome TEXT NOT NULL)`
    yield* sql`CREATE TABLE IF NOT EXISTS settlement_log_cursor (id INTEGER PRIMARY KEY, position INTEGER NOT NULL)`
    const position = Effect.map(
      sql<{ position: number }>`SELECT position FROM settlement_log_cursor WHERE id = 1`,
      (rows) => rows[0]?.position ?? 0,
    )

    const collect = Effect.gen(function* () {
      const after = yield* position
      // Settlements only; the cursor still moves past the records in between.
      const feed = yield* history.feed({ after, limit: 100, kinds: ["SubmissionSettled"] })
      if (feed.last === after) return
      // Reads need no gate; the write goes through it (its prearm is a transaction of its own).
      const write = sql.withTransaction(
        Effect.gen(function* () {
          for (const { record } of feed.entries) {
            if (record.entry._tag !== "SubmissionSettled") continue
            yield* sql`INSERT OR IGNORE INTO settlement_log
              VALUES (${record.submissionId}, ${record.threadId}, ${record.entry.outcome})`
          }
          yield* sql`INSERT OR REPLACE INTO settlement_log_cursor VALUES (1, ${feed.last})`
        }),
      )
      yield* gate.withMutation(write, { invalidatesRecovery: false })
    })
    // A failure of its own, or of the gate's prearm, is this hook's error.
    const record = collect.pipe(Effect.mapError(failed("record settlements")))

    return {
      dispatchTimeoutMillis: 1_000,
      // Once now, and once more when native work is done, so its settlements are logged too.
      drainUntil: (sourceFinished) => record.pipe(Effect.andThen(sourceFinished), Effect.andThen(record)),
      // Due at once while the history has records after the cursor; otherwise nothing is owed.
      pendingDeadline: Effect.zipWith(position, history.feedEnd, (at, end) =>
        end > at ? Option.some(0) : Option.none<number>(),
      ).pipe(Effect.mapError(failed("read its cursor"))),
    }
  }),
)
