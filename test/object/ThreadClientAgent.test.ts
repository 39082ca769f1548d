/**
 * The typed view of one agent: its input is encoded with the agent's Schema in the Worker,
 * before anything is sent, and a settlement's output is decoded with it; a value a Schema
 * refuses is a typed error.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ratioAgent } from "../worker/edgeAgents.ts"
import { echoAgent, reviewAgent, verifierAgent } from "../worker/threadObject.ts"
import { clientOf, deliverUntil, failureOf, inState, ledgerRows, threadName } from "./support.ts"

describe("ThreadClient.agent", () => {
  it.live("submits a typed input and awaits the settlement with its output decoded", () =>
    Effect.gen(function* () {
      const thread = threadName("typed")
      const client = clientOf(thread)
      const verifier = client.agent(verifierAgent)
      expect(verifier.agentId).toBe("verifier")
      const receipt = yield* verifier.submit({ claim: "a genuine claim" }, { idempotencyKey: "k" })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const settlement = yield* verifier.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement.outcome).toBe("completed")
      if (settlement.outcome === "completed") expect(settlement.output).toEqual({ genuine: true })
      expect(settlement).toMatchObject({ submissionId: receipt.submissionId, threadId: thread })
      // The same key replays the receipt.
      expect(yield* verifier.submit({ claim: "a genuine claim" }, { idempotencyKey: "k" })).toMatchObject({
        submissionId: receipt.submissionId,
        replayed: true,
      })
    }),
  )

  it.live("refuses an input its Schema does not encode before sending it, with a typed error", () =>
    Effect.gen(function* () {
      const thread = threadName("typed-refused")
      const short = clientOf(thread).agent({
        ...echoAgent,
        input: Schema.Struct({ text: Schema.String.check(Schema.isMaxLength(3)) }),
      })
      expect(
        failureOf(yield* Effect.exit(short.submit({ text: "too long" }, { idempotencyKey: "k" }))),
      ).toMatchObject({
        _tag: "InvalidAgentInput",
        agentId: "echo",
      })
      expect(yield* ledgerRows(thread)).toEqual([])
    }),
  )

  it.live("reports an output its Schema does not decode, and does not read another agent's Submission", () =>
    Effect.gen(function* () {
      const thread = threadName("typed-output")
      const echo = clientOf(thread).agent(echoAgent)
      const receipt = yield* echo.submit({ text: "hi" }, { idempotencyKey: "k" })
      yield* deliverUntil(thread, inState(clientOf(thread), receipt.submissionId, "settled"))
      expect((yield* echo.awaitSettlement(receipt.submissionId, 1_000)).outcome).toBe("completed")
      // A contract whose output is a number: the settled string does not decode.
      const numeric = clientOf(thread).agent({ ...echoAgent, output: Schema.Number })
      expect(
        failureOf(yield* Effect.exit(numeric.awaitSettlement(receipt.submissionId, 1_000))),
      ).toMatchObject({
        _tag: "InvalidAgentOutput",
        agentId: "echo",
        submissionId: receipt.submissionId,
      })
      // Another agent's view does not find the echo's Submission.
      const review = clientOf(thread).agent(reviewAgent)
      expect(failureOf(yield* Effect.exit(review.awaitSettlement(receipt.submissionId, 10)))).toMatchObject({
        _tag: "SubmissionNotFound",
      })
    }),
  )

  it.live("refuses a Thread id or key with a lone surrogate, which SQLite could not store as sent", () =>
    Effect.gen(function* () {
      // SQLite stores text as UTF-8: a lone surrogate would come back as U+FFFD, so the admitted
      // Submission could never be read or replayed by the id or key it was sent with.
      const thread = `lone-\uD800-${crypto.randomUUID()}`
      const lone = yield* Effect.exit(
        clientOf(thread).agent(echoAgent).submit({ text: "hi" }, { idempotencyKey: "k" }),
      )
      expect(failureOf(lone)).toMatchObject({ _tag: "InvalidRequest", entryPoint: "submit" })
      expect((failureOf(lone) as { message: string }).message).toContain("lone surrogate")
      expect(yield* ledgerRows(thread)).toEqual([])
      const keyed = threadName("lone-key")
      const echo = clientOf(keyed).agent(echoAgent)
      for (const idempotencyKey of ["k\uD800", "k\uDC00"]) {
        const exit = yield* Effect.exit(echo.submit({ text: "hi" }, { idempotencyKey }))
        expect(failureOf(exit)).toMatchObject({ _tag: "InvalidRequest", entryPoint: "submit" })
      }
      expect(yield* ledgerRows(keyed)).toEqual([])
      // A well-formed pair (an emoji) is one character and is stored as sent.
      const emoji = `emoji-\u{1F600}-${crypto.randomUUID()}`
      const receipt = yield* clientOf(emoji)
        .agent(echoAgent)
        .submit({ text: "hi" }, { idempotencyKey: "\u{1F511}" })
      expect((yield* clientOf(emoji).status(receipt.submissionId)).submissionId).toBe(receipt.submissionId)
    }),
  )

  it.live(
    "settles failed, naming it, an output, a step result or a child input its Schema encodes to no JSON",
    () =>
      Effect.gen(function* () {
        for (const [a, b, how, expected] of [
          [0, 0, {}, "the output is not JSON"],
          [1, 0, {}, "the output is not JSON"],
          [0, 0, { inStep: true }, 'the result of step "divide" is not JSON'],
          [0, 0, { child: threadName("ratio-child") }, "the input of child agent ratio is not JSON"],
          [1, 2, {}, undefined],
        ] as const) {
          const thread = threadName("ratio")
          const client = clientOf(thread)
          const ratio = client.agent(ratioAgent)
          const receipt = yield* ratio.submit({ a, b, ...how }, { idempotencyKey: "k" })
          // Before the fix the settlement could not be written: every pass failed, and it never settled.
          yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"), 20)
          const settlement = yield* ratio.awaitSettlement(receipt.submissionId, 1_000)
          if (expected === undefined) expect(settlement).toMatchObject({ outcome: "completed", output: 0.5 })
          else {
            expect(settlement.outcome).toBe("failed")
            expect(settlement.error).toContain(expected)
          }
        }
      }),
  )
})
