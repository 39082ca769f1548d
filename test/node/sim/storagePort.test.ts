/** The simulated storage port behaves like workerd where maintenance depends on it. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type AlarmRun, type Holder, SimStorage, type StorageEvent } from "./storagePort.ts"

const makePort = () => {
  const events: Array<StorageEvent> = []
  const cancelled: Array<AlarmRun> = []
  let now = 1_000
  const storage = new SimStorage({
    now: () => now,
    onEvent: (event) => events.push(event),
    onCancel: (run) => cancelled.push(run),
    onActivity: () => {},
  })
  let alive = true
  const holder: Holder = { id: 1, alive: () => alive, storesAlive: () => alive, abort: () => (alive = false) }
  const ctx = storage.facade(holder)
  return {
    storage,
    ctx,
    events,
    cancelled,
    kill: () => (alive = false),
    tick: (millis: number) => (now += millis),
  }
}

const run = (storage: SimStorage, scheduledTime: number): AlarmRun => {
  const started: AlarmRun = {
    id: 1,
    incarnation: 1,
    scheduledTime,
    startedAt: scheduledTime,
    retries: 0,
    setSinceStart: false,
  }
  storage.run = started
  return started
}

describe("simulated Durable Object storage", () => {
  it.effect("copies values in and out like structured clone", () =>
    Effect.promise(async () => {
      const { ctx } = makePort()
      const value = { nested: { count: 1 } }
      await ctx.storage.put("key", value)
      value.nested.count = 2
      const read = (await ctx.storage.get("key")) as typeof value
      expect(read.nested.count).toBe(1)
      read.nested.count = 3
      expect(((await ctx.storage.get("key")) as typeof value).nested.count).toBe(1)
    }),
  )

  it.effect("commits a transaction's KV and alarm writes together, or none of them on a throw", () =>
    Effect.promise(async () => {
      const { ctx, storage } = makePort()
      await expect(
        ctx.storage.transaction(async (txn) => {
          await txn.put("a", 1)
          await txn.setAlarm(5_000)
          expect(await txn.get("a")).toBe(1)
          throw new Error("abandon")
        }),
      ).rejects.toThrow("abandon")
      expect(storage.kv.has("a")).toBe(false)
      expect(storage.alarm).toBeNull()
      await ctx.storage.transaction(async (txn) => {
        await txn.put("a", 1)
        await txn.setAlarm(5_000)
      })
      expect(storage.kv.get("a")).toBe(1)
      expect(storage.alarm).toBe(5_000)
      await ctx.storage.transaction(async (txn) => {
        await txn.put("a", 2)
        txn.rollback()
      })
      expect(storage.kv.get("a")).toBe(1)
    }),
  )

  it.effect("answers getAlarm with null during a handler until the alarm is written again", () =>
    Effect.promise(async () => {
      const { ctx, storage } = makePort()
      await ctx.storage.setAlarm(2_000)
      run(storage, 2_000)
      expect(await ctx.storage.getAlarm()).toBeNull()
      expect(await ctx.storage.transaction((txn) => txn.getAlarm())).toBeNull()
      await ctx.storage.setAlarm(3_000)
      expect(await ctx.storage.getAlarm()).toBe(3_000)
    }),
  )

  it.effect("cancels the running handler when an earlier alarm is committed, not a later one", () =>
    Effect.promise(async () => {
      const { ctx, storage, cancelled } = makePort()
      const running = run(storage, 2_000)
      await ctx.storage.setAlarm(4_000)
      await ctx.storage.transaction((txn) => txn.setAlarm(5_000))
      expect(cancelled).toEqual([])
      await ctx.storage.transaction((txn) => txn.setAlarm(3_000))
      expect(cancelled).toEqual([running])
    }),
  )

  it.effect("refuses every operation of a dead incarnation and never commits its open transaction", () =>
    Effect.promise(async () => {
      const { ctx, storage, kill } = makePort()
      // The reset lands after the transaction's last operation, before its commit.
      const open = ctx.storage.transaction(async (txn) => {
        await txn.put("a", 1)
        await txn.setAlarm(9_000)
        kill()
      })
      await expect(open).rejects.toThrow("reset")
      await expect(ctx.storage.get("a")).rejects.toThrow("reset")
      expect(storage.kv.has("a")).toBe(false)
      expect(storage.alarm).toBeNull()
    }),
  )
})
