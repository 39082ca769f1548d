/**
 * Calls between Objects as a demanding user makes them: raw routed requests of every wrong
 * shape, requests of an older or newer sender, values near the bounds carried between Objects
 * whose limits differ from their senders', and an Object that cannot start.
 */
import { describe, expect, it } from "@effect/vitest"
import { env } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import type { RpcResult } from "../../src/internal/object/rpc.ts"
import {
  allAtRest,
  clientOf,
  deliverAll,
  failureOf,
  inState,
  stubOf,
  storedMaintenance,
  threadName,
} from "./support.ts"

const portCall = (objectName: string, envelope: unknown) =>
  Effect.promise(() => stubOf(objectName).portCall(envelope) as Promise<RpcResult>)

describe("calls between Objects", () => {
  it.live("refuses every malformed routed request by name, and writes nothing", () =>
    Effect.gen(function* () {
      const object = threadName("port-raw")
      const before = yield* storedMaintenance(object)
      const abort = { _tag: "AbortChild", threadId: "t", idempotencyKey: "k" }
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [null, "Expected object"],
        ["abort", "Expected object"],
        [{ request: abort }, "messageId"],
        [{ messageId: 7, request: abort }, "messageId"],
        [{ messageId: "", request: abort }, "messageId"],
        [{ messageId: "m".repeat(513), request: abort }, "512"],
        [{ messageId: "m" }, "request"],
        [{ messageId: "m", request: { ...abort, _tag: "DeleteEverything" } }, "_tag"],
        [{ messageId: "m", request: { ...abort, threadId: 42 } }, "threadId"],
        [{ messageId: "m", request: { ...abort, idempotencyKey: "k\u0000" } }, "idempotencyKey"],
        [{ messageId: "m", request: abort, extra: 1n }, "not JSON-serializable"],
      ]
      for (const [envelope, named] of cases) {
        const result = yield* portCall(object, envelope)
        expect(result.ok, JSON.stringify(named)).toBe(false)
        const error = (result as { readonly error: { reason: string; message: string } }).error
        expect(error).toMatchObject({ _tag: "PortProtocolError", reason: "malformed-request" })
        expect(error.message, named).toContain(named)
      }
      expect(yield* storedMaintenance(object)).toEqual(before)
    }),
  )

  it.live(
    "accepts a request of an older sender (optional fields missing) or a newer one (extra fields)",
    () =>
      Effect.gen(function* () {
        const object = threadName("port-versions")
        const older = yield* portCall(object, {
          messageId: "a1",
          request: { _tag: "AbortChild", threadId: "t", idempotencyKey: "k" },
        })
        expect(older).toEqual({ ok: true, value: { _tag: "ChildAbortRecorded", known: false } })
        const newer = yield* portCall(object, {
          messageId: "a2",
          sentAt: 1,
          request: { _tag: "DescribeChild", threadId: "t", idempotencyKey: "k", since: 3 },
        })
        expect(newer).toEqual({ ok: true, value: { _tag: "ChildDescribed" } })
      }),
  )

  it.live("returns a child's output larger than the parent's input limit, within maxStoredValueBytes", () =>
    Effect.gen(function* () {
      // The test Object takes inputs of at most 4,096 bytes and stores values up to 128 KiB: a
      // child's output of 100,000 characters is a legal settlement its parent must hear.
      const parentObject = threadName("big-output-parent")
      const childObject = threadName("big-output-child")
      const stubs = [stubOf(parentObject), stubOf(childObject)]
      const parent = clientOf("desk", parentObject)
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "big-output",
        input: {
          children: [{ agentId: "inflate", input: { n: 100_000 }, objectName: childObject, threadId: "big" }],
        },
      })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement.outcome).toBe("completed")
      expect(settlement.output).toEqual([`completed:${JSON.stringify("x".repeat(100_000))}`])
      yield* deliverAll(stubs, allAtRest(stubs))
    }),
  )

  it.live("refuses a child whose input is over its Thread's limit with the reason input-bytes", () =>
    Effect.gen(function* () {
      const parentObject = threadName("big-input-parent")
      const childObject = threadName("big-input-child")
      const stubs = [stubOf(parentObject), stubOf(childObject)]
      const parent = clientOf("desk", parentObject)
      const receipt = yield* parent.submit({
        agentId: "spawner",
        idempotencyKey: "big-input",
        input: {
          children: [
            { agentId: "echo", input: {}, textLength: 100_000, objectName: childObject, threadId: "big" },
          ],
        },
      })
      yield* deliverAll(stubs, inState(parent, receipt.submissionId, "settled"))
      const settlement = yield* parent.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement.output).toEqual([expect.stringMatching(/^failed:.*:input-bytes$/)])
      expect((yield* clientOf("big", childObject).threadStatus).nonterminal).toBe(0)
    }),
  )

  it.live("answers every call of an Object that cannot start with a typed error naming why", () =>
    Effect.gen(function* () {
      const client = ThreadClient.make(env.THREADS_MISNAMED, threadName("misnamed"))
      const calls: ReadonlyArray<Effect.Effect<unknown, ThreadClient.ThreadClientError>> = [
        client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } }),
        client.threadStatus,
      ]
      for (const call of calls) {
        const failure = failureOf(yield* Effect.exit(call))
        expect(failure).toMatchObject({
          _tag: "ThreadObjectUnavailable",
          message: expect.stringContaining('Invalid "namespaceBinding": env.THREADS'),
        })
      }
    }),
  )
})
