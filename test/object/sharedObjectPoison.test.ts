/**
 * A Thread whose head kills its Object (a poison input: a step that runs out of memory or CPU
 * before its turn ends, so nothing of that turn commits) in an Object it shares with other
 * Threads: the others are still served, each Submission's step once.
 */
import { describe, expect, it } from "@effect/vitest"
import { runDurableObjectAlarm } from "cloudflare:test"
import { Effect } from "effect"
import { effectRuns, switchboard } from "../worker/threadObject.ts"
import { clientOf, inState, stubOf, threadName } from "./support.ts"

const POISON = "a-poison"

/** Retries a call the Object's death cut off. */
const retried = <A, E>(call: Effect.Effect<A, E>) => Effect.retry(call, { times: 10 })

describe("a poison Thread in a shared Object", () => {
  it.live("does not keep the Object's other Threads from being served", () =>
    Effect.gen(function* () {
      const object = threadName("poison")
      const stub = stubOf(object)
      const poison = clientOf(POISON, object)
      const other = clientOf("b", object)
      // The lane cursor names `b`: the next selection wraps around to the poison Thread first.
      const first = yield* other.submit({ agentId: "echo", idempotencyKey: "first", input: { text: "x" } })
      for (let round = 0; round < 20 && !(yield* inState(other, first.submissionId, "settled")); round++)
        yield* Effect.promise(() => runDurableObjectAlarm(stub).catch(() => false))
      expect(yield* inState(other, first.submissionId, "settled")).toBe(true)
      let kills = 0
      switchboard.install(stub.id, {
        // Dies in the turn that claimed the poison Thread's head, before that turn commits.
        runtime: (location, ctx) =>
          Effect.sync(() => {
            if (location !== "claim:after-claim") return
            const running = ctx.storage.sql
              .exec("SELECT thread_id FROM effect_agent_submissions WHERE state = 'running'")
              .toArray()
            if (running.some((row) => row["thread_id"] === POISON)) {
              kills++
              ctx.abort("poison input")
            }
          }),
      })
      const later = yield* retried(
        other.submit({ agentId: "echo", idempotencyKey: "later", input: { text: "y" } }),
      )
      yield* retried(poison.submit({ agentId: "echo", idempotencyKey: "p", input: { text: "p" } }))
      let served = false
      for (let round = 0; round < 30 && !served; round++) {
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(object)).catch(() => false))
        yield* Effect.sleep(10)
        served = yield* retried(inState(other, later.submissionId, "settled"))
      }
      switchboard.remove(stub.id)
      expect(kills).toBeGreaterThan(0)
      expect(served).toBe(true)
      expect(effectRuns.get(`${later.submissionId}:echo`)).toBe(1)
    }),
  )
})
