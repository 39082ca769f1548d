/**
 * The reads behind the operator entry points: the maintenance record (or its damage) and the
 * alarm, every history record, every ledger row and the ledger's counts. Reads only: none of
 * them writes the record, the alarm or the ledger, and none runs inside a storage transaction.
 */
import { Effect, Stream } from "effect"
import { SubmissionLedger } from "../../core/SubmissionLedger.ts"
import { type HistoryRecord, ThreadHistory } from "../../core/ThreadHistory.ts"
import type { ThreadId } from "../../core/Identifiers.ts"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import { META_KEYS, META_TABLE } from "../../core/internal/schema.ts"
import { decodeMaintenanceRecord, MAINTENANCE_STATE_KEY } from "../maintenance/state.ts"
import { storageOperation } from "../maintenance/storage.ts"
import { SUSPECT_HEAD_KEY } from "../maintenance/suspect.ts"
import type { MaintenanceView } from "../operator/explain.ts"

/** @internal The stored maintenance record (or its damage) and the alarm. */
export const readMaintenanceView = Effect.gen(function* () {
  const { ctx } = yield* DurableObjectContext
  const raw = yield* storageOperation("read maintenance record", () => ctx.storage.get(MAINTENANCE_STATE_KEY))
  const alarm = yield* storageOperation("get alarm", () => ctx.storage.getAlarm())
  const suspect = ctx.storage.kv.get(SUSPECT_HEAD_KEY)
  const decoded = raw === undefined ? undefined : decodeMaintenanceRecord(raw)
  return {
    state: decoded?._tag === "Ok" ? decoded.state : undefined,
    damage: decoded?._tag === "MaintenanceRecordDamaged" ? decoded : undefined,
    alarm,
    ...(suspect === undefined ? {} : { suspect }),
  } satisfies MaintenanceView
})

/**
 * @internal Whether retention or `forget` ever removed a Submission here: the Thread sequences
 * and lane positions it had are gone then, so gaps in them are expected.
 */
export const readHistoryRemoved = Effect.gen(function* () {
  const { ctx } = yield* DurableObjectContext
  return yield* storageOperation("read the removal marker", async () => {
    const found = ctx.storage.sql
      .exec(`SELECT 1 FROM ${META_TABLE} WHERE key = ?`, META_KEYS.historyRemoved)
      .toArray()
    return found.length > 0
  })
})

const FEED_PAGE = 500

/** @internal Every history record of the Object, in commit order. */
export const readAllHistory = Effect.gen(function* () {
  const history = yield* ThreadHistory
  const records: Array<HistoryRecord> = []
  let after = 0
  while (true) {
    const page = yield* history.feed({ after, limit: FEED_PAGE })
    for (const entry of page.entries) records.push(entry.record)
    if (page.entries.length < FEED_PAGE) return records
    after = page.last
  }
})

/** @internal Every ledger row and the ledger's nonterminal counts (the Object's and each lane's). */
export const readLedger = Effect.gen(function* () {
  const ledger = yield* SubmissionLedger
  // Lane order: lanes by Thread id, each by queue sequence.
  const rows = Array.from(yield* Stream.runCollect(ledger.scanAll)).sort((a, b) =>
    a.threadId === b.threadId ? a.queueSequence - b.queueSequence : a.threadId < b.threadId ? -1 : 1,
  )
  const all = yield* ledger.countAllNonterminal
  const lanes = new Map<ThreadId, number>()
  for (const threadId of yield* ledger.threadIds)
    lanes.set(threadId, yield* ledger.countNonterminal(threadId))
  return { rows, counted: { all, lanes } }
})
