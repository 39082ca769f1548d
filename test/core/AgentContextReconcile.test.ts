/**
 * Self-reconciling uncertain steps: after a crash cut an uncertain step, recovery has its
 * reconcile ask whether the effect happened. "Happened" and "did not happen" settle the outcome
 * with no person; "cannot tell", a reconcile that keeps failing, and a step without a reconcile
 * wait for an operator. Every reconcile is journaled and the effect never runs twice.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Reconcile, type ReconcileAnswer } from "../../src/core/AgentContext.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import { makeRuns, ran, type Runs, runsOf } from "./runtimeAgents.ts"
import {
  entriesOf,
  processDue,
  processHead,
  processToSettlement,
  recover,
  rowOf,
  submitTo,
  tagsOf,
} from "./runtimeFixtures.ts"
import { runtimeHarnesses, runtimeOf, type RuntimeWorld } from "./runtimeHarness.ts"
import { freezeAt } from "../support/switchboard.ts"

/** What the scripted reconcile answers next; `fail` fails it, `hang` never answers. */
type Scripted = ReconcileAnswer<string> | "fail" | "hang"

/** Like `charging`, with a reconcile that answers from a script and counts its runs. */
const reconciled = (runs: Runs, script: Ref.Ref<ReadonlyArray<Scripted>>, attempts = 3) =>
  define({
    id: "reconciled",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Struct({ receipt: Schema.String, note: Schema.String }),
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        yield* ctx.step("prepare", Effect.as(ran(runs, "prepare"), n))
        const receipt = yield* ctx.uncertainStep("charge", Effect.as(ran(runs, "charge"), `charged-${n}`), {
          result: Schema.String,
          reconcileAttempts: attempts,
          reconcileTimeoutMillis: 1_000,
          reconcile: Effect.gen(function* () {
            yield* ran(runs, "reconcile")
            const [next = Reconcile.cannotTell("script exhausted")] = yield* Ref.get(script)
            yield* Ref.update(script, (all) => all.slice(1))
            if (next === "fail") return yield* new AgentFailure({ message: "provider unavailable" })
            if (next === "hang") return yield* Effect.never
            return next
          }),
        })
        const note = yield* ctx.step("after", Effect.as(ran(runs, "after"), "done"))
        return { receipt, note }
      }),
  })

/** A charge killed after its start was journaled, and a fresh incarnation with `script`. */
const killedCharge = (world: RuntimeWorld, script: ReadonlyArray<Scripted>, attempts = 3) =>
  Effect.gen(function* () {
    const runs = yield* makeRuns
    const answers = yield* Ref.make(script)
    const crash = yield* freezeAt("uncertain:after-start-append")
    const first = yield* world.incarnation({
      agents: [reconciled(runs, answers, attempts)],
      failpoint: crash.handler,
    })
    const head = yield* submitTo(first, "lane", "reconciled", "charge", { n: 5 })
    yield* Effect.forkDetach(processHead(first, "lane"))
    yield* crash.reached
    yield* TestClock.adjust(30_001)
    const second = yield* world.incarnation({ agents: [reconciled(runs, answers, attempts)] })
    return { runs, head, second }
  })

const answersOf = (entries: ReadonlyArray<{ readonly _tag: string }>) =>
  entries.flatMap((entry) =>
    entry._tag === "ReconcileAnswered"
      ? [(entry as unknown as { answer: { _tag: string } }).answer._tag]
      : [],
  )

for (const harness of runtimeHarnesses) {
  describe(`AgentContext reconcile (${harness.label})`, () => {
    it.effect(
      "fails a Submission whose reconcile options are not numbers of at least 1, naming the step",
      () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const badOptions = define({
              id: "bad-reconcile",
              version: "1",
              input: Schema.Struct({
                field: Schema.Literals(["reconcileAttempts", "reconcileTimeoutMillis"]),
              }),
              output: Schema.String,
              program: ({ field }, ctx) =>
                ctx.uncertainStep("charge", Effect.succeed("charged"), {
                  result: Schema.String,
                  reconcile: Effect.succeed(Reconcile.notHappened),
                  [field]: Number.NaN,
                }),
            })
            const incarnation = yield* world.incarnation({ agents: [badOptions] })
            for (const field of ["reconcileAttempts", "reconcileTimeoutMillis"] as const) {
              yield* submitTo(incarnation, field, "bad-reconcile", field, { field })
              const settlement = yield* processToSettlement(incarnation, field)
              expect(settlement.outcome).toBe("failed")
              expect(JSON.stringify(settlement)).toContain(`uncertain step \\"charge\\": ${field} must be`)
            }
          }),
        ),
    )

    it.effect("settles an Unknown Outcome with the reconciled result and no person", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, second } = yield* killedCharge(world, [Reconcile.happened("found-5")])
          expect(yield* recover(second)).toEqual({ [head.submissionId]: ["ReconcileUnknown", "repaired"] })
          expect((yield* rowOf(second, head.submissionId)).state).toBe("ready")
          const settlement = yield* processToSettlement(second, "lane")
          expect(settlement.output).toEqual({ receipt: "found-5", note: "done" })
          expect(yield* tagsOf(second, head.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "StepCompleted",
            "UncertainStepStarted",
            "UnknownOutcomeRecorded",
            "ReconcileStarted",
            "ReconcileAnswered",
            "StepCompleted",
            "SubmissionSettled",
          ])
          // The effect itself never ran: the crash cut it before it started.
          expect(yield* runsOf(runs)).toEqual({ prepare: 1, reconcile: 1, after: 1 })
        }),
      ),
    )

    it.effect("runs the effect once more when the reconcile finds it did not happen", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, second } = yield* killedCharge(world, [Reconcile.notHappened])
          yield* recover(second)
          const settlement = yield* processToSettlement(second, "lane")
          expect(settlement.output).toEqual({ receipt: "charged-5", note: "done" })
          const tags = yield* tagsOf(second, head.submissionId)
          expect(tags.filter((tag) => tag === "UncertainStepStarted")).toHaveLength(2)
          expect(yield* runsOf(runs)).toEqual({ prepare: 1, reconcile: 1, charge: 1, after: 1 })
          // A replay of the settled journal returns the second run's result.
          expect(answersOf(yield* entriesOf(second, head.submissionId))).toEqual(["NotHappened"])
        }),
      ),
    )

    it.effect("leaves an outcome the reconcile cannot tell for an operator", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, second } = yield* killedCharge(world, [Reconcile.cannotTell("no such key yet")])
          yield* recover(second)
          expect(yield* processHead(second, "lane")).toEqual(Option.none())
          expect((yield* rowOf(second, head.submissionId)).state).toBe("unknown")
          expect(yield* recover(second)).toEqual({
            [head.submissionId]: ["AwaitUnknownResolution", "unknown"],
          })
          yield* runtimeOf(second).resolveUnknown(head.submissionId, { _tag: "Succeeded", value: "by-hand" })
          expect((yield* processToSettlement(second, "lane")).output).toEqual({
            receipt: "by-hand",
            note: "done",
          })
          expect(yield* runsOf(runs)).toEqual({ prepare: 1, reconcile: 1, after: 1 })
        }),
      ),
    )

    it.effect("retries a failed reconcile only after its backoff, parked until then, then settles", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, second } = yield* killedCharge(world, [
            "fail",
            "hang",
            Reconcile.happened("late"),
          ])
          yield* recover(second)
          expect(yield* processHead(second, "lane")).toEqual(Option.none())
          const failed = (yield* entriesOf(second, head.submissionId)).at(-1)
          expect(failed).toMatchObject({
            _tag: "ReconcileAnswered",
            attempt: 1,
            answer: { _tag: "Failed", message: "provider unavailable" },
          })
          const retryAt = (failed as unknown as { answer: { retryAt: number } }).answer.retryAt
          // A timed wait until then: no lane serves it, no recovery moves it, the due path waits.
          const parked = yield* rowOf(second, head.submissionId)
          expect([parked.state, parked.dueAt, parked.wait?._tag]).toEqual(["waiting", retryAt, "Reconcile"])
          expect(yield* recover(second)).toEqual({ [head.submissionId]: ["AwaitDue", "none"] })
          expect(yield* processHead(second, "lane")).toEqual(Option.none())
          expect(yield* processDue(second, head.submissionId)).toEqual({ _tag: "Unclaimed" })
          yield* TestClock.adjust(1_000)
          // The second reconcile never answers: its timeout is a failure with a longer wait.
          const hung = yield* Effect.forkChild(processDue(second, head.submissionId))
          yield* TestClock.adjust(1_000)
          expect(yield* Fiber.join(hung)).toEqual({ _tag: "Parked", wait: "waiting" })
          const timedOut = (yield* entriesOf(second, head.submissionId)).at(-1)
          expect(timedOut).toMatchObject({ attempt: 2, answer: { _tag: "Failed" } })
          const secondRetry = (timedOut as unknown as { answer: { retryAt: number } }).answer.retryAt
          expect(secondRetry - retryAt).toBeGreaterThanOrEqual(2_000)
          expect((yield* rowOf(second, head.submissionId)).dueAt).toBe(secondRetry)
          yield* TestClock.adjust(2_000)
          const settled = yield* processDue(second, head.submissionId)
          expect(settled._tag === "Settled" ? settled.settlement.output : undefined).toEqual({
            receipt: "late",
            note: "done",
          })
          expect(yield* runsOf(runs)).toEqual({ prepare: 1, reconcile: 3, after: 1 })
        }),
      ),
    )

    it.effect("hands the outcome to an operator once its reconcile attempts are spent", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, head, second } = yield* killedCharge(world, ["fail", "fail", "fail"], 2)
          yield* recover(second)
          expect(yield* processHead(second, "lane")).toEqual(Option.none())
          yield* TestClock.adjust(60_000)
          // The second try is served by the due path; its failure spends the last attempt.
          expect(yield* processDue(second, head.submissionId)).toEqual({ _tag: "Parked", wait: "unknown" })
          expect(yield* recover(second)).toEqual({
            [head.submissionId]: ["AwaitUnknownResolution", "unknown"],
          })
          expect(answersOf(yield* entriesOf(second, head.submissionId))).toEqual(["Failed", "Failed"])
          expect((yield* runsOf(runs)).reconcile).toBe(2)
        }),
      ),
    )
  })
}
