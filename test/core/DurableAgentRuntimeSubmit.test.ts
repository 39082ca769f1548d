import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Ref, Stream } from "effect"
import { TestClock } from "effect/testing"
import { SubmitRequest } from "../../src/core/DurableAgentRuntime.ts"
import { AgentId, IdempotencyKey, SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { echo, failing, makeRuns, runsOf, threeSteps } from "./runtimeAgents.ts"
import { processToSettlement, recover, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import {
  historyOf,
  ledgerOf,
  runtimeHarnesses,
  runtimeOf,
  type Incarnation,
  switchableCapacity,
} from "./runtimeHarness.ts"
import { freezeAt } from "../support/switchboard.ts"

const nothingWritten = (incarnation: Incarnation, thread: string) =>
  Effect.gen(function* () {
    expect(yield* Stream.runCollect(ledgerOf(incarnation).scanNonterminal)).toEqual([])
    const page = yield* historyOf(incarnation).page(ThreadId.make(thread), { limit: 10 })
    expect(page.records).toEqual([])
  })

for (const harness of runtimeHarnesses) {
  describe(`DurableAgentRuntime admission (${harness.label})`, () => {
    it.effect("refuses an unknown agent and a malformed input before writing anything", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents: [echo] })
          const unknown = yield* Effect.flip(submitTo(incarnation, "lane", "nobody", "a", { text: "x" }))
          expect(unknown).toMatchObject({ _tag: "AdmissionRefused", reason: "unknown-agent" })
          const malformed = yield* Effect.flip(submitTo(incarnation, "lane", "echo", "b", { text: 42 }))
          expect(malformed).toMatchObject({ _tag: "AdmissionRefused", reason: "malformed-input" })
          expect(malformed.message).toContain("text")
          yield* nothingWritten(incarnation, "lane")
        }),
      ),
    )

    it.effect("refuses a full lane and an oversized input before writing anything", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const incarnation = yield* world.incarnation({ agents: [echo] })
            const large = yield* Effect.flip(
              submitTo(incarnation, "lane", "echo", "big", { text: "x".repeat(100) }),
            )
            expect(large).toMatchObject({ _tag: "AdmissionRefused", reason: "input-bytes" })
            yield* nothingWritten(incarnation, "lane")
            const first = yield* submitTo(incarnation, "lane", "echo", "a", { text: "one" })
            const full = yield* Effect.flip(submitTo(incarnation, "lane", "echo", "b", { text: "two" }))
            expect(full).toMatchObject({ _tag: "AdmissionRefused", reason: "queue-depth" })
            const rows = yield* Stream.runCollect(ledgerOf(incarnation).scanNonterminal)
            expect(rows.map((row) => row.submissionId)).toEqual([first.submissionId])
          }),
        { limits: { maxQueueDepthPerLane: 1, maxInputBytes: 64 } },
      ),
    )

    it.effect("prepares once without writing, then admits exactly what it prepared", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const incarnation = yield* world.incarnation({ agents: [echo] })
            const runtime = runtimeOf(incarnation)
            const request = (key: string, text: string) =>
              SubmitRequest.make({
                threadId: ThreadId.make("lane"),
                agentId: AgentId.make("echo"),
                idempotencyKey: IdempotencyKey.make(key),
                input: { text },
              })
            const prepared = yield* runtime.prepare(request("a", "one"))
            expect(prepared).toMatchObject({ inputPayload: '{"text":"one"}', replay: false })
            yield* nothingWritten(incarnation, "lane")
            const receipt = yield* runtime.admit(prepared)
            expect(receipt.replayed).toBe(false)
            // The lane is now full: preparing a new key is refused, a used one replays.
            const full = yield* Effect.flip(runtime.prepare(request("b", "two")))
            expect(full).toMatchObject({ _tag: "AdmissionRefused", reason: "queue-depth" })
            expect(yield* runtime.prepare(request("a", "one"))).toMatchObject({ replay: true })
            // What admit is given must name an agent registered here with the same digest.
            const forged = yield* Effect.flip(runtime.admit({ ...prepared, agentDigest: "other" }))
            expect(forged).toMatchObject({ _tag: "AdmissionRefused", reason: "unknown-agent" })
          }),
        { limits: { maxQueueDepthPerLane: 1, maxInputBytes: 64 } },
      ),
    )

    it.effect("returns the original receipt for a used key and refuses it for another input", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const wakes = yield* Ref.make<ReadonlyArray<ThreadId>>([])
          const incarnation = yield* world.incarnation({ agents: [echo], wakes })
          const first = yield* submitTo(incarnation, "lane", "echo", "a", { text: "hello" })
          expect(first.replayed).toBe(false)
          const again = yield* submitTo(incarnation, "lane", "echo", "a", { text: "hello" })
          expect(again).toEqual({ ...first, replayed: true })
          const conflict = yield* Effect.flip(submitTo(incarnation, "lane", "echo", "a", { text: "other" }))
          expect(conflict._tag).toBe("IdempotencyConflict")
          expect(yield* Ref.get(wakes)).toEqual([first.threadId])
          expect(yield* tagsOf(incarnation, first.submissionId)).toEqual(["SubmissionAccepted"])
          expect((yield* rowOf(incarnation, first.submissionId)).state).toBe("ready")
        }),
      ),
    )

    it.effect(
      "refuses new work while the host has no room, writing nothing, and still answers a replay",
      () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const { full, capacity } = yield* switchableCapacity
            const incarnation = yield* world.incarnation({ agents: [echo], capacity })
            const first = yield* submitTo(incarnation, "other", "echo", "a", { text: "a" })
            yield* Ref.set(full, true)
            const refused = yield* Effect.flip(submitTo(incarnation, "lane", "echo", "b", { text: "b" }))
            expect(refused).toMatchObject({ _tag: "AdmissionRefused", reason: "database-bytes" })
            const typed = yield* Effect.flip(
              runtimeOf(incarnation).submitRegistered(echo, {
                threadId: ThreadId.make("lane"),
                idempotencyKey: IdempotencyKey.make("c"),
                input: { text: "c" },
              }),
            )
            expect(typed).toMatchObject({ _tag: "AdmissionRefused", reason: "database-bytes" })
            const page = yield* historyOf(incarnation).page(ThreadId.make("lane"), { limit: 10 })
            expect(page.records).toEqual([])
            // A replayed key adds nothing, so it is answered.
            const replayed = yield* submitTo(incarnation, "other", "echo", "a", { text: "a" })
            expect(replayed).toMatchObject({ submissionId: first.submissionId, replayed: true })
          }),
        ),
    )

    it.effect("admits a typed input for a registered agent", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents: [echo] })
          const receipt = yield* runtimeOf(incarnation).submitRegistered(echo, {
            threadId: ThreadId.make("lane"),
            idempotencyKey: IdempotencyKey.make("typed"),
            input: { text: "typed" },
          })
          expect((yield* processToSettlement(incarnation, "lane")).output).toBe("typed")
          expect(receipt.queueSequence).toBe(1)
        }),
      ),
    )

    it.effect("admits and records the acceptance in one write: a kill before it leaves nothing", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const before = yield* freezeAt("ledger:admit:before")
          const dyingBefore = yield* world.incarnation({ agents: [echo], failpoint: before.handler })
          yield* Effect.forkDetach(submitTo(dyingBefore, "lane", "echo", "a", { text: "hi" }))
          yield* before.reached
          const fresh = yield* world.incarnation({ agents: [echo] })
          expect(yield* Stream.runCollect(ledgerOf(fresh).scanNonterminal)).toEqual([])
          // The submitter repeats the call; nothing of the first one is left to repair.
          const receipt = yield* submitTo(fresh, "lane", "echo", "a", { text: "hi" })
          expect(receipt.replayed).toBe(false)
          expect((yield* processToSettlement(fresh, "lane")).output).toBe("hi")
        }),
      ),
    )

    it.effect("leaves a ready row with its acceptance recorded when killed right after admission", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const crash = yield* freezeAt("submit:after-admit")
          const dying = yield* world.incarnation({ agents: [echo], failpoint: crash.handler })
          yield* Effect.forkDetach(submitTo(dying, "lane", "echo", "a", { text: "one" }))
          yield* crash.reached
          const fresh = yield* world.incarnation({ agents: [echo] })
          const [row] = yield* Stream.runCollect(ledgerOf(fresh).scanNonterminal)
          const submissionId = Option.getOrThrow(Option.fromNullishOr(row)).submissionId
          expect(row?.state).toBe("ready")
          expect(yield* tagsOf(fresh, submissionId)).toEqual(["SubmissionAccepted"])
          expect(yield* recover(fresh)).toEqual({ [submissionId]: ["ApplyInput", "deferred"] })
          const replayed = yield* submitTo(fresh, "lane", "echo", "a", { text: "one" })
          expect([replayed.replayed, replayed.submissionId]).toEqual([true, submissionId])
          expect(yield* tagsOf(fresh, submissionId)).toEqual(["SubmissionAccepted"])
          expect((yield* processToSettlement(fresh, "lane")).output).toBe("one")
        }),
      ),
    )
  })

  describe(`DurableAgentRuntime settlement (${harness.label})`, () => {
    it.effect("settles failed with the program's AgentFailure", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [failing(runs)] })
          yield* submitTo(incarnation, "lane", "failing", "a", { n: 1 })
          const settlement = yield* processToSettlement(incarnation, "lane")
          expect(settlement).toMatchObject({ outcome: "failed", error: "the agent gave up" })
          expect(yield* runsOf(runs)).toEqual({ try: 1 })
        }),
      ),
    )

    it.effect("awaitSettlement polls until the settlement and times out on virtual time", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [threeSteps(runs)] })
          const runtime = runtimeOf(incarnation)
          const receipt = yield* submitTo(incarnation, "lane", "three-steps", "a", { n: 1 })
          const timedOut = yield* Effect.forkChild(
            Effect.flip(runtime.awaitSettlement(receipt.submissionId, { timeoutMillis: 1_200 })),
          )
          yield* TestClock.adjust(1_200)
          expect((yield* Fiber.join(timedOut))._tag).toBe("SettlementTimeout")
          const waiting = yield* Effect.forkChild(runtime.awaitSettlement(receipt.submissionId))
          const settlement = yield* processToSettlement(incarnation, "lane")
          yield* TestClock.adjust(500)
          expect(yield* Fiber.join(waiting)).toEqual(settlement)
          const missing = yield* Effect.flip(
            runtime.awaitSettlement(SubmissionId.make("nope"), { timeoutMillis: 0 }),
          )
          expect(missing._tag).toBe("SubmissionNotFound")
        }),
      ),
    )
  })
}
