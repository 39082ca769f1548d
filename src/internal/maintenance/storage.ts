/**
 * The storage-operation wrapper every maintenance service uses for KV and alarm promises.
 *
 * KV, alarm and SQL writes of a Durable Object share one physical SQLite transaction. SQL
 * transactions here are synchronous (see internal/object/sqlClient.ts), so no other fiber's
 * transaction can be open while an operation starts, and an operation needs no reservation.
 */
import { Effect } from "effect"
import { alarmErrorFromCause, type DurableAlarmError } from "./errors.ts"

/** @internal */
export type StorageOperation = <A>(
  operation: string,
  run: () => Promise<A>,
) => Effect.Effect<A, DurableAlarmError>

/** @internal */
export const storageOperation: StorageOperation = (operation, run) =>
  // A started storage promise cannot be cancelled, so its fiber waits for it.
  Effect.uninterruptible(
    Effect.tryPromise({ try: run, catch: (cause) => alarmErrorFromCause(operation, cause) }),
  )
