/**
 * A child whose input is over its Thread's `limits.maxInputBytes` is refused there
 * (`input-bytes`) and its parent gets the refusal as a value; one over what any Thread admits
 * (and what the parent's `ChildStarted` record can hold) fails `startChild`, naming its size,
 * instead of a record no row can hold failing every pass. Either way the parent settles.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { decodeCloudflareRuntimeConfig } from "../../src/CloudflareConfig.ts"
import { MAX_INPUT_BYTES_CEILING } from "../../src/core/internal/rowBytes.ts"
import { bigParentAgent } from "../worker/userObject.ts"
import { deliverUntil, stateIs, uniqueName, userClient } from "./support.ts"

const parentOf = (size: number) =>
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
    expect((yield* parent.verify).violations).toEqual([])
    return yield* parent.agent(bigParentAgent).awaitSettlement(receipt.submissionId, 1_000)
  })

describe("a child's input over the limits", () => {
  it.live(
    "over the child Thread's limit: refused input-bytes, a value the parent reads",
    () =>
      Effect.gen(function* () {
        expect(yield* parentOf(1_100_000)).toMatchObject({
          outcome: "completed",
          output: "failed:input-bytes",
        })
      }),
    30_000,
  )

  it.live(
    "over what any Thread admits: startChild fails naming its size; the parent settles",
    () =>
      Effect.gen(function* () {
        const settled = yield* parentOf(2_500_000)
        expect(settled.outcome).toBe("failed")
        expect(settled.error).toContain(
          "the input of child agent poll is 2500013 bytes; no Thread admits more than 1934464",
        )
      }),
    30_000,
  )

  it.effect("the bound is the most limits.maxInputBytes a configuration may set", () =>
    Effect.gen(function* () {
      const at = { limits: { maxInputBytes: MAX_INPUT_BYTES_CEILING - 1 }, maxStoredValueBytes: 1 }
      yield* decodeCloudflareRuntimeConfig(at)
      const over = { limits: { maxInputBytes: MAX_INPUT_BYTES_CEILING }, maxStoredValueBytes: 1 }
      expect(yield* Effect.flip(decodeCloudflareRuntimeConfig(over))).toMatchObject({
        field: "limits.maxInputBytes",
      })
    }),
  )
})
