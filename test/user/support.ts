/** Helpers of the new-user scenarios: clients of `THREADS_USER` and alarm delivery. */
import { env, runDurableObjectAlarm } from "cloudflare:test"
import { Effect, Exit } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"

export const uniqueName = (label: string) => `${label}-${crypto.randomUUID()}`

export const userClient = (thread: string, objectName?: string) =>
  ThreadClient.make(env.THREADS_USER, thread, objectName === undefined ? {} : { objectName })

export const userStub = (name: string) => env.THREADS_USER.getByName(name)

/** Delivers the alarms of the Objects `names` until `done` holds; dies after `rounds`. */
export const deliverUntil = <R>(
  names: ReadonlyArray<string>,
  done: Effect.Effect<boolean, unknown, R>,
  rounds = 200,
  label = "condition",
) =>
  Effect.gen(function* () {
    for (let round = 0; round < rounds; round++) {
      if (yield* done) return round
      for (const name of names)
        yield* Effect.promise(() => runDurableObjectAlarm(userStub(name)).catch(() => false))
      yield* Effect.sleep(10)
    }
    return yield* Effect.die(new Error(`${label} not reached after ${rounds} rounds`))
  })

export const stateIs = (client: ThreadClient.ThreadClient, id: string, state: string) =>
  Effect.map(client.status(id), (status) => status.state === state)

export const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined
