/**
 * A Durable Object state whose storage reports every durable write to an observer: SQL
 * statements that change rows, KV writes, alarm writes and transaction commits, both inside
 * and outside `transaction`. Test failpoints use it to fail or abort the Object at a storage
 * boundary; the observer runs synchronously because `sql.exec` is synchronous.
 */

import { overlaysStorage } from "./sqlClient.ts"

/** A storage boundary an observer can act on. */
export type StorageFailpointLocation =
  | "storage:sql:before"
  | "storage:sql:after"
  | "storage:kv:before"
  | "storage:kv:after"
  | "storage:alarm:before"
  | "storage:alarm:after"
  | "storage:transaction:before"
  | "storage:transaction:after"

/** Every storage failpoint location. */
export const STORAGE_FAILPOINT_LOCATIONS: ReadonlyArray<StorageFailpointLocation> = [
  "storage:sql:before",
  "storage:sql:after",
  "storage:kv:before",
  "storage:kv:after",
  "storage:alarm:before",
  "storage:alarm:after",
  "storage:transaction:before",
  "storage:transaction:after",
]

/**
 * Called at each boundary with a short description (the statement's verb and table, the KV
 * key, the alarm time). Throwing fails the storage call; `ctx.abort()` evicts the Object.
 */
export type StorageFailpointHandler = (location: StorageFailpointLocation, detail: string) => void

const writeVerb = /^\s*(insert|update|delete|replace|create|drop|alter)\b/i

/** The verb and first table name of a writing statement, or undefined for a read. */
const describeWrite = (query: string): string | undefined => {
  const verb = writeVerb.exec(query)?.[1]
  if (verb === undefined) return undefined
  const table = /\b(?:into|update|from|table(?: if not exists)?)\s+["`]?([\w]+)/i.exec(query)?.[1]
  return table === undefined ? verb.toLowerCase() : `${verb.toLowerCase()} ${table}`
}

const alarmDetail = (time: unknown) => (time instanceof Date ? String(time.getTime()) : String(time))

/** Wraps the KV and alarm writes of a storage or a transaction. */
const wrapWrites = <T extends DurableObjectStorage | DurableObjectTransaction>(
  target: T,
  observe: StorageFailpointHandler,
): Partial<T> => {
  const around =
    <A extends ReadonlyArray<unknown>, B>(
      kind: "kv" | "alarm",
      detail: (...args: A) => string,
      call: (...args: A) => Promise<B>,
    ) =>
    async (...args: A): Promise<B> => {
      observe(`storage:${kind}:before`, detail(...args))
      const result = await call(...args)
      observe(`storage:${kind}:after`, detail(...args))
      return result
    }
  const keyOf = (key: unknown) =>
    typeof key === "string" ? key : Array.isArray(key) ? key.join(",") : "entries"
  // The overloads of put/delete forward their arguments unchanged.
  const put = target.put as (...args: ReadonlyArray<unknown>) => Promise<unknown>
  const remove = target.delete as (...args: ReadonlyArray<unknown>) => Promise<unknown>
  return {
    put: around("kv", keyOf, (...args: Array<unknown>) => put.apply(target, args)),
    delete: around("kv", keyOf, (...args: Array<unknown>) => remove.apply(target, args)),
    setAlarm: around(
      "alarm",
      (time: number | Date) => alarmDetail(time),
      (time: number | Date, options?: DurableObjectSetAlarmOptions) => target.setAlarm(time, options),
    ),
    deleteAlarm: around(
      "alarm",
      () => "delete",
      (options?: DurableObjectSetAlarmOptions) => target.deleteAlarm(options),
    ),
  } as Partial<T>
}

const overlay = <T extends object>(target: T, overrides: Partial<T>): T =>
  new Proxy(target, {
    get: (object, property) => {
      if (property in overrides) return overrides[property as keyof T]
      const value: unknown = Reflect.get(object, property, object)
      return typeof value === "function" ? value.bind(object) : value
    },
  })

const instrumentSql = (sql: SqlStorage, observe: StorageFailpointHandler): SqlStorage =>
  overlay(sql, {
    exec: <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: Array<unknown>) => {
      const detail = describeWrite(query)
      if (detail === undefined) return sql.exec<T>(query, ...bindings)
      observe("storage:sql:before", detail)
      const cursor = sql.exec<T>(query, ...bindings)
      observe("storage:sql:after", detail)
      return cursor
    },
  })

/** The synchronous KV API with its writes reported (inside a `transactionSync`, before commit). */
const instrumentKv = (kv: SyncKvStorage, observe: StorageFailpointHandler): SyncKvStorage =>
  overlay(kv, {
    put: (key: string, value: unknown) => {
      observe("storage:kv:before", key)
      kv.put(key, value)
      observe("storage:kv:after", key)
    },
    delete: (key: string) => {
      observe("storage:kv:before", key)
      const existed = kv.delete(key)
      observe("storage:kv:after", key)
      return existed
    },
  })

/** The storage of `ctx` with every durable write reported to `observe`. */
export const instrumentStorage = (
  storage: DurableObjectStorage,
  observe: StorageFailpointHandler,
): DurableObjectStorage => {
  const instrumented = overlay(storage, {
    ...wrapWrites(storage, observe),
    sql: instrumentSql(storage.sql, observe),
    kv: instrumentKv(storage.kv, observe),
    transaction: async <T>(closure: (txn: DurableObjectTransaction) => Promise<T>): Promise<T> => {
      observe("storage:transaction:before", "begin")
      const result = await storage.transaction((txn) => closure(overlay(txn, wrapWrites(txn, observe))))
      observe("storage:transaction:after", "commit")
      return result
    },
    transactionSync: <T>(closure: () => T): T => {
      observe("storage:transaction:before", "begin")
      const result = storage.transactionSync(closure)
      observe("storage:transaction:after", "commit")
      return result
    },
  })
  // Clients over either see each other's writes (see `StorageClock`).
  overlaysStorage(instrumented, storage)
  return instrumented
}

/** A state whose `storage` is instrumented; everything else is the live state. */
export const instrumentState = (
  ctx: DurableObjectState,
  observe: StorageFailpointHandler,
): DurableObjectState => {
  const storage = instrumentStorage(ctx.storage, observe)
  return overlay(ctx, { storage })
}
