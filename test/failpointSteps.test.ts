/**
 * A runtime handler that fails (typed, or dies) in an Attempt stands for a cut, as docs/agents.md
 * states it for each kind of step: a plain step cut before its result is journaled runs again
 * (at least once); an uncertain step journaled as started never runs twice, and its cut is an
 * Unknown Outcome. Neither settles the Submission as the program's own failure.
 */
import { runDurableObjectAlarm } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  DurableRuntimeFailpointError,
  runAlarmsUntilQuiet,
  type RuntimeFailpointLocation,
} from "../src/Testing.ts"
import { clientOf, stubOf, threadName } from "./object/support.ts"
import { effectRuns, switchboard } from "./worker/threadObject.ts"

const quiet = (thread: string) =>
  runAlarmsUntilQuiet({ client: clientOf(thread), runAlarm: () => runDurableObjectAlarm(stubOf(thread)) })

/** Fails the `nth` hit of `location` once, typed or as a defect. */
const failNth = (thread: string, location: RuntimeFailpointLocation, nth: number, kind: "fail" | "die") => {
  let hits = 0
  switchboard.install(stubOf(thread).id, {
    runtime: (hit) =>
      hit === location && ++hits === nth
        ? kind === "fail"
          ? Effect.fail(new DurableRuntimeFailpointError({ location: hit, message: "injected" }))
          : Effect.die(new Error("injected"))
        : Effect.void,
  })
}

describe("step vs uncertainStep under an injected failure", () => {
  for (const kind of ["fail", "die"] as const) {
    it.live(`a step cut before its result is journaled runs again (${kind})`, () =>
      Effect.gen(function* () {
        const thread = threadName("step-cut")
        const client = clientOf(thread)
        failNth(thread, "history:append:before", 1, kind)
        const { submissionId } = yield* client.submit({
          agentId: "echo",
          idempotencyKey: "k",
          input: { text: "x" },
        })
        yield* quiet(thread).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))))
        expect((yield* client.status(submissionId)).state).toBe("settled")
        expect(effectRuns.get(`${submissionId}:echo`)).toBe(2)
      }),
    )

    it.live(`an uncertain step cut after its effect is an Unknown Outcome, not run again (${kind})`, () =>
      Effect.gen(function* () {
        const thread = threadName("uncertain-cut")
        const client = clientOf(thread)
        // The first append is InputApplied with UncertainStepStarted; the second the result.
        failNth(thread, "history:append:before", 2, kind)
        const { submissionId } = yield* client.submit({
          agentId: "charge",
          idempotencyKey: "k",
          input: { amount: 5 },
        })
        yield* quiet(thread).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))))
        expect(effectRuns.get(`${submissionId}:charge`)).toBe(1)
        expect((yield* client.explain(submissionId)).reason._tag).toBe("UnknownOutcome")
      }),
    )

    it.live(`an uncertain step cut after its start never runs (${kind})`, () =>
      Effect.gen(function* () {
        const thread = threadName("uncertain-start")
        const client = clientOf(thread)
        failNth(thread, "uncertain:after-start-append", 1, kind)
        const { submissionId } = yield* client.submit({
          agentId: "charge",
          idempotencyKey: "k",
          input: { amount: 5 },
        })
        yield* quiet(thread).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))))
        expect(effectRuns.get(`${submissionId}:charge`)).toBeUndefined()
        expect((yield* client.explain(submissionId)).reason._tag).toBe("UnknownOutcome")
      }),
    )
  }
})
