/**
 * The call table's dispatch, end to end over Workers RPC: every call of the table is a method
 * of the Object, decodes its request and its caller before anything runs, and answers a failure
 * inside the Object as a `ThreadObjectFailure` with a reason, never by its internal tag.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { CALL_NAMES } from "../../src/internal/object/calls.ts"
import type { RpcResult } from "../../src/internal/object/rpc.ts"
import type { ThreadObjectRpc } from "../../src/ThreadObject.ts"
import { switchboard } from "../worker/threadObject.ts"
import { built, clientOf, failureOf, ledgerRows, storedMaintenance, stubOf, threadName } from "./support.ts"

const refusal = (result: RpcResult) =>
  result.ok ? undefined : (result.error as { _tag: string; entryPoint: string; message: string })

describe("ThreadObject calls", () => {
  it.live("refuses a malformed request to every call with InvalidRequest naming it, writing nothing", () =>
    Effect.gen(function* () {
      const thread = threadName("malformed")
      const client = clientOf(thread)
      // Built and at rest (a new Object starts with a clean record and no alarm), so that the
      // record and the alarm stand still however long the calls below take.
      yield* built(client)
      const before = yield* storedMaintenance(thread)
      expect(before.alarm).toBeNull()
      const rpc = stubOf(thread) as unknown as ThreadObjectRpc
      expect(CALL_NAMES.length).toBeGreaterThan(0)
      for (const name of CALL_NAMES) {
        const result = yield* Effect.promise(() => rpc[name](null))
        expect(refusal(result), name).toMatchObject({ _tag: "InvalidRequest", entryPoint: name })
        // A well-formed request with a malformed caller is refused too.
        const badCaller = yield* Effect.promise(() => rpc[name]({ threadId: thread }, { subject: "" }))
        expect(refusal(badCaller), name).toMatchObject({ _tag: "InvalidRequest", entryPoint: name })
        expect(refusal(badCaller)?.message, name).toContain("caller")
      }
      expect(yield* ledgerRows(thread)).toEqual([])
      expect(yield* storedMaintenance(thread)).toEqual(before)
    }),
  )

  it.live("reports a mutation that could not arm its alarm as a ThreadObjectFailure: nothing ran", () =>
    Effect.gen(function* () {
      const thread = threadName("unarmed")
      const client = clientOf(thread)
      yield* built(client)
      const id = stubOf(thread).id
      switchboard.install(id, {
        storage: (location, detail) => {
          if (location === "storage:kv:before" && detail.startsWith("effect-agent:thread-maintenance")) {
            throw new Error("refused by the test")
          }
        },
      })
      const failure = failureOf(
        yield* Effect.exit(
          client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } }),
        ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(id)))),
      )
      expect(failure).toMatchObject({ _tag: "ThreadObjectFailure", entryPoint: "submit", reason: "alarm" })
      // The internal error stays inside the Object: neither its tag nor its message crosses.
      expect(JSON.stringify(failure)).not.toContain("DurableAlarmError")
      expect(JSON.stringify(failure)).not.toContain("refused by the test")
      expect(yield* ledgerRows(thread)).toEqual([])
      // Once the storage works again, the same submission is admitted.
      expect(
        yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } }),
      ).toMatchObject({ replayed: false })
    }),
  )
})
