/**
 * One maintenance transaction: the maintenance record (KV) and the alarm slot, read and written
 * inside `storage.transactionSync`, so the record and the alarm decided from it commit together
 * and no other fiber can run in between. An asynchronous `storage.transaction` costs an event
 * loop turn per commit (40% of a profiled burst, measured); a synchronous one a few microseconds.
 *
 * The alarm cannot be read synchronously, so it is read just before the transaction. Every
 * writer of the slot in this library goes through here, one at a time per storage (a lock
 * shared by every incarnation built over it), so no writer of ours can move the slot between
 * that read and the transaction.
 */
import { Effect, Semaphore } from "effect"
import { alarmErrorFromCause, type DurableAlarmError } from "./errors.ts"
import { storageOperation } from "./storage.ts"

/** What a maintenance transaction body reads and writes; every call is synchronous. */
export interface MaintenanceTxn {
  readonly get: (key: string) => unknown
  readonly put: (key: string, value: unknown) => void
  /** The alarm slot as this transaction sees it: read just before, kept current by its writes. */
  readonly alarm: () => number | null
  readonly setAlarm: (at: number) => void
  readonly deleteAlarm: () => void
}

/** Runs a synchronous body as one storage transaction. */
export type Transact = <A>(
  operation: string,
  body: (txn: MaintenanceTxn) => A,
) => Effect.Effect<A, DurableAlarmError>

/** What a transaction of the record alone reads and writes. */
export type RecordTxn = Pick<MaintenanceTxn, "get" | "put"> & { readonly delete: (key: string) => void }

/** Runs a synchronous body that leaves the alarm alone as one storage transaction. */
export type TransactRecord = <A>(
  operation: string,
  body: (txn: RecordTxn) => A,
) => Effect.Effect<A, DurableAlarmError>

const locks = new WeakMap<DurableObjectStorage, Semaphore.Semaphore>()

const lockOf = (storage: DurableObjectStorage) => {
  let lock = locks.get(storage)
  if (lock === undefined) {
    lock = Semaphore.makeUnsafe(1)
    locks.set(storage, lock)
  }
  return lock
}

/**
 * The alarm slot each storage's maintenance transactions last read or left, for observability
 * only (the delivery lag of the next alarm): decisions always read the slot itself.
 */
const seenAlarms = new WeakMap<DurableObjectStorage, number | null>()

/** @internal The alarm the last maintenance transaction over `storage` read or left, if any ran. */
export const lastSeenAlarm = (storage: DurableObjectStorage): number | null | undefined =>
  seenAlarms.get(storage)

/** The record's reads and writes inside a synchronous transaction. */
const recordOf = (storage: DurableObjectStorage): RecordTxn => ({
  get: (key) => storage.kv.get(key),
  put: (key, value) => storage.kv.put(key, value),
  delete: (key) => void storage.kv.delete(key),
})

/**
 * The latest instant the alarm is set to. Cloudflare refuses alarm times after 2189, so a later
 * due time (a `notBefore` or a sleep centuries away) arms the alarm at this instant instead:
 * waking early is harmless, as the pass finds nothing due and arms it here again.
 * @internal
 */
export const LATEST_ALARM_AT = Date.UTC(2189, 0, 1)

/** Runs `body` inside `storage.transactionSync`; a throw rolls it back and names `operation`. */
const synchronously = <A>(storage: DurableObjectStorage, operation: string, body: () => A) =>
  Effect.try({
    try: () => storage.transactionSync(body),
    catch: (cause) => alarmErrorFromCause(operation, cause),
  })

/** @internal */
export const makeTransact = (storage: DurableObjectStorage): Transact => {
  const lock = lockOf(storage)
  const record = recordOf(storage)
  return (operation, body) =>
    lock.withPermit(
      Effect.gen(function* () {
        const before = yield* storageOperation(operation, () => storage.getAlarm())
        let alarm = before
        // The alarm calls apply inside the transaction; their promises only report errors.
        const alarmWrites: Array<Promise<void>> = []
        const result = yield* synchronously(storage, operation, () =>
          body({
            ...record,
            alarm: () => alarm,
            setAlarm: (at) => {
              alarm = Math.min(at, LATEST_ALARM_AT)
              alarmWrites.push(storage.setAlarm(alarm))
            },
            deleteAlarm: () => {
              alarm = null
              alarmWrites.push(storage.deleteAlarm())
            },
          }),
        ).pipe(Effect.tapError(() => Effect.sync(() => seenAlarms.set(storage, before))))
        seenAlarms.set(storage, alarm)
        if (alarmWrites.length > 0) yield* storageOperation(operation, () => Promise.all(alarmWrites))
        return result
      }),
    )
}

/**
 * @internal Transactions of the record alone: no alarm read before them, so a body that never
 * looks at the alarm costs no storage promise (lane selection runs one per head). They take the
 * same lock, so they keep their order with the alarm writers.
 */
export const makeTransactRecord = (storage: DurableObjectStorage): TransactRecord => {
  const lock = lockOf(storage)
  const record = recordOf(storage)
  return (operation, body) => lock.withPermit(synchronously(storage, operation, () => body(record)))
}
