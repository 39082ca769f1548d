/**
 * `awaitProgress` takes back only a token it answered: one of another shape is refused as
 * `InvalidRequest` naming `after`, rather than read as "from the start" and answered with the
 * Submission's whole journal as if it had changed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { clientOf, deliverUntil, inState, threadName } from "./support.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined

describe("ThreadObject: progress tokens", () => {
  it.live("refuses a token it did not answer, naming after, and takes back the ones it did", () =>
    Effect.gen(function* () {
      const thread = threadName("progress-token")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "t" } })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      for (const after of ["garbage", "", "1.x", "1.2.3", "-1.0.settled.0", "1.0.settled.0 "]) {
        const failure = failureOf(
          yield* Effect.exit(client.awaitProgress(receipt.submissionId, { after, timeoutMillis: 0 })),
        )
        expect(failure, JSON.stringify(after)).toMatchObject({
          _tag: "InvalidRequest",
          entryPoint: "awaitProgress",
        })
        expect((failure as unknown as { message: string }).message).toContain("after")
      }
      const first = yield* client.awaitProgress(receipt.submissionId, { timeoutMillis: 0 })
      expect(first.records.length).toBeGreaterThan(0)
      const again = yield* client.awaitProgress(receipt.submissionId, {
        after: first.token,
        timeoutMillis: 0,
      })
      expect(again).toMatchObject({ changed: false, records: [] })
    }),
  )
})
