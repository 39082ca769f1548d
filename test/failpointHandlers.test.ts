/**
 * What a failpoint handler can do at each kind of location, as docs/testing.md states it: a
 * maintenance handler has no typed failure (it dies), a runtime handler fails with
 * `DurableRuntimeFailpointError`, and either way what committed before the hit stays.
 */
import { runDurableObjectAlarm } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import {
  DurableRuntimeFailpointError,
  type InstalledFailpoints,
  runAlarmsUntilQuiet,
} from "../src/Testing.ts"
import * as ThreadClient from "../src/ThreadClient.ts"
import { MAINTENANCE_STATE_KEY } from "../src/Alarm.ts"
import { clientOf, failureOf, ledgerRows, stubOf, threadName } from "./object/support.ts"
import { effectRuns, switchboard } from "./worker/threadObject.ts"

/** Installs `handlers` on the Object of `thread` for the length of `effect`. */
const withFailpoints = <A, E>(thread: string, handlers: InstalledFailpoints, effect: Effect.Effect<A, E>) => {
  const id = stubOf(thread).id
  return Effect.sync(() => switchboard.install(id, handlers)).pipe(
    Effect.andThen(effect),
    Effect.ensuring(Effect.sync(() => switchboard.remove(id))),
  )
}

/** Dies at the first hit of `at` (or of each location in `at`), once each. */
const dieOnce = (...at: ReadonlyArray<string>): InstalledFailpoints => {
  const pending = new Set(at)
  return {
    maintenance: (location) =>
      pending.delete(location) ? Effect.die(new Error(`died at ${location}`)) : Effect.void,
  }
}

const quiet = (thread: string) =>
  runAlarmsUntilQuiet({ client: clientOf(thread), runAlarm: () => runDurableObjectAlarm(stubOf(thread)) })

const submit = (thread: string, key = "k") =>
  clientOf(thread).submit({ agentId: "echo", idempotencyKey: key, input: { text: key } })

describe("failpoint handlers", () => {
  it.live(
    "a maintenance handler that dies before the generation advances fails the call, and nothing is written",
    () =>
      Effect.gen(function* () {
        const thread = threadName("dirty")
        const exit = yield* withFailpoints(
          thread,
          dieOnce("maintenance:dirty:before"),
          Effect.exit(submit(thread)),
        )
        expect(failureOf(exit)).toBeInstanceOf(ThreadClient.ThreadObjectUnavailable)
        expect(yield* ledgerRows(thread)).toEqual([])
      }),
  )

  it.live("dying after the mutation ran fails the call, but its commit stays: the same key replays", () =>
    Effect.gen(function* () {
      const thread = threadName("finished")
      const exit = yield* withFailpoints(
        thread,
        dieOnce("maintenance:mutation:finished"),
        Effect.exit(submit(thread)),
      )
      expect(Exit.isFailure(exit)).toBe(true)
      expect((yield* submit(thread)).replayed).toBe(true)
      yield* quiet(thread)
    }),
  )

  it.live("dying in a pass fails the delivery, which commits its retry first", () =>
    Effect.gen(function* () {
      const thread = threadName("begin")
      let died = false
      let afterRearm: unknown
      const handlers: InstalledFailpoints = {
        maintenance: (location, ctx) => {
          if (location === "maintenance:begin:after" && !died) {
            died = true
            return Effect.die(new Error("died in the pass"))
          }
          // What the failed event committed, read the moment its rearm is done.
          if (location === "maintenance:retry:after")
            return Effect.sync(() => (afterRearm = ctx.storage.kv.get(MAINTENANCE_STATE_KEY)))
          return Effect.void
        },
      }
      const { submissionId } = yield* withFailpoints(
        thread,
        handlers,
        Effect.andThen(submit(thread), (receipt) => Effect.as(quiet(thread), receipt)),
      )
      expect(afterRearm).toMatchObject({ retry: { stalls: 1 } })
      expect((yield* clientOf(thread).status(submissionId)).state).toBe("settled")
    }),
  )

  it.live(
    "dying in the failure rearm commits no retry; the alarm the pass set when it began wakes the Object",
    () =>
      Effect.gen(function* () {
        const thread = threadName("rearm")
        const died = new Set<string>()
        let nextBegin: unknown = "not reached"
        const handlers: InstalledFailpoints = {
          maintenance: (location, ctx) => {
            if (
              (location === "maintenance:begin:after" || location === "maintenance:retry:before") &&
              !died.has(location)
            ) {
              died.add(location)
              return Effect.die(new Error(`died at ${location}`))
            }
            // The next event starts with the record the failed one left.
            if (location === "maintenance:begin:before" && died.size === 2 && nextBegin === "not reached")
              return Effect.sync(() => (nextBegin = ctx.storage.kv.get(MAINTENANCE_STATE_KEY)))
            return Effect.void
          },
        }
        const { submissionId } = yield* withFailpoints(
          thread,
          handlers,
          Effect.andThen(submit(thread), (receipt) => Effect.as(quiet(thread), receipt)),
        )
        expect(died.size).toBe(2)
        expect(nextBegin).not.toBe("not reached")
        expect((nextBegin as { retry?: unknown }).retry).toBeUndefined()
        expect((yield* clientOf(thread).status(submissionId)).state).toBe("settled")
      }),
  )

  it.live("a runtime failure after a journaled step fails the pass; the next Attempt replays the step", () =>
    Effect.gen(function* () {
      const thread = threadName("step")
      let failed = false
      const { submissionId } = yield* withFailpoints(
        thread,
        {
          runtime: (location) =>
            location === "step:after-step-append" && !failed
              ? Effect.andThen(
                  Effect.sync(() => (failed = true)),
                  Effect.fail(new DurableRuntimeFailpointError({ location, message: "after the step" })),
                )
              : Effect.void,
        },
        Effect.andThen(submit(thread), (receipt) => Effect.as(quiet(thread), receipt)),
      )
      expect(failed).toBe(true)
      const status = yield* clientOf(thread).status(submissionId)
      expect(status.settlement).toMatchObject({ outcome: "completed", output: "echo: k" })
      // Journaled before the failure: the step's effect ran once.
      expect(effectRuns.get(`${submissionId}:echo`)).toBe(1)
    }),
  )

  it.live("a storage handler that throws fails that write, and the call with it", () =>
    Effect.gen(function* () {
      const thread = threadName("storage")
      const exit = yield* withFailpoints(
        thread,
        {
          storage: (location, detail) => {
            if (location === "storage:sql:before" && detail.startsWith("insert effect_agent_submissions"))
              throw new Error("refused by the test")
          },
        },
        Effect.exit(submit(thread)),
      )
      // The admission's insert is refused: its transaction rolls back and the call fails with
      // the storage named, nothing admitted.
      const failure = failureOf(exit)
      expect(failure).toBeInstanceOf(ThreadClient.ThreadObjectFailure)
      expect((failure as ThreadClient.ThreadObjectFailure).reason).toBe("storage")
      expect(yield* ledgerRows(thread)).toEqual([])
    }),
  )
})
