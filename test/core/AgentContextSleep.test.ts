/**
 * Durable sleeps under `TestClock`, on both ledgers: a sleep parks its Submission until the due
 * time it journaled with the wait, the due path resumes it no earlier than that time by the
 * Object's clock and once, a new incarnation over the same storage resumes it, and a row woken
 * before its time parks again at the same time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Option, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import { define } from "../../src/core/AgentRegistration.ts"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { makeRuns, ran, type Runs, runsOf } from "./runtimeAgents.ts"
import { entriesOf, processDue, processHead, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { ledgerOf, runtimeHarnesses, type RuntimeWorld } from "./runtimeHarness.ts"
import { pauseAt } from "../support/switchboard.ts"

/** A step, a ten-second sleep, and a step that reports when it ran. */
const napping = (runs: Runs, woke: Ref.Ref<ReadonlyArray<number>>) =>
  define({
    id: "napping",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const before = yield* ctx.step("before", Effect.as(ran(runs, "before"), n))
        yield* ctx.sleep("nap", "10 seconds")
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(woke, (all) => [...all, now])
        return yield* ctx.step("after", Effect.as(ran(runs, "after"), before + 1))
      }),
  })

/** Sleeps until an instant, sleeps zero, then sleeps twice more. */
const sleeper = (runs: Runs, until: number) =>
  define({
    id: "sleeper",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        yield* ctx.sleepUntil("past", until)
        yield* ctx.sleep("zero", 0)
        yield* ctx.sleep("first", "1 second")
        yield* ctx.sleep("second", "2 seconds")
        return yield* ctx.step("done", Effect.as(ran(runs, "done"), n))
      }),
  })

const setup = (world: RuntimeWorld) =>
  Effect.gen(function* () {
    const runs = yield* makeRuns
    const woke = yield* Ref.make<ReadonlyArray<number>>([])
    const agents = [napping(runs, woke)]
    const incarnation = yield* world.incarnation({ agents })
    const start = yield* Clock.currentTimeMillis
    const receipt = yield* submitTo(incarnation, "lane", "napping", "k", { n: 1 })
    return { runs, woke, agents, incarnation, start, receipt }
  })

for (const harness of runtimeHarnesses) {
  describe(`AgentContext sleep (${harness.label})`, () => {
    it.effect("parks until its due time and resumes once, never before it", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, woke, incarnation, start, receipt } = yield* setup(world)
          const follower = yield* submitTo(incarnation, "lane", "napping", "next", { n: 5 })
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const parked = yield* rowOf(incarnation, receipt.submissionId)
          expect([parked.state, parked.dueAt, parked.wait]).toEqual([
            "waiting",
            start + 10_000,
            { _tag: "Sleep", step: 1, name: "nap", dueAt: start + 10_000, since: start },
          ])
          // The lane waits behind it: neither the lane nor the due path runs anything early.
          for (const wait of [0, 9_999]) {
            yield* TestClock.adjust(wait)
            expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
            expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({ _tag: "Unclaimed" })
          }
          yield* TestClock.adjust(1)
          const resumed = yield* processDue(incarnation, receipt.submissionId)
          expect(resumed._tag).toBe("Settled")
          expect(yield* Ref.get(woke)).toEqual([start + 10_000])
          expect(yield* runsOf(runs)).toEqual({ before: 1, after: 1 })
          expect(yield* tagsOf(incarnation, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "StepCompleted",
            "TimerFired",
            "StepCompleted",
            "SubmissionSettled",
          ])
          // Settled: the due path has nothing, the follower runs.
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({ _tag: "Unclaimed" })
          expect((yield* rowOf(incarnation, follower.submissionId)).state).toBe("ready")
        }),
      ),
    )

    it.effect("survives a new incarnation over the same storage", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, woke, agents, incarnation, start, receipt } = yield* setup(world)
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const later = yield* world.incarnation({ agents })
          yield* TestClock.adjust(10_000)
          const due = yield* ledgerOf(later).nextDue(start + 10_000, { limit: 10 })
          expect(due.map((row) => row.submissionId)).toEqual([receipt.submissionId])
          expect((yield* processDue(later, receipt.submissionId))._tag).toBe("Settled")
          expect(yield* Ref.get(woke)).toEqual([start + 10_000])
          expect(yield* runsOf(runs)).toEqual({ before: 1, after: 1 })
        }),
      ),
    )

    it.effect("a replaced incarnation leaves the due Claim of the one that replaced it alone", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { runs, woke, agents, incarnation, start, receipt } = yield* setup(world)
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const stall = yield* pauseAt("timer:after-fire", 1)
          const current = yield* world.incarnation({ agents, failpoint: stall.handler })
          yield* TestClock.adjust(10_000)
          const attempt = yield* Effect.forkChild(processDue(current, receipt.submissionId))
          yield* stall.reached
          const held = yield* rowOf(current, receipt.submissionId)
          // `incarnation` was built first: it lives on after `current` started, and its due
          // path must not take the running row over.
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({ _tag: "Unclaimed" })
          expect(yield* rowOf(incarnation, receipt.submissionId)).toEqual(held)
          yield* stall.release
          expect((yield* Fiber.join(attempt))._tag).toBe("Settled")
          expect(yield* Ref.get(woke)).toEqual([start + 10_000])
          expect(yield* runsOf(runs)).toEqual({ before: 1, after: 1 })
        }),
      ),
    )

    it.effect("parks again at the same due time when woken before it", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { woke, incarnation, start, receipt } = yield* setup(world)
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          yield* TestClock.adjust(3_000)
          const parked = yield* rowOf(incarnation, receipt.submissionId)
          yield* ledgerOf(incarnation).wake(
            {
              _tag: "Input",
              submissionId: receipt.submissionId,
              producerEpoch: parked.producerEpoch,
              state: "waiting",
            },
            start + 3_000,
          )
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({
            _tag: "Parked",
            wait: "waiting",
          })
          const again = yield* rowOf(incarnation, receipt.submissionId)
          expect([again.state, again.dueAt, again.wait]).toEqual(["waiting", start + 10_000, parked.wait])
          expect(yield* Ref.get(woke)).toEqual([])
          yield* TestClock.adjust(7_000)
          expect((yield* processDue(incarnation, receipt.submissionId))._tag).toBe("Settled")
          expect(yield* Ref.get(woke)).toEqual([start + 10_000])
        }),
      ),
    )

    it.effect("returns at once for a past instant or a zero duration, and chains further sleeps", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const start = yield* Clock.currentTimeMillis
          const incarnation = yield* world.incarnation({ agents: [sleeper(runs, start - 1)] })
          const receipt = yield* submitTo(incarnation, "lane", "sleeper", "k", { n: 3 })
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const first = yield* rowOf(incarnation, receipt.submissionId)
          expect([first.dueAt, first.wait?._tag === "Sleep" ? first.wait.step : -1]).toEqual([
            start + 1_000,
            2,
          ])
          yield* TestClock.adjust(1_000)
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({
            _tag: "Parked",
            wait: "waiting",
          })
          // The second sleep counts from when it first ran, and keeps the lane parked.
          const second = yield* rowOf(incarnation, receipt.submissionId)
          expect([second.state, second.dueAt]).toEqual(["waiting", start + 3_000])
          expect(yield* ledgerOf(incarnation).laneHeads).toEqual([])
          yield* TestClock.adjust(2_000)
          expect((yield* processDue(incarnation, receipt.submissionId))._tag).toBe("Settled")
          // Every sleep is journaled as fired, once, in call order: the two that returned at
          // once and the first one with the parks that followed them, the last with the step.
          const fired = (yield* entriesOf(incarnation, receipt.submissionId)).flatMap((entry) =>
            entry._tag === "TimerFired" ? [entry.name] : [],
          )
          expect(fired).toEqual(["past", "zero", "first", "second"])
          expect(yield* runsOf(runs)).toEqual({ done: 1 })
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          expect(ThreadId.make("lane")).toBe(receipt.threadId)
        }),
      ),
    )
  })
}
