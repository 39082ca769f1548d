/**
 * A `ThreadObject` for the entry-point suites: small agents, and failpoints a test installs
 * per Object id (a switchboard in the test isolate, so it survives `abortAllDurableObjects`).
 */
import { Effect, Schema } from "effect"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import * as Testing from "../../src/Testing.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"
import { Unauthorized } from "../../src/ThreadClient.ts"

/** How many times each agent effect ran, by Object id and effect name. */
export const effectRuns = new Map<string, number>()
const ran = (key: string) => Effect.sync(() => effectRuns.set(key, (effectRuns.get(key) ?? 0) + 1))

/** Echoes its text after one journaled step. */
export const echoAgent = define({
  id: "echo",
  version: "1",
  input: Schema.Struct({ text: Schema.String, fail: Schema.optionalKey(Schema.Boolean) }),
  output: Schema.String,
  program: ({ text, fail }, ctx) =>
    Effect.gen(function* () {
      const echoed = yield* ctx.step("echo", Effect.as(ran(`${ctx.submissionId}:echo`), `echo: ${text}`))
      if (fail === true) return yield* new AgentFailure({ message: `refused ${text}` })
      return echoed
    }),
})

/** Waits for an approval, then reports the reviewer's note. */
export const reviewAgent = define({
  id: "review",
  version: "1",
  input: Schema.Struct({ draft: Schema.String }),
  output: Schema.String,
  program: ({ draft }, ctx) =>
    Effect.gen(function* () {
      const decision = yield* ctx.requestApproval({ draft })
      return `${draft} approved (${decision.note ?? "no note"})`
    }),
})

/** Failpoints a test installs on one Object by its id. */
export const switchboard = Testing.makeSwitchboard()

export class TestThreadObject extends ThreadObject.make(ThreadObject.layer([echoAgent, reviewAgent]), {
  config: { limits: { maxInputBytes: 4_096, maxQueueDepthPerLane: 3 } },
  failpoints: switchboard,
}) {}

/** The operator's token of `AuthorizedThreadObject`. */
export const operatorToken = "operator-token-for-tests"

/** The same agents behind a bearer-token policy for every privileged entry point. */
export class AuthorizedThreadObject extends ThreadObject.make(ThreadObject.layer([echoAgent, reviewAgent]), {
  authorization: ({ caller, entryPoint }) =>
    caller?.credential === operatorToken
      ? Effect.void
      : Effect.fail(
          new Unauthorized({
            entryPoint,
            message: caller === undefined ? "no caller identity" : `${caller.subject} may not ${entryPoint}`,
          }),
        ),
}) {}
