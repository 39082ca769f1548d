/**
 * A reconcile that answers with a very large value (the provider's whole record) or fails with a
 * very large message: its answer is journaled like the step's own result, so a value over
 * `maxStoredValueBytes` is not taken as the result (the live step would have refused it) but left
 * to an operator, naming its size, and a long message is cut; the record is always written.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Reconcile, type ReconcileAnswer } from "../../src/core/AgentContext.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import { entriesOf, processHead, recover, rowOf, submitTo } from "../core/runtimeFixtures.ts"
import { runtimeHarnesses, type RuntimeWorld } from "../core/runtimeHarness.ts"
import { freezeAt } from "../support/switchboard.ts"

const reconciled = (answer: Ref.Ref<ReconcileAnswer<string> | string>) =>
  define({
    id: "reconciled",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.String,
    program: (_input, ctx) =>
      ctx.uncertainStep("charge", Effect.succeed("charged"), {
        result: Schema.String,
        reconcileAttempts: 1,
        reconcile: Effect.flatMap(Ref.get(answer), (next) =>
          typeof next === "string" ? Effect.fail(new AgentFailure({ message: next })) : Effect.succeed(next),
        ),
      }),
  })

/** The answer journaled for a charge cut by a crash, reconciled by `answer`. */
const answered = (world: RuntimeWorld, answer: ReconcileAnswer<string> | string) =>
  Effect.gen(function* () {
    const script = yield* Ref.make(answer)
    const crash = yield* freezeAt("uncertain:after-start-append")
    const first = yield* world.incarnation({ agents: [reconciled(script)], failpoint: crash.handler })
    const head = yield* submitTo(first, "lane", "reconciled", "charge", { n: 1 })
    yield* Effect.forkDetach(processHead(first, "lane"))
    yield* crash.reached
    yield* TestClock.adjust(30_001)
    const second = yield* world.incarnation({ agents: [reconciled(script)] })
    yield* recover(second)
    yield* processHead(second, "lane")
    const entries = yield* entriesOf(second, head.submissionId)
    const record = entries.find((entry) => entry._tag === "ReconcileAnswered") as
      | { readonly answer: { readonly _tag: string; readonly reason?: string; readonly message?: string } }
      | undefined
    return { answer: record?.answer, state: (yield* rowOf(second, head.submissionId)).state }
  })

for (const harness of runtimeHarnesses) {
  describe(`reconcile answers at any size (${harness.label})`, () => {
    for (const size of [200_000, 2_500_000])
      it.effect(`a found value of ${size} characters is left to an operator, naming its size`, () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const { answer, state } = yield* answered(world, Reconcile.happened("v".repeat(size)))
            expect(answer?._tag).toBe("CannotTell")
            expect(answer?.reason).toContain(`is ${size + 2} bytes; the limit is 131072`)
            expect(state).toBe("unknown")
          }),
        ),
      )

    it.effect("a failure of 2.5 million characters is journaled cut to its size and start", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { answer } = yield* answered(world, "f".repeat(2_500_000))
          expect(answer?._tag).toBe("Failed")
          expect(answer?.message).toMatch(/^the error is 2500002 bytes; the limit is 131072; it begins: f+$/)
        }),
      ),
    )
  })
}
