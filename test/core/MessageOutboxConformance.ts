/** The conformance suite of the outbox, run against every implementation. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { IdempotencyKey, SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { MessageOutbox, type NewMessage } from "../../src/core/MessageOutbox.ts"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import { admitNew, recordTags, request, settlementOf, unowned } from "./SubmissionLedgerFixtures.ts"

/** Runs one case against a fresh ledger, history and outbox. */
export interface OutboxHarness {
  readonly run: <A, E>(
    body: Effect.Effect<A, E, SubmissionLedger | ThreadHistory | MessageOutbox>,
  ) => Effect.Effect<A, unknown>
}

const target = { namespace: "THREADS", objectName: "child-object" } as const

/** An abort message with id `id` (the simplest kind to build). */
export const abortMessage = (id: string, dependsOn?: string): NewMessage => ({
  messageId: id,
  target,
  message: { _tag: "AbortChild", threadId: ThreadId.make("t"), idempotencyKey: IdempotencyKey.make(id) },
  ...(dependsOn === undefined ? {} : { dependsOn }),
})

const ids = (rows: ReadonlyArray<{ readonly messageId: string }>) => rows.map((row) => row.messageId)

/** Registers the outbox cases for one implementation. */
export const outboxConformance = (name: string, harness: OutboxHarness) =>
  describe(`MessageOutbox conformance (${name})`, () => {
    it.effect("sends a message once it is due, earliest first, at most `limit` at a time", () =>
      harness.run(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          yield* outbox.enqueue([abortMessage("b")], 2_000)
          yield* outbox.enqueue([abortMessage("a"), abortMessage("c")], 1_000)
          expect(ids(yield* outbox.due(999, 10))).toEqual([])
          expect(ids(yield* outbox.due(1_000, 10))).toEqual(["a", "c"])
          expect(ids(yield* outbox.due(5_000, 10))).toEqual(["a", "c", "b"])
          expect(ids(yield* outbox.due(5_000, 2))).toEqual(["a", "c"])
          expect(yield* outbox.nextDue).toEqual(Option.some(1_000))
        }),
      ),
    )

    it.effect(
      "keeps the first message of an id: a repeated enqueue changes nothing, even after its ack",
      () =>
        harness.run(
          Effect.gen(function* () {
            const outbox = yield* MessageOutbox
            yield* outbox.enqueue([abortMessage("a")], 1_000)
            yield* outbox.enqueue(
              [{ ...abortMessage("a"), target: { namespace: "OTHER", objectId: "x" } }],
              1_500,
            )
            const first = Option.getOrThrow(yield* outbox.lookup("a"))
            expect(first.target).toEqual(target)
            expect(first.nextAttemptAt).toBe(1_000)
            yield* outbox.acknowledge("a", 2_000)
            yield* outbox.enqueue([abortMessage("a")], 3_000)
            const acknowledged = Option.getOrThrow(yield* outbox.lookup("a"))
            expect(acknowledged.acknowledgedAt).toBe(2_000)
            expect(ids(yield* outbox.due(9_000, 10))).toEqual([])
            expect(yield* outbox.nextDue).toEqual(Option.none())
          }),
        ),
    )

    it.effect("holds a message back until the one it depends on is acknowledged", () =>
      harness.run(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          yield* outbox.enqueue([abortMessage("admit"), abortMessage("abort", "admit")], 1_000)
          expect(ids(yield* outbox.due(1_000, 10))).toEqual(["admit"])
          yield* outbox.retry("admit", { nextAttemptAt: 4_000, error: "unreachable" })
          // The blocked message does not make the outbox due earlier than its dependency.
          expect(yield* outbox.nextDue).toEqual(Option.some(4_000))
          expect(ids(yield* outbox.due(3_000, 10))).toEqual([])
          yield* outbox.acknowledge("admit", 4_100)
          expect(ids(yield* outbox.due(4_100, 10))).toEqual(["abort"])
          expect(yield* outbox.nextDue).toEqual(Option.some(1_000))
        }),
      ),
    )

    it.effect("records failed attempts and their last error; an acknowledged message keeps its ack", () =>
      harness.run(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          yield* outbox.enqueue([abortMessage("a")], 1_000)
          yield* outbox.retry("a", { nextAttemptAt: 2_000, error: "first\nfailure" })
          yield* outbox.retry("a", { nextAttemptAt: 4_000, error: "x".repeat(400) })
          const row = Option.getOrThrow(yield* outbox.lookup("a"))
          expect(row.attempts).toBe(2)
          expect(row.nextAttemptAt).toBe(4_000)
          expect(row.lastError?.length).toBe(301)
          yield* outbox.acknowledge("a", 5_000)
          yield* outbox.acknowledge("a", 6_000)
          yield* outbox.retry("a", { nextAttemptAt: 9_000, error: "late" })
          const acked = Option.getOrThrow(yield* outbox.lookup("a"))
          expect(acked.acknowledgedAt).toBe(5_000)
          expect(acked.attempts).toBe(2)
          expect(yield* outbox.lookup("missing")).toEqual(Option.none())
        }),
      ),
    )

    it.effect("appends a record and enqueues its messages together, or neither when the fence fails", () =>
      harness.run(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          const history = yield* ThreadHistory
          const row = yield* admitNew(request("t", "a"))
          const [record] = yield* outbox.appendWithMessages(
            row.submissionId,
            [{ _tag: "InputApplied" }],
            unowned(row, 1_100),
            1_100,
            [abortMessage("m1"), abortMessage("m2", "m1")],
          )
          // The acceptance record is the first.
          expect(record?.sequence).toBe(2)
          expect(ids(yield* outbox.due(1_100, 10))).toEqual(["m1"])
          const stale = { ...unowned(row, 1_200), producerEpoch: 7 }
          const refused = yield* Effect.flip(
            outbox.appendWithMessages(row.submissionId, [{ _tag: "AbortRequested" }], stale, 1_200, [
              abortMessage("m3"),
            ]),
          )
          expect(refused._tag).toBe("FenceRejected")
          expect(yield* outbox.lookup("m3")).toEqual(Option.none())
          expect((yield* history.forSubmission(row.submissionId)).map((r) => r.entry._tag)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
          ])
          const foreign = yield* Effect.flip(
            outbox.appendWithMessages(
              SubmissionId.make("someone-else"),
              [{ _tag: "InputApplied" }],
              unowned(row, 1_300),
              1_300,
              [abortMessage("m4")],
            ),
          )
          expect(foreign._tag).toBe("FenceRejected")
          expect(yield* outbox.lookup("m4")).toEqual(Option.none())
        }),
      ),
    )

    it.effect("settles and enqueues the settlement's messages together, or neither when refused", () =>
      harness.run(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          const ledger = yield* SubmissionLedger
          const row = yield* admitNew(request("t", "a"))
          const stale = { ...unowned(row, 1_200), producerEpoch: 7 }
          const refused = yield* Effect.flip(
            outbox.settleWithMessages(stale, settlementOf(row), [], [abortMessage("m0")]),
          )
          expect(refused._tag).toBe("FenceRejected")
          expect(yield* outbox.lookup("m0")).toEqual(Option.none())
          const settled = yield* outbox.settleWithMessages(
            unowned(row, 1_300),
            settlementOf(row),
            [{ _tag: "AbortRequested" }],
            [abortMessage("m1")],
          )
          expect(settled.state).toBe("settled")
          expect(ids(yield* outbox.due(settlementOf(row).settledAt, 10))).toEqual(["m1"])
          expect(yield* recordTags(row.submissionId)).toEqual([
            "SubmissionAccepted",
            "AbortRequested",
            "SubmissionSettled",
          ])
          // A repeat of the identical settlement writes nothing new.
          yield* outbox.acknowledge("m1", 6_000)
          yield* outbox.settleWithMessages(unowned(row, 1_400), settlementOf(row), [], [abortMessage("m1")])
          expect(yield* outbox.due(9_000, 10)).toEqual([])
          expect(yield* recordTags(row.submissionId)).toHaveLength(3)
          expect((yield* ledger.lookup(row.submissionId)).pipe(Option.map((r) => r.state))).toEqual(
            Option.some("settled"),
          )
        }),
      ),
    )

    it.effect("stores every kind of message and returns it as it was enqueued", () =>
      harness.run(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          const parent = {
            address: { namespace: "THREADS", objectId: "a".repeat(64) },
            threadId: ThreadId.make("parent-thread"),
            submissionId: SubmissionId.make("parent-1"),
            step: 3,
          }
          const messages: ReadonlyArray<NewMessage> = [
            {
              messageId: "admit",
              target,
              message: {
                _tag: "AdmitChild",
                threadId: ThreadId.make("child-thread"),
                idempotencyKey: IdempotencyKey.make("parent:parent-1:3"),
                agentId: "fraud" as never,
                agentDigest: "d1",
                input: { amount: 12.5, tags: ["a", null] },
                parent,
              },
            },
            {
              messageId: "settled",
              target: parent.address,
              message: {
                _tag: "ChildSettled",
                parentSubmissionId: parent.submissionId,
                step: 3,
                childSubmissionId: SubmissionId.make("child-1"),
                outcome: "completed",
                output: { ok: true },
              },
            },
          ]
          yield* outbox.enqueue(messages, 1_000)
          for (const message of messages) {
            const stored = Option.getOrThrow(yield* outbox.lookup(message.messageId))
            expect(stored.message).toEqual(message.message)
            expect(stored.target).toEqual(message.target)
            expect(stored.attempts).toBe(0)
            expect(stored.createdAt).toBe(1_000)
          }
        }),
      ),
    )

    it.effect(
      "lists the messages a Submission sent: admissions, aborts, then its settlement, each by id",
      () =>
        harness.run(
          Effect.gen(function* () {
            const outbox = yield* MessageOutbox
            // Enqueued out of that order, with another Submission's (sub-12's) beside them.
            yield* outbox.enqueue(
              ["settled:sub-1", "abort:sub-1:3", "admit:sub-1:10", "admit:sub-12:1", "admit:sub-1:2"].map(
                (id) => abortMessage(id),
              ),
              1_000,
            )
            expect(ids(yield* outbox.messagesOf(SubmissionId.make("sub-1")))).toEqual([
              "admit:sub-1:10",
              "admit:sub-1:2",
              "abort:sub-1:3",
              "settled:sub-1",
            ])
          }),
        ),
    )

    it.effect("remembers the first answer to a message for its late duplicates", () =>
      harness.run(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          expect(yield* outbox.answerOf("admit:p:0")).toEqual(Option.none())
          const refused = {
            _tag: "ChildRefused",
            reason: "queue-depth",
            message: "the lane is full",
          } as const
          yield* outbox.rememberAnswer("admit:p:0", refused, 1_000)
          yield* outbox.rememberAnswer("admit:p:0", { ...refused, reason: "unknown-agent" }, 2_000)
          expect(yield* outbox.answerOf("admit:p:0")).toEqual(Option.some(refused))
        }),
      ),
    )

    it.effect("refuses instants that are not finite numbers", () =>
      harness.run(
        Effect.gen(function* () {
          const outbox = yield* MessageOutbox
          const error = yield* Effect.flip(outbox.enqueue([abortMessage("a")], Number.NaN))
          expect(error._tag).toBe("MessageOutboxError")
          expect(error.message).toContain("now must be a finite number")
          const retry = yield* Effect.flip(outbox.retry("a", { nextAttemptAt: Infinity, error: "x" }))
          expect(retry._tag).toBe("MessageOutboxError")
        }),
      ),
    )
  })
