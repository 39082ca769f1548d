/**
 * The storage-operation wrapper every maintenance service uses for KV and alarm promises.
 *
 * KV, alarm and SQL writes of a Durable Object share one physical SQLite transaction. A short
 * storage operation run while another fiber holds an open SQL transaction would land inside it
 * (and roll back with it), so outside a transaction the operation reserves the SQL connection
 * for exactly its own duration. Inside the caller's own transaction it runs directly.
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { alarmErrorFromCause, type DurableAlarmError } from "./errors.ts"

/** @internal */
export type StorageOperation = <A>(
  operation: string,
  run: () => Promise<A>,
) => Effect.Effect<A, DurableAlarmError>

/** @internal */
export const makeStorageOperation: Effect.Effect<StorageOperation, never, SqlClient> = Effect.gen(
  function* () {
    const sql = yield* SqlClient
    return <A>(operation: string, run: () => Promise<A>) => {
      // A started storage promise cannot be cancelled, so its fiber waits for it.
      const execute = Effect.uninterruptible(
        Effect.tryPromise({ try: run, catch: (cause) => alarmErrorFromCause(operation, cause) }),
      )
      return Effect.flatMap(Effect.serviceOption(sql.transactionService), (transaction) =>
        Option.isSome(transaction)
          ? execute
          : Effect.scoped(
              Effect.andThen(
                Effect.mapError(sql.reserve, (cause) => alarmErrorFromCause(operation, cause)),
                execute,
              ),
            ),
      )
    }
  },
)
