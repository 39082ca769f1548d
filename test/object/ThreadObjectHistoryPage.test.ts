/**
 * `history` answers a page of a Thread's records: when the records of a page together are over
 * the 32 MiB a call can carry (inputs of up to `limits.maxInputBytes` each), the page stops early
 * with `next`, instead of failing the call with `InvalidRequest` whatever the caller retries.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { env } from "cloudflare:test"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { threadName } from "./support.ts"

describe("ThreadObject history over what a call can carry", () => {
  it.live(
    "answers a page of large records short, with next, and every record across the pages",
    () =>
      Effect.gen(function* () {
        const thread = threadName("history-large")
        // The default limits (inputs of up to 1 MiB, each in its acceptance record), no retention.
        const client = ThreadClient.make(env.THREADS_WAKE, thread)
        const text = "x".repeat(1_000_000)
        const count = 34
        for (let i = 0; i < count; i++)
          yield* client.submit({ agentId: "echo", idempotencyKey: `k${i}`, input: { text } })
        const sequences: Array<number> = []
        let after: number | undefined
        for (let page = 0; page < 100; page++) {
          const answer = yield* client.history({ ...(after === undefined ? {} : { after }), limit: 500 })
          expect(answer.records.length).toBeGreaterThan(0)
          sequences.push(...answer.records.map((record) => record.sequence))
          after = answer.next
          if (after === undefined) break
        }
        // Every record once, in order, the 36 acceptances among them.
        expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1))
        expect(sequences.length).toBeGreaterThanOrEqual(count)
      }),
    60_000,
  )
})
