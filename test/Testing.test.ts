import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { DurableRuntimeFailpointError } from "../src/Testing.ts"
import * as ThreadClient from "../src/ThreadClient.ts"
import { clientOf, ledgerRows, stubOf, threadName } from "./object/support.ts"
import { switchboard } from "./worker/threadObject.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined

describe("Testing", () => {
  it.live(
    "reports an injected runtime failure to the caller as an internal failure, and keeps the admission",
    () =>
      Effect.gen(function* () {
        const thread = threadName("injected")
        const client = clientOf(thread)
        const id = stubOf(thread).id
        switchboard.install(id, {
          runtime: (location) =>
            location === "submit:after-admit"
              ? Effect.fail(new DurableRuntimeFailpointError({ location, message: "injected" }))
              : Effect.void,
        })
        const exit = yield* Effect.exit(
          client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } }),
        ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(id))))
        const failure = failureOf(exit)
        expect(failure).toBeInstanceOf(ThreadClient.ThreadObjectFailure)
        expect(failure).toMatchObject({ entryPoint: "submit", reason: "internal" })
        // The admission committed before the failpoint: the same key replays its receipt.
        const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
        expect(receipt.replayed).toBe(true)
      }),
  )

  it("keeps test-only errors out of the client's error union", () => {
    const injected = new DurableRuntimeFailpointError({ location: "claim:after-claim", message: "x" })
    expect(Schema.is(ThreadClient.ThreadObjectError)(injected)).toBe(false)
  })

  it.live("shows storage failpoints every durable write of a mutation, and fails the one that throws", () =>
    Effect.gen(function* () {
      const thread = threadName("storage")
      const client = clientOf(thread)
      yield* client.threadStatus
      const id = stubOf(thread).id
      const seen: Array<string> = []
      switchboard.install(id, { storage: (location, detail) => void seen.push(`${location} ${detail}`) })
      yield* client.submit({ agentId: "echo", idempotencyKey: "seen", input: { text: "x" } })
      expect(seen).toContain("storage:sql:before insert effect_agent_submissions")
      expect(seen.some((entry) => entry.startsWith("storage:alarm:after"))).toBe(true)
      switchboard.install(id, {
        storage: (location, detail) => {
          if (location === "storage:sql:before" && detail.startsWith("insert effect_agent_submissions")) {
            throw new Error("refused by the test")
          }
        },
      })
      const refused = yield* Effect.exit(
        client.submit({ agentId: "echo", idempotencyKey: "refused", input: { text: "y" } }),
      ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(id))))
      expect(failureOf(refused)).toMatchObject({ _tag: "ThreadObjectFailure", reason: "storage" })
      // The refused admission wrote nothing: only the first Submission has a row.
      expect(yield* ledgerRows(thread)).toHaveLength(1)
    }),
  )
})
