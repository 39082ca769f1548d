/**
 * The address of a Thread in a shared Object: a client given an Object name or a Thread id
 * that cannot address one answers every call with `InvalidRequest` naming what is wrong, and
 * reaches no Object (not even the one that name would create).
 */
import { describe, expect, it } from "@effect/vitest"
import { env } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { failureOf, threadName } from "./support.ts"

/** The test namespace, counting the Objects a client asks it for. */
const countingNamespace = () => {
  const reached: Array<string> = []
  const namespace: ThreadClient.ThreadNamespace = {
    getByName: (name) => {
      reached.push(name)
      return env.THREADS_TEST.getByName(name)
    },
  }
  return { namespace, reached }
}

describe("a Thread's address in a shared Object", () => {
  it.live("refuses an Object name that cannot address an Object, naming it, and reaches none", () =>
    Effect.gen(function* () {
      const { namespace, reached } = countingNamespace()
      for (const [objectName, expected] of [
        ["", "a non-empty object name"],
        ["o".repeat(257), "object name of at most 256 characters"],
      ] as const) {
        const client = ThreadClient.make(namespace, "desk", { objectName })
        for (const call of [
          Effect.asVoid(client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })),
          Effect.asVoid(client.threads),
        ]) {
          const failure = failureOf(yield* Effect.exit(call))
          expect(failure).toMatchObject({ _tag: "InvalidRequest" })
          expect((failure as ThreadClient.InvalidRequest).message).toContain("objectName")
          expect((failure as ThreadClient.InvalidRequest).message).toContain(expected)
        }
      }
      expect(reached).toEqual([])
    }),
  )

  it.live("refuses a Thread id that cannot name a Thread before it reaches any Object", () =>
    Effect.gen(function* () {
      const { namespace, reached } = countingNamespace()
      for (const [threadId, objectName, expected] of [
        ["", undefined, "a non-empty ThreadId"],
        ["", threadName("shared"), "a non-empty ThreadId"],
        ["t".repeat(257), undefined, "a ThreadId of at most 256 characters"],
        ["a\u0000b", threadName("shared"), "a ThreadId without control characters"],
      ] as const) {
        const client = ThreadClient.make(namespace, threadId, objectName === undefined ? {} : { objectName })
        const failure = failureOf(
          yield* Effect.exit(client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })),
        )
        expect(failure).toMatchObject({ _tag: "InvalidRequest", entryPoint: "submit" })
        expect((failure as ThreadClient.InvalidRequest).message).toContain(expected)
      }
      expect(reached).toEqual([])
    }),
  )

  it.live("hosts Threads by a valid Object name as before", () =>
    Effect.gen(function* () {
      const { namespace, reached } = countingNamespace()
      const objectName = threadName("shared")
      const client = ThreadClient.make(namespace, "desk", { objectName })
      yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      expect(yield* client.threads).toEqual(["desk"])
      expect(new Set(reached)).toEqual(new Set([objectName]))
    }),
  )
})
