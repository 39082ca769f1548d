/**
 * A child whose input is over its Thread's `limits.maxInputBytes` is refused (`input-bytes`) and
 * its parent gets the refusal as a value, whatever the size: one over the 2 MB a row holds too.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { bigParentAgent } from "../worker/userObject.ts"
import { deliverUntil, stateIs, uniqueName, userClient } from "./support.ts"

describe("a child's input over the limits", () => {
  for (const size of [1_100_000, 2_500_000])
    it.live(`a child input of ${size} characters is refused input-bytes; the parent settles`, () =>
      Effect.gen(function* () {
        const parentObject = uniqueName("big-parent")
        const childObject = uniqueName("big-child")
        const parent = userClient("desk", parentObject)
        const receipt = yield* parent
          .agent(bigParentAgent)
          .submit({ size, childObject }, { idempotencyKey: `big-${size}` })
        yield* deliverUntil(
          [parentObject, childObject],
          stateIs(parent, receipt.submissionId, "settled"),
          100,
          "parent settled",
        )
        expect(yield* parent.agent(bigParentAgent).awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
          outcome: "completed",
          output: "failed:input-bytes",
        })
        expect((yield* parent.verify).violations).toEqual([])
      }),
      60_000,
    )
})
