/**
 * A `SqlClient` over an Object's storage whose statement `text` yields once it ran, while armed,
 * until released: on demand, the pause a fiber may take between a statement and its
 * continuation, so a test can run another write inside it.
 */
import { Deferred, Effect, Layer } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient } from "effect/sql/SqlClient"
import { DIRECT_ROWS, type DirectSqlClient, type RowsRunner } from "../../src/core/internal/directRows.ts"
import { makeSqlClient } from "../../src/internal/object/sqlClient.ts"

export const holdAfter = (
  storage: DurableObjectStorage,
  text: string,
  options: { readonly armed: boolean },
) =>
  Effect.gen(function* () {
    const reached = yield* Deferred.make<void>()
    const released = yield* Deferred.make<void>()
    let armed = options.armed
    const sql = Layer.effect(
      SqlClient,
      Effect.map(makeSqlClient(storage), (client) => {
        const direct = (client as DirectSqlClient)[DIRECT_ROWS] as RowsRunner
        const runner: RowsRunner = (query, params) =>
          Effect.tap(direct(query, params), () =>
            query === text && armed
              ? Effect.sync(() => (armed = false)).pipe(
                  Effect.andThen(Deferred.succeed(reached, undefined)),
                  Effect.andThen(Deferred.await(released)),
                )
              : Effect.void,
          ) as never
        return Object.assign(client, { [DIRECT_ROWS]: runner })
      }),
    ).pipe(Layer.provide(Reactivity.layer))
    return {
      sql,
      /** Holds the next run of the statement. */
      arm: Effect.sync(() => (armed = true)),
      /** Waits until a run of the statement is held. */
      reached: Deferred.await(reached),
      release: Deferred.succeed(released, undefined),
    }
  })
