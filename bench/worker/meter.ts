/**
 * A counting view of a Durable Object's storage, for the bench. Wrap `ctx` once in the
 * constructor and hand the wrapped state to the code under measurement; harness queries keep
 * using the raw `ctx.storage` so they are not counted.
 *
 * SQL rows come from each cursor's `rowsRead`/`rowsWritten`, which are final only once the cursor
 * is consumed, so cursors are kept and summed when a snapshot is taken; long runs fold all but
 * the most recent cursors into running sums (the SQL client consumes each cursor at once, so a
 * cursor thousands of statements old is long finished). KV and alarm calls are
 * counted at the call (their row reads are not visible to JavaScript). `total_changes()` counts
 * every row change on the connection, including workerd's hidden KV and alarm tables.
 */
import type { MeterCounts } from "./report.ts"

export type { MeterCounts }

/** The counting view and its controls. */
export interface StorageMeter {
  /** `ctx` with `storage` replaced by the counting view; everything else is the real state. */
  readonly state: DurableObjectState
  readonly storage: DurableObjectStorage
  /** Rows per statement text (whitespace collapsed), summed over every cursor since the reset. */
  readonly breakdown: () => ReadonlyArray<StatementCounts>
  /** Call at the top of `alarm()`. */
  readonly delivered: () => void
  readonly reset: () => void
  readonly snapshot: () => MeterCounts
}

/** One statement text's share of the counts. */
export interface StatementCounts {
  readonly statement: string
  readonly calls: number
  readonly rowsRead: number
  readonly rowsWritten: number
}

/** Cursors kept unsummed: folding starts at `foldAbove` and keeps the newest `keepUnfolded`. */
const foldAbove = 8_192
const keepUnfolded = 256

type Calls = { -readonly [K in Exclude<keyof MeterCounts, `sql${string}` | "totalChanges">]: number }

const zero = (): Calls => ({
  kvGets: 0,
  kvPuts: 0,
  kvDeletes: 0,
  kvLists: 0,
  alarmGets: 0,
  alarmSets: 0,
  alarmDeletes: 0,
  alarmDeliveries: 0,
})

const keyCount = (keys: unknown): number =>
  Array.isArray(keys) ? keys.length : typeof keys === "object" && keys !== null ? Object.keys(keys).length : 1

/** A view of `target` whose members in `overrides` replace the real ones; methods stay bound. */
const overlay = <T extends object>(target: T, overrides: Partial<Record<keyof T, unknown>>): T => {
  // Bound once per method: the view is read on every storage call of the code measured.
  const bound = new Map<PropertyKey, unknown>()
  return new Proxy(target, {
    get: (raw, key) => {
      if (Object.hasOwn(overrides, key)) return overrides[key as keyof T]
      const value: unknown = Reflect.get(raw, key, raw)
      if (typeof value !== "function") return value
      let method = bound.get(key)
      if (method === undefined) {
        method = value.bind(raw)
        bound.set(key, method)
      }
      return method
    },
  })
}

/** Wraps `ctx` so that every storage call made through the returned state is counted. */
export const meterState = (ctx: DurableObjectState): StorageMeter => {
  const raw = ctx.storage
  let calls = zero()
  type Cursor = SqlStorageCursor<Record<string, SqlStorageValue>>
  let cursors: Array<Cursor> = []
  let texts: Array<string> = []
  let byStatement = new Map<string, { calls: number; rowsRead: number; rowsWritten: number }>()
  // Keyed by the text as run (the library's texts are constants, so the lookup is cheap);
  // whitespace is collapsed only when the breakdown is read, off the measured path.
  const account = (text: string, cursor: Cursor) => {
    let entry = byStatement.get(text)
    if (entry === undefined) {
      entry = { calls: 0, rowsRead: 0, rowsWritten: 0 }
      byStatement.set(text, entry)
    }
    entry.calls += 1
    entry.rowsRead += cursor.rowsRead
    entry.rowsWritten += cursor.rowsWritten
  }
  let folded = { statements: 0, rowsRead: 0, rowsWritten: 0 }
  let changesAtReset = 0
  const totalChanges = (): number => raw.sql.exec<{ n: number }>("SELECT total_changes() AS n").one().n

  // The async KV and alarm surface shared by storage and transactions.
  const asyncCalls = <T extends DurableObjectStorage | DurableObjectTransaction>(target: T) => ({
    get: (keys: string | Array<string>, options?: DurableObjectGetOptions) => {
      calls.kvGets += keyCount(keys)
      return typeof keys === "string" ? target.get(keys, options) : target.get(keys, options)
    },
    put: (
      keyOrEntries: string | Record<string, unknown>,
      value?: unknown,
      options?: DurableObjectPutOptions,
    ) => {
      calls.kvPuts += keyCount(keyOrEntries)
      return typeof keyOrEntries === "string"
        ? target.put(keyOrEntries, value, options)
        : target.put(keyOrEntries, value as DurableObjectPutOptions | undefined)
    },
    delete: (keys: string | Array<string>, options?: DurableObjectPutOptions) => {
      calls.kvDeletes += keyCount(keys)
      return typeof keys === "string" ? target.delete(keys, options) : target.delete(keys, options)
    },
    list: (options?: DurableObjectListOptions) => {
      calls.kvLists += 1
      return target.list(options)
    },
    getAlarm: (options?: DurableObjectGetAlarmOptions) => {
      calls.alarmGets += 1
      return target.getAlarm(options)
    },
    setAlarm: (time: number | Date, options?: DurableObjectSetAlarmOptions) => {
      calls.alarmSets += 1
      return target.setAlarm(time, options)
    },
    deleteAlarm: (options?: DurableObjectSetAlarmOptions) => {
      calls.alarmDeletes += 1
      return target.deleteAlarm(options)
    },
  })

  const sql = overlay(raw.sql, {
    exec: (query: string, ...bindings: Array<unknown>) => {
      const cursor = raw.sql.exec(query, ...bindings)
      cursors.push(cursor)
      texts.push(query)
      if (cursors.length >= foldAbove) {
        const old = cursors.splice(0, cursors.length - keepUnfolded)
        const oldTexts = texts.splice(0, old.length)
        old.forEach((each, index) => account(oldTexts[index] ?? "", each))
        folded = {
          statements: folded.statements + old.length,
          rowsRead: old.reduce((sum, each) => sum + each.rowsRead, folded.rowsRead),
          rowsWritten: old.reduce((sum, each) => sum + each.rowsWritten, folded.rowsWritten),
        }
      }
      return cursor
    },
  })
  const kv = overlay(raw.kv, {
    get: (key: string) => {
      calls.kvGets += 1
      return raw.kv.get(key)
    },
    put: (key: string, value: unknown) => {
      calls.kvPuts += 1
      raw.kv.put(key, value)
    },
    delete: (key: string) => {
      calls.kvDeletes += 1
      return raw.kv.delete(key)
    },
    list: (options?: SyncKvListOptions) => {
      calls.kvLists += 1
      return raw.kv.list(options)
    },
  })
  const storage = overlay(raw, {
    ...asyncCalls(raw),
    sql,
    kv,
    transaction: <T>(closure: (txn: DurableObjectTransaction) => Promise<T>) =>
      raw.transaction((txn) => closure(overlay(txn, asyncCalls(txn)))),
  })

  const reset = (): void => {
    calls = zero()
    cursors = []
    texts = []
    byStatement = new Map()
    folded = { statements: 0, rowsRead: 0, rowsWritten: 0 }
    changesAtReset = totalChanges()
  }
  reset()
  return {
    state: overlay(ctx, { storage }),
    storage,
    delivered: () => {
      calls.alarmDeliveries += 1
    },
    reset,
    breakdown: () => {
      const saved = byStatement
      byStatement = new Map([...saved].map(([key, entry]) => [key, { ...entry }]))
      cursors.forEach((each, index) => account(texts[index] ?? "", each))
      const merged = new Map<string, StatementCounts>()
      for (const [text, entry] of byStatement) {
        const statement = text.replace(/\s+/g, " ").trim()
        const before = merged.get(statement)
        merged.set(statement, {
          statement,
          calls: entry.calls + (before?.calls ?? 0),
          rowsRead: entry.rowsRead + (before?.rowsRead ?? 0),
          rowsWritten: entry.rowsWritten + (before?.rowsWritten ?? 0),
        })
      }
      byStatement = saved
      return [...merged.values()].sort((a, b) => b.rowsRead - a.rowsRead)
    },
    snapshot: () => ({
      sqlStatements: folded.statements + cursors.length,
      sqlRowsRead: cursors.reduce((sum, cursor) => sum + cursor.rowsRead, folded.rowsRead),
      sqlRowsWritten: cursors.reduce((sum, cursor) => sum + cursor.rowsWritten, folded.rowsWritten),
      totalChanges: totalChanges() - changesAtReset,
      ...calls,
    }),
  }
}
