/**
 * An approval request's payload is stored in its record: one within `maxStoredValueBytes` parks
 * the Submission for a decision; one larger settles it `failed` naming the size, instead of a
 * record no row can hold failing every pass.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { draftReviewAgent } from "../worker/userObject.ts"
import { deliverUntil, stateIs, uniqueName, userClient } from "./support.ts"

describe("an approval request's payload", () => {
  it.live(
    "within maxStoredValueBytes it parks for a decision",
    () =>
      Effect.gen(function* () {
        const thread = uniqueName("draft-small")
        const client = userClient(thread)
        const receipt = yield* client
          .agent(draftReviewAgent)
          .submit({ size: 100_000 }, { idempotencyKey: "d" })
        yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "suspended"), 100, "parked")
        yield* client.resolveApproval(receipt.submissionId, { approved: true })
        yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "settled"), 100, "settled")
        expect((yield* client.awaitSettlement(receipt.submissionId, 1_000)).outcome).toBe("completed")
      }),
    30_000,
  )

  it.live(
    "over what a row holds it fails the Submission, naming the size",
    () =>
      Effect.gen(function* () {
        const thread = uniqueName("draft-huge")
        const client = userClient(thread)
        const receipt = yield* client
          .agent(draftReviewAgent)
          .submit({ size: 2_500_000 }, { idempotencyKey: "d" })
        yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "settled"), 100, "settled")
        const settled = yield* client.awaitSettlement(receipt.submissionId, 1_000)
        expect(settled.outcome).toBe("failed")
        expect(settled.error).toMatch(/approval request at call 0 is 2500012 bytes; the limit is 131072/)
        expect((yield* client.verify).violations).toEqual([])
      }),
    30_000,
  )
})
