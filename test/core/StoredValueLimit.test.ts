import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { define } from "../../src/core/AgentRegistration.ts"
import { entriesOf, processToSettlement, submitTo } from "./runtimeFixtures.ts"
import { runtimeHarnesses } from "./runtimeHarness.ts"

const Input = Schema.Struct({ size: Schema.Int, catchIt: Schema.Boolean })

/** A step whose result is `size` characters long, and an output of `size` characters too. */
const sized = define({
  id: "sized",
  version: "1",
  input: Input,
  output: Schema.String,
  program: ({ size, catchIt }, ctx) =>
    Effect.gen(function* () {
      const result = ctx.step("large", Effect.succeed("r".repeat(size)))
      const stored = yield* catchIt
        ? result.pipe(Effect.catchTag("AgentFailure", (failure) => Effect.succeed(failure.message)))
        : result
      return stored.length > 0 ? "o".repeat(size) : ""
    }),
})

const config = { maxStoredValueBytes: 64 }

for (const harness of runtimeHarnesses) {
  describe(`stored value bound (${harness.label})`, () => {
    it.effect("fails a step whose result is over maxStoredValueBytes, journaling why", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents: [sized], config })
          const receipt = yield* submitTo(incarnation, "lane", "sized", "k", { size: 100, catchIt: false })
          const settlement = yield* processToSettlement(incarnation, "lane")
          // 100 characters and two quotes: the JSON the history would store.
          const message = 'the result of step "large" is 102 bytes; the limit is 64'
          expect(settlement).toMatchObject({ outcome: "failed", error: message })
          const entries = yield* entriesOf(incarnation, receipt.submissionId)
          expect(entries.find((entry) => entry._tag === "StepFailed")).toMatchObject({
            name: "large",
            error: message,
          })
          expect(entries.some((entry) => entry._tag === "StepCompleted")).toBe(false)
        }),
      ),
    )

    it.effect("lets the program handle the refused result like any step failure", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents: [sized], config })
          yield* submitTo(incarnation, "lane", "sized", "k", { size: 62, catchIt: true })
          // The step result (64 bytes) fits exactly; the output (64 bytes) too.
          expect(yield* processToSettlement(incarnation, "lane")).toMatchObject({ outcome: "completed" })
        }),
      ),
    )

    it.effect("fails a Submission whose output is over maxStoredValueBytes, naming it", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents: [sized], config })
          yield* submitTo(incarnation, "lane", "sized", "k", { size: 63, catchIt: true })
          // The step's result is refused and caught; the output, 63 characters, is 65 bytes of JSON.
          const settlement = yield* processToSettlement(incarnation, "lane")
          expect(settlement).toMatchObject({
            outcome: "failed",
            error: "the output is 65 bytes; the limit is 64",
          })
          expect(settlement.output).toBeUndefined()
        }),
      ),
    )
  })
}
