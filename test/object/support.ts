/**
 * Helpers of the `ThreadObject` suites: a typed client per test Thread, alarm delivery until a
 * condition holds, and raw reads of the Object's maintenance record and alarm.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test"
import { Effect, Exit } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { MAINTENANCE_STATE_KEY } from "../../src/internal/maintenance/state.ts"

/** A unique Thread per test (storage is shared by the tests of a file). */
export const threadName = (label: string) => `thread-${label}-${crypto.randomUUID()}`

/** A client of `thread`, hosted in the Object `objectName` (the Thread's own by default). */
export const clientOf = (thread: string, objectName?: string) =>
  ThreadClient.make(env.THREADS_TEST, thread, objectName === undefined ? {} : { objectName })

/** The stub of the Object that hosts `name`. */
export const stubOf = (name: string) => env.THREADS_TEST.getByName(name)

/** Delivers the Object's alarm until `done` holds (a rejected delivery counts as delivered). */
export const deliverUntil = (objectName: string, done: Effect.Effect<boolean, unknown>, rounds = 60) =>
  Effect.gen(function* () {
    for (let round = 0; round < rounds; round++) {
      if (yield* done) return round
      yield* Effect.promise(() => runDurableObjectAlarm(stubOf(objectName)).catch(() => false))
      yield* Effect.sleep(5)
    }
    return yield* Effect.die(new Error(`condition not reached after ${rounds} alarm deliveries`))
  })

/** Whether the Submission is in `state` now, as its client reads it. */
export const inState = (
  client: Pick<ThreadClient.ThreadClient, "status">,
  submissionId: string,
  state: ThreadClient.SubmissionStatus["state"],
) => Effect.map(client.status(submissionId), (status) => status.state === state)

/** The raw stored maintenance record and alarm of an Object. */
export const storedMaintenance = (objectName: string) =>
  Effect.promise(() =>
    runInDurableObject(stubOf(objectName), async (_instance, state) => ({
      record: await state.storage.get(MAINTENANCE_STATE_KEY),
      alarm: await state.storage.getAlarm(),
    })),
  )

/** Overwrites the stored maintenance record of an Object. */
export const putMaintenanceRecord = (objectName: string, value: unknown) =>
  Effect.promise(() =>
    runInDurableObject(stubOf(objectName), (_instance, state) =>
      state.storage.put(MAINTENANCE_STATE_KEY, value),
    ),
  )

/** Rows of the Object's ledger: none when it was never built (a refused call does not build it). */
export const ledgerRows = (objectName: string) =>
  Effect.promise(() =>
    runInDurableObject(stubOf(objectName), (_instance, state) =>
      state.storage.sql
        .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'effect_agent_submissions'")
        .toArray().length === 0
        ? []
        : state.storage.sql
            .exec("SELECT submission_id, thread_id, state FROM effect_agent_submissions")
            .toArray(),
    ),
  )

/**
 * Builds a new Object as a call that needs it does (a read does not): a submit it refuses (an
 * unknown agent) runs the migrations and writes a clean maintenance record, and arms no alarm,
 * so the Object is built and at rest.
 */
export const built = (client: Pick<ThreadClient.ThreadClient, "submit">) =>
  Effect.asVoid(Effect.exit(client.submit({ agentId: "no-such-agent", idempotencyKey: "build", input: {} })))

/** The typed failure of an exit, if it failed with one. */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined

/** Everything an Object stores: KV (the record), the alarm, every ledger and history row. */
export const storedEverything = (stub: DurableObjectStub) =>
  Effect.promise(() =>
    runInDurableObject(stub, async (_instance, state) => ({
      kv: [...(await state.storage.list()).entries()],
      alarm: await state.storage.getAlarm(),
      ledger: state.storage.sql
        .exec("SELECT * FROM effect_agent_submissions ORDER BY submission_id")
        .toArray(),
      history: state.storage.sql.exec("SELECT * FROM effect_agent_history ORDER BY rowid").toArray(),
    })),
  )

/** An Object at rest: no alarm, and its maintenance record (if it has one) owes nothing. */
export const atRest = (stub: DurableObjectStub) =>
  Effect.promise(() =>
    runInDurableObject(stub, async (_instance, state) => {
      const record = (await state.storage.get(MAINTENANCE_STATE_KEY)) as
        { dirty: string; processed: string } | undefined
      const alarm = await state.storage.getAlarm()
      // No record at all: an Object never built (only read, or never reached) owes nothing.
      return alarm === null && (record === undefined || record.dirty === record.processed)
    }),
  )

/** Every one of `stubs` at rest. */
export const allAtRest = (stubs: ReadonlyArray<DurableObjectStub>) =>
  Effect.map(Effect.all(stubs.map(atRest)), (quiet) => quiet.every(Boolean))

/** Delivers the alarms of `stubs`, one each per round, until `done` holds; dies after `rounds`. */
export const deliverAll = (
  stubs: ReadonlyArray<DurableObjectStub>,
  done: Effect.Effect<boolean, unknown>,
  rounds = 60,
) =>
  Effect.gen(function* () {
    for (let round = 0; round < rounds; round++) {
      if (yield* done) return
      for (const stub of stubs) yield* Effect.promise(() => runDurableObjectAlarm(stub).catch(() => false))
      yield* Effect.sleep(5)
    }
    return yield* Effect.die(new Error(`condition not reached after ${rounds} rounds of alarms`))
  })
