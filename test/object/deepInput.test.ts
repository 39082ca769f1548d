/**
 * A request whose JSON nests deeper than the Object will parse is the request's fault: it is
 * refused as `InvalidRequest` naming the depth, not reported as an unreachable Object
 * (`ThreadObjectUnavailable`, which a caller retries), and nothing is written.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { clientOf, ledgerRows, storedMaintenance, threadName } from "./support.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined

/** `[[[…]]]`, `depth` arrays deep. */
const nested = (depth: number): unknown => {
  let value: unknown = []
  for (let i = 1; i < depth; i++) value = [value]
  return value
}

describe("ThreadObject: deeply nested input", () => {
  it.live("refuses a 5,000-deep input as InvalidRequest naming its depth, writing nothing", () =>
    Effect.gen(function* () {
      const thread = threadName("deep")
      const client = clientOf(thread)
      const before = yield* storedMaintenance(thread)
      const exit = yield* Effect.exit(
        client.submit({
          agentId: "echo",
          idempotencyKey: "k",
          input: { text: "x", deep: nested(5_000) } as never,
        }),
      )
      const failure = failureOf(exit)
      expect(failure, String(exit)).toMatchObject({ _tag: "InvalidRequest", entryPoint: "submit" })
      expect((failure as { message: string }).message).toContain("nests 5002 levels deep")
      expect(yield* ledgerRows(thread)).toEqual([])
      expect(yield* storedMaintenance(thread)).toEqual(before)
    }),
  )

  it.live("refuses a too-deep event payload or resolution the same way, keeping the Submission", () =>
    Effect.gen(function* () {
      const thread = threadName("deep-calls")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      // Settled first, so the alarm that runs it cannot move the row during the refused calls
      // (their refusal is in the caller's clone of the request, whatever the row's state).
      yield* client.awaitSettlement(receipt.submissionId, 10_000)
      const before = yield* ledgerRows(thread)
      for (const call of [
        client.sendEvent(receipt.submissionId, "shipped", nested(10_000) as never),
        client.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: nested(10_000) as never }),
      ]) {
        const failure = failureOf(
          yield* Effect.exit(call as Effect.Effect<unknown, { readonly _tag: string }>),
        )
        expect(failure).toMatchObject({ _tag: "InvalidRequest" })
        expect((failure as unknown as { message: string }).message).toContain("levels deep")
      }
      expect(yield* ledgerRows(thread)).toEqual(before)
    }),
  )
})
