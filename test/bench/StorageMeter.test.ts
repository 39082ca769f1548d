/**
 * The bench's counting storage view (bench/worker/meter.ts) in real workerd: SQL rows come from
 * consumed cursors, KV and alarm calls are counted per key and call, `total_changes()` sees the
 * hidden KV and alarm tables, and harness queries on the raw storage stay uncounted.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runInDurableObject } from "cloudflare:test"
import { Effect } from "effect"
import { meterState } from "../../bench/worker/meter.ts"

const inBenchObject = (label: string, body: (state: DurableObjectState) => Promise<void>) =>
  Effect.promise(() =>
    runInDurableObject(
      env.BENCH_TEST.getByName(`bench-meter-${label}-${crypto.randomUUID()}`),
      (_instance, state) => body(state),
    ),
  )

const none = {
  sqlStatements: 0,
  sqlRowsRead: 0,
  sqlRowsWritten: 0,
  totalChanges: 0,
  kvGets: 0,
  kvPuts: 0,
  kvDeletes: 0,
  kvLists: 0,
  alarmGets: 0,
  alarmSets: 0,
  alarmDeletes: 0,
  alarmDeliveries: 0,
}

describe("meterState", () => {
  it.effect("sums the rows of every cursor, even one consumed after later statements", () =>
    inBenchObject("sql", async (state) => {
      state.storage.sql.exec("CREATE TABLE items (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
      const meter = meterState(state)
      const sql = meter.state.storage.sql
      for (const value of ["a", "b", "c"]) sql.exec("INSERT INTO items (value) VALUES (?)", value)
      const pending = sql.exec("SELECT value FROM items ORDER BY id")
      sql.exec("UPDATE items SET value = 'x' WHERE id = 2")
      sql.exec("DELETE FROM items WHERE id = 1")
      // workerd steps a cursor to its first row at `exec`; the rest is read as it is consumed.
      expect(pending.toArray().map((row) => row["value"])).toEqual(["a", "x", "c"])
      // A harness query on the raw storage is not counted.
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM items").one()["n"]).toBe(2)

      expect(meter.snapshot()).toEqual({
        ...none,
        sqlStatements: 6,
        sqlRowsRead: 5,
        sqlRowsWritten: 5,
        totalChanges: 5,
      })
      meter.reset()
      expect(meter.snapshot()).toEqual(none)
    }),
  )

  it.effect("counts KV keys, alarm calls and deliveries, and the hidden-table changes they make", () =>
    inBenchObject("kv", async (state) => {
      const meter = meterState(state)
      const storage = meter.state.storage
      expect(storage).toBe(meter.storage)
      expect(meter.state.id.equals(state.id)).toBe(true)

      await storage.put("a", 1)
      expect(meter.snapshot()).toEqual({ ...none, kvPuts: 1, totalChanges: 1 })
      await storage.put({ b: 2, c: 3 })
      expect(await storage.get("a")).toBe(1)
      expect(await storage.get(["b", "c"])).toEqual(
        new Map([
          ["b", 2],
          ["c", 3],
        ]),
      )
      expect(await storage.delete(["b", "c"])).toBe(2)
      expect((await storage.list()).size).toBe(1)
      storage.kv.put("d", 4)
      expect(storage.kv.get("d")).toBe(4)
      expect(storage.kv.delete("d")).toBe(true)
      await storage.transaction(async (txn) => {
        await txn.put("e", 5)
        expect(await txn.get("e")).toBe(5)
        await txn.setAlarm(Date.now() + 60_000)
      })
      expect(await storage.getAlarm()).not.toBeNull()
      await storage.deleteAlarm()
      meter.delivered()

      expect(meter.snapshot()).toEqual({
        ...none,
        kvPuts: 5,
        kvGets: 5,
        kvDeletes: 3,
        kvLists: 1,
        alarmSets: 1,
        alarmGets: 1,
        alarmDeletes: 1,
        alarmDeliveries: 1,
        // One hidden-table change per key written or deleted, and per alarm set or deleted.
        totalChanges: 10,
      })
    }),
  )
})
