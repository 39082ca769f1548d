/**
 * Agents of the runtime suites. Each records how often each of its effects ran, so a test can
 * prove that replay never runs a completed step again.
 */
import { Deferred, Effect, Ref, Schema } from "effect"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"

/** How many times each named effect ran. */
export type Runs = Ref.Ref<Readonly<Record<string, number>>>

export const makeRuns: Effect.Effect<Runs> = Ref.make<Readonly<Record<string, number>>>({})

/** Counts one run of `name`. */
export const ran = (runs: Runs, name: string) =>
  Ref.update(runs, (all) => ({ ...all, [name]: (all[name] ?? 0) + 1 }))

/** The count of every effect that ran. */
export const runsOf = (runs: Runs) => Ref.get(runs)

const Input = Schema.Struct({ n: Schema.Int })

/** Three steps that add to the input; its output is their sum. */
export const threeSteps = (runs: Runs, options: { readonly pause?: Effect.Effect<void> } = {}) =>
  define({
    id: "three-steps",
    version: "1",
    input: Input,
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const one = yield* ctx.step("one", Effect.as(ran(runs, "one"), n + 1))
        const two = yield* ctx.step(
          "two",
          Effect.as(Effect.andThen(ran(runs, "two"), options.pause ?? Effect.void), n + 2),
        )
        const three = yield* ctx.step("three", Effect.as(ran(runs, "three"), n + 3))
        return one + two + three
      }),
  })

/** A step, an uncertain external charge, and a step after it. */
export const charging = (runs: Runs) =>
  define({
    id: "charging",
    version: "1",
    input: Input,
    output: Schema.Struct({ receipt: Schema.String, note: Schema.String }),
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        yield* ctx.step("prepare", Effect.as(ran(runs, "prepare"), n))
        const receipt = yield* ctx
          .uncertainStep("charge", Effect.as(ran(runs, "charge"), `charged-${n}`), { result: Schema.String })
          .pipe(Effect.catchTag("AgentFailure", (failure) => Effect.succeed(`refused: ${failure.message}`)))
        const note = yield* ctx.step("after", Effect.as(ran(runs, "after"), "done"))
        return { receipt, note }
      }),
  })

/** Drafts, asks for approval, then publishes with the reviewer's note. */
export const reviewed = (runs: Runs) =>
  define({
    id: "reviewed",
    version: "1",
    input: Input,
    output: Schema.String,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const draft = yield* ctx.step("draft", Effect.as(ran(runs, "draft"), `draft-${n}`))
        const decision = yield* ctx.requestApproval({ draft })
        return yield* ctx.step(
          "publish",
          Effect.as(ran(runs, "publish"), `${draft} published (${decision.note ?? "no note"})`),
        )
      }),
  })

/** One step that waits for `gate`, then a second step. */
export const gated = (runs: Runs, gate: Deferred.Deferred<void>) =>
  define({
    id: "gated",
    version: "1",
    input: Input,
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const first = yield* ctx.step(
          "wait",
          Effect.as(Effect.andThen(ran(runs, "wait"), Deferred.await(gate)), n),
        )
        return yield* ctx.step("finish", Effect.as(ran(runs, "finish"), first + 1))
      }),
  })

/** Steps that each take `millis` of (virtual) time. */
export const slow = (runs: Runs, millis: number, steps = 3) =>
  define({
    id: "slow",
    version: "1",
    input: Input,
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        let total = n
        for (let index = 0; index < steps; index++) {
          total += yield* ctx.step(
            `slow-${index}`,
            Effect.as(Effect.andThen(ran(runs, `slow-${index}`), Effect.sleep(millis)), index),
          )
        }
        return total
      }),
  })

/** Fails with an `AgentFailure` after one step. */
export const failing = (runs: Runs) =>
  define({
    id: "failing",
    version: "1",
    input: Input,
    output: Schema.Int,
    program: (_input, ctx) =>
      Effect.gen(function* () {
        yield* ctx.step("try", Effect.as(ran(runs, "try"), 1))
        return yield* new AgentFailure({ message: "the agent gave up" })
      }),
  })

/** An agent that is echoed back as its output. */
export const echo = define({
  id: "echo",
  version: "1",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  program: ({ text }) => Effect.succeed(text),
})

/** The contract of `threeSteps` (same digest) whose first step has another name. */
export const renamedSteps = (runs: Runs) =>
  define({
    id: "three-steps",
    version: "1",
    input: Input,
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const one = yield* ctx.step("uno", Effect.as(ran(runs, "uno"), n + 1))
        return one
      }),
  })
