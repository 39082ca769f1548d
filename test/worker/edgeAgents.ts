/**
 * Agents of `TestThreadObject` for the edges of values and names: numbers JSON cannot carry, and
 * an event name a test changes, as a newer release would, under a wait already recorded.
 */
import { Effect, Schema } from "effect"
import { define, type AgentDefinition } from "../../src/core/AgentRegistration.ts"

/**
 * The event name `replayWaitAgent` waits for: a test names it, as the program of an older
 * release did, so that a record stored under that release can be replayed.
 */
export const replayWaitName = { current: "shipped" }

/** Waits for the event `replayWaitName` names (a string), then for an approval; answers the event. */
export const replayWaitAgent = define({
  id: "replay-wait",
  version: "1",
  input: Schema.Struct({}),
  output: Schema.String,
  program: (_, ctx) =>
    Effect.gen(function* () {
      const value = yield* Effect.orDie(ctx.waitForEvent(replayWaitName.current, Schema.String))
      yield* ctx.requestApproval({ after: value })
      return value
    }),
})

/**
 * Divides `a` by `b`, in a step with a number result when `inStep`, or by a child (in the Thread
 * `child`) it gives the quotient and 1: 0/0 is NaN and 1/0 is Infinity, numbers `Schema.Number`
 * encodes but JSON cannot carry.
 */
export const ratioAgent: AgentDefinition<
  { readonly a: number; readonly b: number; readonly inStep?: boolean; readonly child?: string },
  number
> = define({
  id: "ratio",
  version: "1",
  input: Schema.Struct({
    a: Schema.Number,
    b: Schema.Number,
    inStep: Schema.optionalKey(Schema.Boolean),
    child: Schema.optionalKey(Schema.String),
  }),
  output: Schema.Number,
  program: ({ a, b, inStep, child }, ctx) =>
    Effect.gen(function* () {
      if (inStep === true)
        return yield* ctx.step(
          "divide",
          Effect.sync(() => a / b),
          { result: Schema.Number },
        )
      if (child === undefined) return a / b
      const started = yield* ctx.startChild({
        agent: ratioAgent,
        input: { a: a / b, b: 1 },
        thread: { objectName: child, threadId: child },
      })
      const settled = yield* ctx.awaitChild(started)
      return settled.outcome === "completed" ? settled.output : -1
    }),
})
