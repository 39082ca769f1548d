/**
 * The history's fast append (ends kept in memory) falls back to reading the ends only when its
 * insert collides on a key: any other failure of the insert fails the append, and the call,
 * with nothing written twice. A storage failpoint that fails a history insert ("throwing fails
 * the storage call") stands for such a failure.
 */
import { runInDurableObject } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import type { InstalledFailpoints } from "../../src/Testing.ts"
import { clientOf, stubOf, threadName } from "../object/support.ts"
import { switchboard } from "../worker/threadObject.ts"

const withFailpoints = <A, E>(thread: string, handlers: InstalledFailpoints, effect: Effect.Effect<A, E>) => {
  const id = stubOf(thread).id
  return Effect.sync(() => switchboard.install(id, handlers)).pipe(
    Effect.andThen(effect),
    Effect.ensuring(Effect.sync(() => switchboard.remove(id))),
  )
}

const submit = (thread: string, key: string) =>
  clientOf(thread).submit({ agentId: "echo", idempotencyKey: key, input: { text: key } })

/**
 * Submits and waits for the settlement: the ends are then in memory, and no pass of the Object
 * still appends records (a failpoint installed after this meets the next submit's insert, not a
 * pass's).
 */
const settled = (thread: string, key: string) =>
  Effect.flatMap(submit(thread, key), (receipt) =>
    clientOf(thread).awaitSettlement(receipt.submissionId, 10_000),
  )

/** Acceptance records per Submission, from every stored history row. */
const acceptances = (thread: string) =>
  Effect.promise(() =>
    runInDurableObject(stubOf(thread), (_instance, state) => {
      const counts: Record<string, number> = {}
      for (const row of state.storage.sql
        .exec<{ submission_id: string; entries: string }>(
          "SELECT submission_id, entries FROM effect_agent_history",
        )
        .toArray()) {
        for (const entry of JSON.parse(row.entries) as ReadonlyArray<{ _tag: string }>) {
          if (entry._tag === "SubmissionAccepted")
            counts[row.submission_id] = (counts[row.submission_id] ?? 0) + 1
        }
      }
      return counts
    }),
  )

/** Throws once at `location` on the first history insert. */
const failHistoryInsertOnce = (location: string) => {
  let thrown = false
  const handlers: InstalledFailpoints = {
    storage: (at, detail) => {
      if (!thrown && at === location && detail.startsWith("insert effect_agent_history")) {
        thrown = true
        throw new Error(`refused by the test at ${at}`)
      }
    },
  }
  return { handlers, thrown: () => thrown }
}

describe("history fast append under a failing insert", () => {
  it.live("an insert that fails after writing does not leave a second copy of the records", () =>
    Effect.gen(function* () {
      const thread = threadName("fast-after")
      yield* settled(thread, "a")
      const fault = failHistoryInsertOnce("storage:sql:after")
      const exit = yield* withFailpoints(thread, fault.handlers, Effect.exit(submit(thread, "b")))
      expect(fault.thrown()).toBe(true)
      const counts = yield* acceptances(thread)
      // Each admitted Submission has exactly one acceptance record.
      expect(Object.values(counts).filter((count) => count !== 1)).toEqual([])
      // The feed's admission count is the number of admitted Submissions.
      const admitted = yield* Effect.promise(() =>
        runInDurableObject(stubOf(thread), (_instance, state) => ({
          rows: state.storage.sql.exec("SELECT count(*) AS n FROM effect_agent_submissions").one().n,
          counted: state.storage.sql
            .exec("SELECT admitted FROM effect_agent_history ORDER BY position DESC LIMIT 1")
            .one().admitted,
        })),
      )
      expect(admitted.counted).toBe(admitted.rows)
      // The refused write fails the call (as it does on the reading insert).
      expect(Exit.isFailure(exit)).toBe(true)
    }),
  )

  it.live("an insert refused before writing fails the call", () =>
    Effect.gen(function* () {
      const thread = threadName("fast-before")
      yield* settled(thread, "a")
      const fault = failHistoryInsertOnce("storage:sql:before")
      const exit = yield* withFailpoints(thread, fault.handlers, Effect.exit(submit(thread, "b")))
      expect(fault.thrown()).toBe(true)
      expect(Exit.isFailure(exit)).toBe(true)
    }),
  )
})
