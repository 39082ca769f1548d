/**
 * A program that fails (or dies) with a very large message, such as a provider's error body:
 * the Submission settles `failed` whatever the size; a message over `maxStoredValueBytes`
 * (128 KiB here) is stored as its size and its start, as a step's error is.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { loudFailureAgent } from "../worker/userObject.ts"
import { deliverUntil, stateIs, uniqueName, userClient } from "./support.ts"

describe("a program's failure message at any size", () => {
  for (const defect of [false, true])
    for (const size of [200_000, 2_500_000])
      it.live(
        `${defect ? "a defect" : "a failure"} of ${size} characters settles failed`,
        () =>
          Effect.gen(function* () {
            const thread = uniqueName("loud")
            const client = userClient(thread)
            const receipt = yield* client
              .agent(loudFailureAgent)
              .submit({ size, defect }, { idempotencyKey: "loud" })
            yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "settled"), 100, "settled")
            const settled = yield* client.awaitSettlement(receipt.submissionId, 1_000)
            expect(settled.outcome).toBe("failed")
            if (size > 131_072)
              expect(settled.error).toMatch(/^the error is \d+ bytes; the limit is 131072; it begins: /)
            else expect(settled.error).toContain("e".repeat(size))
            expect((yield* client.verify).violations).toEqual([])
          }),
        30_000,
      )
})
