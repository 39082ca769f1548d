/**
 * Call names a program builds from data: one too large for its record (over
 * `maxStoredValueBytes`) is a defect naming it, as is a wait for an event name no sender may
 * use (too long, or with a control character); the Submission settles `failed` instead of
 * failing every pass or waiting for good.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { longNameAgent } from "../worker/userObject.ts"
import { deliverUntil, stateIs, uniqueName, userClient } from "./support.ts"

const run = (size: number, call: "step" | "sleep" | "uncertain" | "wait", name?: string) =>
  Effect.gen(function* () {
    const thread = uniqueName("names")
    const client = userClient(thread)
    const receipt = yield* client
      .agent(longNameAgent)
      .submit({ size, call, ...(name === undefined ? {} : { name }) }, { idempotencyKey: "n" })
    yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "settled"), 60, "settled")
    return yield* client.awaitSettlement(receipt.submissionId, 1_000)
  })

describe("call names", () => {
  for (const call of ["step", "sleep", "uncertain"] as const) {
    it.live(`a ${call} named by 1,000 characters runs`, () =>
      Effect.map(run(1_000, call), (settled) => expect(settled.outcome).toBe("completed")),
    )
    it.live(`a ${call} named by 2.5 million characters is a defect naming its size`, () =>
      Effect.map(run(2_500_000, call), (settled) => {
        expect(settled.outcome).toBe("failed")
        expect(settled.error).toMatch(/is 2500002 bytes; the limit is 131072/)
      }),
    )
  }

  it.live("a wait for an event name of 128 characters runs (and times out)", () =>
    Effect.map(run(128, "wait"), (settled) => expect(settled).toMatchObject({ output: "waited" })),
  )

  it.live("a wait for an event name no sender may use is a defect naming the limit", () =>
    Effect.map(run(129, "wait"), (settled) => {
      expect(settled.outcome).toBe("failed")
      expect(settled.error).toContain("an event name has 1 to 128 characters, got 129")
    }),
  )

  // A sender could not send it (`InvalidRequest`): the wait could only time out or park for good.
  for (const [label, name] of [
    ["a NUL", "a\u0000b"],
    ["a C1 control", "a\u0085b"],
  ] as const) {
    it.live(`a wait for an event name with ${label} is a defect naming the rule`, () =>
      Effect.map(run(0, "wait", name), (settled) => {
        expect(settled.outcome).toBe("failed")
        expect(settled.error).toContain("waitForEvent: an event name has no control characters")
      }),
    )
  }
})
