/**
 * An in-memory Durable Object storage and alarm port that behaves like workerd where the
 * maintenance subsystem depends on it: KV values are structured-clone copies; a transaction
 * commits its KV and alarm writes atomically or not at all (a throw or `rollback()` discards
 * them); operations are serialized; there is one alarm slot.
 *
 * While an alarm handler runs, `getAlarm()` answers `null` unless the alarm was written since
 * the handler started (workerd does so; the Cloudflare docs say it too), and a committed alarm
 * earlier than the current one cancels the running handler (`onCancel`).
 *
 * Each incarnation sees the port through its own `DurableObjectState` facade. Once the
 * incarnation is dead, every operation rejects and an open transaction never commits, as after
 * `ctx.abort()`.
 */
import { Context, Fiber } from "effect"

/** Who issued a storage operation: read from the calling fiber's context. */
export type Origin =
  | { readonly kind: "alarm"; readonly run: number }
  | { readonly kind: "rpc"; readonly name: string }
  | { readonly kind: "constructor" }

/** The origin of the current fiber and its children. */
export const SimOrigin = Context.Reference<Origin | undefined>(
  "@effect-agent/platform-cloudflare/test/sim/Origin",
  {
    defaultValue: () => undefined,
  },
)

/** The origin of the fiber that is running right now (storage calls start synchronously). */
export const currentOrigin = (): Origin | undefined => Fiber.getCurrent()?.getRef(SimOrigin)

/** One delivery of the alarm, from the handler's start until it ends. */
export interface AlarmRun {
  readonly id: number
  readonly incarnation: number
  /** The alarm time being delivered. */
  readonly scheduledTime: number
  readonly startedAt: number
  /** Platform retries already spent on this alarm before this delivery. */
  readonly retries: number
  /** Whether the alarm was written (set or deleted) since the handler started. */
  setSinceStart: boolean
}

/** A finished storage operation that could write: a transaction or a single write. */
export interface StorageEvent {
  readonly origin: Origin | undefined
  readonly incarnation: number
  readonly at: number
  readonly committed: boolean
  /** The committed value of each key the operation read first (before its own writes). */
  readonly reads: ReadonlyMap<string, unknown>
  /** The committed value of each written key before the commit. */
  readonly before: ReadonlyMap<string, unknown>
  /** The value of each written key after the commit (`undefined`: deleted). */
  readonly writes: ReadonlyMap<string, unknown>
  readonly alarm?: { readonly before: number | null; readonly after: number | null }
}

/** What the world is told by the port. */
export interface PortObserver {
  readonly now: () => number
  readonly onEvent: (event: StorageEvent) => void
  /** An alarm earlier than the current one was committed while `run` was running. */
  readonly onCancel: (run: AlarmRun, origin: Origin | undefined, at: number) => void
  /** A storage operation was issued; used to detect quiescence. */
  readonly onActivity: () => void
}

/** The incarnation a facade belongs to. */
export interface Holder {
  readonly id: number
  readonly alive: () => boolean
  /**
   * Whether the ledger and the history still take this incarnation's calls. After a reset
   * they refuse at once, as the platform's storage does, except for a zombie: a fault beyond
   * the platform, in which a replaced incarnation's in-flight Attempt keeps writing to them
   * for a while, so that only the epoch fence stands between it and the new incarnation.
   */
  readonly storesAlive: () => boolean
  /** `ctx.abort()`: the incarnation dies now. */
  readonly abort: (reason: string) => void
}

const evicted = () => new Error("Durable Object storage is gone: its incarnation was reset")

/** Not a tree of plain objects, arrays and primitives: left to `structuredClone`. */
const notPlain = Symbol("notPlain")

/** Copies a tree of plain objects, arrays and primitives; `notPlain` for anything else. */
const copyTree = (value: unknown, seen: Set<object>): unknown => {
  if (typeof value !== "object" || value === null) {
    return typeof value === "function" || typeof value === "symbol" ? notPlain : value
  }
  // A shared or cyclic reference: structured clone preserves it, a tree copy would not.
  if (seen.has(value)) return notPlain
  seen.add(value)
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return notPlain
    const out: Array<unknown> = []
    for (let index = 0; index < value.length; index++) {
      // A sparse array keeps its holes under structured clone.
      if (!(index in value)) return notPlain
      const item = copyTree(value[index], seen)
      if (item === notPlain) return notPlain
      out.push(item)
    }
    return out
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return notPlain
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const item = copyTree((value as Record<string, unknown>)[key], seen)
    if (item === notPlain) return notPlain
    out[key] = item
  }
  return out
}

/**
 * A structured-clone copy. The stored values are JSON-like trees, which a direct copy
 * reproduces exactly and several times faster than `structuredClone`.
 */
const clone = <A>(value: A): A => {
  if (typeof value !== "object" || value === null) return value === undefined ? value : structuredClone(value)
  const copy = copyTree(value, new Set())
  return copy === notPlain ? structuredClone(value) : (copy as A)
}

const toMillis = (time: number | Date): number => (typeof time === "number" ? time : time.getTime())

/** The durable storage of one Object: it outlives every incarnation. */
export class SimStorage {
  readonly kv = new Map<string, unknown>()
  /** The alarm slot as the alarm manager holds it (a running alarm stays here until it ends). */
  alarm: number | null = null
  /** Platform retries already spent on the stored alarm. */
  alarmRetries = 0
  /** When the stored alarm is a platform retry, its time. */
  platformRetryAt: number | undefined
  run: AlarmRun | undefined
  #queue: Promise<void> = Promise.resolve()
  readonly observer: PortObserver

  constructor(observer: PortObserver) {
    this.observer = observer
  }

  /** What `getAlarm()` answers now. */
  visibleAlarm(): number | null {
    return this.run !== undefined && !this.run.setSinceStart ? null : this.alarm
  }

  /** Runs `f` after every earlier operation finished: operations never interleave. */
  exclusive<A>(f: () => Promise<A>): Promise<A> {
    const result = this.#queue.then(f)
    this.#queue = result.then(
      () => undefined,
      () => undefined,
    )
    return result
  }

  /** Commits an alarm write; may cancel the running handler. */
  writeAlarm(at: number | null, origin: Origin | undefined): void {
    const run = this.run
    const effective = run === undefined ? undefined : run.setSinceStart ? this.alarm : run.scheduledTime
    this.alarm = at
    this.alarmRetries = 0
    this.platformRetryAt = undefined
    if (run === undefined) return
    run.setSinceStart = true
    if (at !== null && effective !== null && effective !== undefined && at < effective) {
      this.observer.onCancel(run, origin, at)
    }
  }

  /** The `DurableObjectState` an incarnation sees. */
  facade(holder: Holder): DurableObjectState {
    return makeFacade(this, holder)
  }
}

interface Staged {
  readonly reads: Map<string, unknown>
  readonly writes: Map<string, unknown>
  alarm?: { readonly at: number | null } | undefined
  rolledBack: boolean
}

const stagedOps = (port: SimStorage, staged: Staged) => ({
  get: (key: string) => {
    if (staged.writes.has(key)) return clone(staged.writes.get(key))
    const value = port.kv.get(key)
    // Committed values are replaced, never mutated: the observer may keep the reference.
    if (!staged.reads.has(key)) staged.reads.set(key, value)
    return clone(value)
  },
  put: (key: string, value: unknown) => {
    staged.writes.set(key, clone(value))
  },
  delete: (key: string) => {
    const existed = staged.writes.has(key) ? staged.writes.get(key) !== undefined : port.kv.has(key)
    staged.writes.set(key, undefined)
    return existed
  },
  getAlarm: () => (staged.alarm !== undefined ? staged.alarm.at : port.visibleAlarm()),
  setAlarm: (time: number | Date) => {
    staged.alarm = { at: toMillis(time) }
  },
  deleteAlarm: () => {
    staged.alarm = { at: null }
  },
})

/** Applies `staged` atomically (a read-only operation applies nothing) and reports it. */
const commit = (port: SimStorage, holder: Holder, origin: Origin | undefined, staged: Staged) => {
  const before = new Map<string, unknown>()
  for (const [key, value] of staged.writes) {
    before.set(key, port.kv.get(key))
    if (value === undefined) port.kv.delete(key)
    else port.kv.set(key, value)
  }
  const alarmBefore = port.alarm
  if (staged.alarm !== undefined) port.writeAlarm(staged.alarm.at, origin)
  port.observer.onEvent({
    origin,
    incarnation: holder.id,
    at: port.observer.now(),
    committed: true,
    reads: staged.reads,
    before,
    writes: staged.writes,
    ...(staged.alarm === undefined ? {} : { alarm: { before: alarmBefore, after: staged.alarm.at } }),
  })
}

/** Reports an operation whose body threw: nothing of it commits. */
const reportDiscarded = (port: SimStorage, holder: Holder, origin: Origin | undefined, staged: Staged) =>
  port.observer.onEvent({
    origin,
    incarnation: holder.id,
    at: port.observer.now(),
    committed: false,
    reads: staged.reads,
    before: new Map(),
    writes: new Map(),
  })

const makeFacade = (port: SimStorage, holder: Holder): DurableObjectState => {
  /** One serialized operation of a live incarnation, staged and committed at its end. */
  const operate = <A>(body: (staged: Staged) => Promise<A> | A): Promise<A> => {
    const origin = currentOrigin()
    port.observer.onActivity()
    return port.exclusive(async () => {
      if (!holder.alive()) throw evicted()
      const staged: Staged = { reads: new Map(), writes: new Map(), rolledBack: false }
      let result: A
      try {
        result = await body(staged)
      } catch (error) {
        reportDiscarded(port, holder, origin, staged)
        throw error
      }
      // A reset between the body and the commit loses the whole operation.
      if (!holder.alive()) throw evicted()
      if (staged.rolledBack) {
        staged.writes.clear()
        delete staged.alarm
      }
      commit(port, holder, origin, staged)
      return result
    })
  }

  /** The open `transactionSync`, if any: synchronous KV and alarm calls stage into it. */
  let open: Staged | undefined

  /** One synchronous operation (workerd's `transactionSync`, or a lone `kv` call). */
  const operateSync = <A>(body: (staged: Staged) => A): A => {
    if (open !== undefined) return body(open)
    const origin = currentOrigin()
    port.observer.onActivity()
    if (!holder.alive()) throw evicted()
    const staged: Staged = { reads: new Map(), writes: new Map(), rolledBack: false }
    open = staged
    let result: A
    try {
      result = body(staged)
    } catch (error) {
      reportDiscarded(port, holder, origin, staged)
      throw error
    } finally {
      open = undefined
    }
    if (!holder.alive()) throw evicted()
    commit(port, holder, origin, staged)
    return result
  }

  /** An alarm write: staged into the open synchronous transaction, or an operation of its own. */
  const alarmWrite = (write: (ops: ReturnType<typeof stagedOps>) => void) =>
    open === undefined
      ? operate((staged) => write(stagedOps(port, staged)))
      : Promise.resolve(write(stagedOps(port, open)))

  const kv = {
    get: (key: string) => operateSync((staged) => stagedOps(port, staged).get(key)),
    put: (key: string, value: unknown) => operateSync((staged) => stagedOps(port, staged).put(key, value)),
    delete: (key: string) => operateSync((staged) => stagedOps(port, staged).delete(key)),
  }

  const storage = {
    kv,
    transactionSync: <A>(closure: () => A): A => operateSync(() => closure()),
    get: (key: string) => operate((staged) => stagedOps(port, staged).get(key)),
    put: (key: string, value: unknown) => operate((staged) => stagedOps(port, staged).put(key, value)),
    delete: (key: string) => operate((staged) => stagedOps(port, staged).delete(key)),
    getAlarm: () => operate((staged) => stagedOps(port, staged).getAlarm()),
    setAlarm: (time: number | Date) => alarmWrite((ops) => ops.setAlarm(time)),
    deleteAlarm: () => alarmWrite((ops) => ops.deleteAlarm()),
    transaction: <A>(closure: (txn: DurableObjectTransaction) => Promise<A>) =>
      operate(async (staged) => {
        const ops = stagedOps(port, staged)
        const txn = {
          get: async (key: string) => {
            if (!holder.alive()) throw evicted()
            return ops.get(key)
          },
          put: async (key: string, value: unknown) => {
            if (!holder.alive()) throw evicted()
            ops.put(key, value)
          },
          delete: async (key: string) => {
            if (!holder.alive()) throw evicted()
            return ops.delete(key)
          },
          getAlarm: async () => {
            if (!holder.alive()) throw evicted()
            return ops.getAlarm()
          },
          setAlarm: async (time: number | Date) => {
            if (!holder.alive()) throw evicted()
            ops.setAlarm(time)
          },
          deleteAlarm: async () => {
            if (!holder.alive()) throw evicted()
            ops.deleteAlarm()
          },
          rollback: () => {
            staged.rolledBack = true
          },
        }
        return closure(txn as unknown as DurableObjectTransaction)
      }),
  }

  const unsupported = (name: string) => () => {
    throw new Error(`the simulated Durable Object does not implement ${name}`)
  }

  return {
    // The durable stores live in memory: the SQL database the Object would have stays empty.
    storage: { ...storage, sql: { databaseSize: 0 } },
    id: { toString: () => `sim-object`, name: "sim-object" },
    abort: (reason?: string) => holder.abort(reason ?? "ctx.abort()"),
    waitUntil: unsupported("waitUntil"),
    blockConcurrencyWhile: unsupported("blockConcurrencyWhile"),
  } as unknown as DurableObjectState
}
