import { describe, expect, it } from "@effect/vitest"
import {
  decodeMaintenanceRecord,
  MAINTENANCE_STATE_KEY,
  readMaintenanceState,
  sameRecord,
  ThreadMaintenanceState,
  writeMaintenanceState,
} from "../../src/internal/maintenance/state.ts"

// The record's codec remembers decodes by JSON text and encodings by instance; a stored value
// whose JSON text matches a good record's but whose value differs must still be damaged.
const clean = {
  schemaVersion: 1,
  dirty: "7",
  processed: "6",
  nonterminal: 2,
  lastServedThreadId: "lane-a",
}

const damagedField = (raw: unknown) => {
  const decoded = decodeMaintenanceRecord(raw)
  return decoded._tag === "MaintenanceRecordDamaged" ? decoded.field : undefined
}

describe("the maintenance record's codec", () => {
  it("gives the same record for the same stored value, and the record it wrote back", () => {
    const first = decodeMaintenanceRecord({ ...clean })
    const second = decodeMaintenanceRecord({ ...clean })
    expect(first._tag).toBe("Ok")
    expect(second).toEqual(first)
    const stored = new Map<string, unknown>()
    const txn = {
      get: (key: string) => stored.get(key),
      put: (key: string, value: unknown) => stored.set(key, value),
    }
    const next = ThreadMaintenanceState.make({ schemaVersion: 1, dirty: 8n, processed: 8n, nonterminal: 0 })
    writeMaintenanceState(txn, next)
    expect(stored.get(MAINTENANCE_STATE_KEY)).toEqual({
      schemaVersion: 1,
      dirty: "8",
      processed: "8",
      nonterminal: 0,
    })
    expect(
      readMaintenanceState({ get: () => structuredClone(stored.get(MAINTENANCE_STATE_KEY)) }).state,
    ).toEqual(next)
  })

  it("still finds a value damaged when its JSON text is a good record's", () => {
    expect(decodeMaintenanceRecord({ ...clean })._tag).toBe("Ok")
    // JSON drops an undefined member, writes a String object as its string and NaN as null.
    expect(damagedField({ ...clean, retry: undefined })).toBe("retry")
    expect(damagedField({ ...clean, lastServedThreadId: new String("lane-a") })).toBe("lastServedThreadId")
    expect(damagedField({ ...clean, nonterminal: Number.NaN })).toBe("nonterminal")
    expect(damagedField({ ...clean, nextDueAt: null })).toBe("nextDueAt")
    expect(damagedField({ ...clean, nextDueAt: Number.POSITIVE_INFINITY })).toBe("nextDueAt")
    expect(decodeMaintenanceRecord({ ...clean })._tag).toBe("Ok")
  })

  it("compares records by what they encode to", () => {
    const a = ThreadMaintenanceState.make({ schemaVersion: 1, dirty: 3n, processed: 2n, nonterminal: 1 })
    const b = ThreadMaintenanceState.make({ schemaVersion: 1, dirty: 3n, processed: 2n, nonterminal: 1 })
    const c = ThreadMaintenanceState.make({ ...a, processed: 3n })
    expect(sameRecord(a, a)).toBe(true)
    expect(sameRecord(a, b)).toBe(true)
    expect(sameRecord(a, c)).toBe(false)
    expect(sameRecord(c, a)).toBe(false)
  })
})
