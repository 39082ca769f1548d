/**
 * The repair of a damaged maintenance record. Nothing runs on a record that does not decode;
 * an operator's `repairMaintenance` replaces it, under the mutation gate, with one rebuilt from
 * the ledger: a generation above every one readable in the damaged value (so no observer can
 * mistake it for one it already saw), owed (`dirty > processed`) so that a pass runs
 * (recovery, then the lanes in turn), the nonterminal count recomputed, no retry and
 * no binding waits (the next pass finds them again), and an alarm armed. The damaged value is
 * kept under its own key for inspection. The ledger and the history are untouched: nothing
 * accepted is lost, and settlement stays fenced there, so nothing settles twice. The rebuild
 * is one storage transaction: a crash before it leaves the damage for another repair, and a
 * crash after it leaves a repaired, armed record.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, Effect, Schema } from "effect"
import { ThreadId } from "../../core/Identifiers.ts"
import type { LedgerError, SubmissionLedger } from "../../core/SubmissionLedger.ts"
import { decideAlarm } from "./alarmPolicy.ts"
import { writeAlarm } from "./alarmWrite.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import type { DurableAlarmError, MaintenanceRecordDamaged } from "./errors.ts"
import {
  decodeMaintenanceRecord,
  MAINTENANCE_STATE_KEY,
  ThreadMaintenanceState,
  writeMaintenanceState,
} from "./state.ts"

/** @internal Where a repair keeps the damaged value it replaced. */
export const DAMAGED_MAINTENANCE_KEY = "effect-agent:thread-maintenance:damaged:v1"

/** What `repairMaintenance` did. */
export class MaintenanceRepair extends Schema.Class<MaintenanceRepair>(
  "@effect-agent/platform-cloudflare/MaintenanceRepair",
)({
  /** False when the record was healthy (or absent): nothing was written. */
  repaired: Schema.Boolean,
  /** The damage found, when there was some. */
  damage: Schema.optionalKey(Schema.Struct({ field: Schema.String, message: Schema.String })),
  /** The record as it is after the call. */
  record: Schema.optionalKey(ThreadMaintenanceState),
}) {}

const decimal = /^\d{1,40}$/

/** Every generation-like value readable anywhere in a damaged value. */
const generationsIn = (value: unknown, depth = 0): ReadonlyArray<bigint> => {
  if (depth > 8) return []
  if (typeof value === "bigint") return value >= 0n ? [value] : []
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0 ? [BigInt(value)] : []
  if (typeof value === "string") return decimal.test(value) ? [BigInt(value)] : []
  if (typeof value !== "object" || value === null) return []
  return Object.values(value).flatMap((inner) => generationsIn(inner, depth + 1))
}

/** @internal The dirty generation of a rebuilt record: above everything readable, at least 1. */
export const repairedGeneration = (raw: unknown): bigint =>
  generationsIn(raw).reduce((max, value) => (value > max ? value : max), 0n) + 1n

const cursorOf = (raw: unknown): ThreadId | undefined => {
  const value =
    typeof raw === "object" && raw !== null
      ? (raw as Record<string, unknown>)["lastServedThreadId"]
      : undefined
  return Schema.is(ThreadId)(value) ? value : undefined
}

/** @internal */
export const makeRepair = (
  env: MaintenanceEnv,
  ledger: SubmissionLedger["Service"],
): Effect.Effect<MaintenanceRepair, DurableAlarmError | LedgerError> =>
  Effect.gen(function* () {
    yield* env.hit("maintenance:repair:before")
    // Counted before the transaction: no mutation can run while the record is damaged, and a
    // pass refuses too, so the count cannot move under the repair.
    const nonterminal = yield* ledger.countAllNonterminal
    const now = yield* Clock.currentTimeMillis
    const result = yield* env.gate.withSnapshot(() =>
      env.transact("repair maintenance record", (txn): MaintenanceRepair => {
        const raw = txn.get(MAINTENANCE_STATE_KEY)
        if (raw === undefined) return MaintenanceRepair.make({ repaired: false })
        const decoded = decodeMaintenanceRecord(raw)
        if (decoded._tag === "Ok") return MaintenanceRepair.make({ repaired: false, record: decoded.state })
        const damage: MaintenanceRecordDamaged = decoded
        const dirty = repairedGeneration(raw)
        const cursor = cursorOf(raw)
        const record = ThreadMaintenanceState.make({
          schemaVersion: 1,
          dirty,
          processed: dirty - 1n,
          nonterminal,
          ...(cursor === undefined ? {} : { lastServedThreadId: cursor }),
        })
        txn.put(DAMAGED_MAINTENANCE_KEY, { value: raw, field: damage.field, repairedAt: now })
        writeMaintenanceState(txn, record)
        // The rebuilt generation is owed like a mutation's: its alarm is the mutation prearm.
        writeAlarm(txn, decideAlarm(env.timing, { commit: "mutation", now }))
        return MaintenanceRepair.make({
          repaired: true,
          damage: { field: damage.field, message: damage.message },
          record,
        })
      }),
    )
    yield* env.hit("maintenance:repair:after")
    if (result.repaired) {
      yield* Effect.logWarning("Maintenance record rebuilt from the ledger", {
        field: result.damage?.field,
        nonterminal,
      })
    }
    return result
  }).pipe(withSpanFast("ThreadMaintenance.repair"))
