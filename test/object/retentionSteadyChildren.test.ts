/**
 * Storage under a steady load of parents and their children in another Object, with retention
 * on, in real workerd time: once the load stops and one retention period (and window) passed,
 * both Objects' ledgers, histories and outboxes are empty again; only the one tails row per
 * Thread each emptied stays.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"

const stubOf = (name: string) => env.THREADS_RETAINED.getByName(name)

const rowCounts = (name: string) =>
  Effect.promise(() =>
    runInDurableObject(stubOf(name), (_instance, state) =>
      Object.fromEntries(
        [
          "effect_agent_submissions",
          "effect_agent_history",
          "effect_agent_outbox",
          "effect_agent_thread_tails",
        ].map((table) => [
          table,
          Number(state.storage.sql.exec(`SELECT count(*) AS n FROM ${table}`).one().n),
        ]),
      ),
    ),
  )

const deliver = (names: ReadonlyArray<string>) =>
  Effect.forEach(
    names,
    (name) => Effect.promise(() => runDurableObjectAlarm(stubOf(name)).catch(() => false)),
    {
      discard: true,
    },
  )

describe("retention under a steady load of parents and children", () => {
  it.live(
    "empties both Objects once the load stopped for a retention period",
    () =>
      Effect.gen(function* () {
        const suffix = crypto.randomUUID()
        const parentObject = `retained-parents-${suffix}`
        const childObject = `retained-children-${suffix}`
        const parents = ThreadClient.make(env.THREADS_RETAINED, "desk", { objectName: parentObject })
        const ids: Array<string> = []
        for (let round = 0; round < 6; round++) {
          for (let n = 0; n < 3; n++) {
            const receipt = yield* parents.submit({
              agentId: "delegator",
              idempotencyKey: `claims-${round}-${n}`,
              input: { claims: [`claim ${round} ${n}`, `fake ${round} ${n}`], verifierObject: childObject },
            })
            ids.push(receipt.submissionId)
          }
          yield* deliver([parentObject, childObject, parentObject, childObject])
          yield* Effect.sleep(200)
        }
        // Every parent settles with its children's answers.
        for (let round = 0; round < 100; round++) {
          const states = yield* Effect.forEach(ids, (id) =>
            Effect.map(Effect.exit(parents.status(id)), (exit) =>
              exit._tag === "Success" ? exit.value.state : "removed",
            ),
          )
          if (states.every((state) => state === "settled" || state === "removed")) break
          yield* deliver([parentObject, childObject])
          yield* Effect.sleep(50)
        }
        // One retention period and window later, with alarms delivered, nothing is left but tails.
        for (let round = 0; round < 60; round++) {
          const [parent, child] = [yield* rowCounts(parentObject), yield* rowCounts(childObject)]
          if (
            parent["effect_agent_submissions"] === 0 &&
            child["effect_agent_submissions"] === 0 &&
            parent["effect_agent_outbox"] === 0 &&
            child["effect_agent_outbox"] === 0
          )
            break
          yield* deliver([parentObject, childObject])
          yield* Effect.sleep(100)
        }
        expect(yield* rowCounts(parentObject)).toEqual({
          effect_agent_submissions: 0,
          effect_agent_history: 0,
          effect_agent_outbox: 0,
          effect_agent_thread_tails: 1,
        })
        expect(yield* rowCounts(childObject)).toEqual({
          effect_agent_submissions: 0,
          effect_agent_history: 0,
          effect_agent_outbox: 0,
          effect_agent_thread_tails: 2,
        })
      }),
    60_000,
  )
})
