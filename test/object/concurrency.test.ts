/**
 * Many callers at once on one `ThreadObject` and one Thread: duplicate submits of one key, a
 * decision or an abort racing the Attempt it resumes or settles, and a submit racing the forget
 * of its key. Every accepted Submission settles once, and every caller reads the same answer.
 */
import { describe, expect, it } from "@effect/vitest"
import { runDurableObjectAlarm } from "cloudflare:test"
import { Effect, Exit } from "effect"
import { courierAgent, effectRuns } from "../worker/threadObject.ts"
import { clientOf, deliverUntil, failureOf, inState, ledgerRows, stubOf, threadName } from "./support.ts"

const callers = 12

describe("ThreadObject under concurrent callers", () => {
  it.live("admits one Submission for many duplicate submits of one key racing each other", () =>
    Effect.gen(function* () {
      const thread = threadName("dup")
      const client = clientOf(thread)
      const receipts = yield* Effect.all(
        Array.from({ length: callers }, () =>
          client.submit({ agentId: "echo", idempotencyKey: "same", input: { text: "once" } }),
        ),
        { concurrency: "unbounded" },
      )
      const ids = new Set(receipts.map((receipt) => receipt.submissionId))
      expect(ids.size).toBe(1)
      expect(receipts.filter((receipt) => !receipt.replayed)).toHaveLength(1)
      expect(new Set(receipts.map((receipt) => receipt.receiptId)).size).toBe(1)
      const [id] = [...ids]
      yield* deliverUntil(thread, inState(client, id!, "settled"))
      const answers = yield* Effect.all(
        Array.from({ length: callers }, () => client.awaitSettlement(id!, 1_000)),
        { concurrency: "unbounded" },
      )
      expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1)
      expect((yield* ledgerRows(thread)).filter((row) => row.thread_id === thread)).toHaveLength(1)
      expect(effectRuns.get(`${id}:echo`)).toBe(1)
    }),
  )

  it.live("refuses every racing submit of a used key with another input, and admits one", () =>
    Effect.gen(function* () {
      const thread = threadName("dup-conflict")
      const client = clientOf(thread)
      const exits = yield* Effect.all(
        Array.from({ length: callers }, (_, n) =>
          Effect.exit(client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: `v${n}` } })),
        ),
        { concurrency: "unbounded" },
      )
      const admitted = exits.filter(Exit.isSuccess)
      expect(admitted).toHaveLength(1)
      for (const exit of exits.filter(Exit.isFailure))
        expect(failureOf(exit)).toMatchObject({ _tag: "IdempotencyConflict" })
    }),
  )

  it.live("applies one of many racing approvals and settles once", () =>
    Effect.gen(function* () {
      const thread = threadName("approvals")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "review", idempotencyKey: "r", input: { draft: "d" } })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
      const exits = yield* Effect.all(
        [
          ...Array.from({ length: callers }, (_, n) =>
            Effect.exit(client.resolveApproval(receipt.submissionId, { approved: true, note: `n${n}` })),
          ),
          Effect.exit(Effect.promise(() => runDurableObjectAlarm(stubOf(thread)).catch(() => false))),
        ],
        { concurrency: "unbounded" },
      )
      expect(exits.length).toBe(callers + 1)
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const settled = yield* client.awaitSettlement(receipt.submissionId, 1_000)
      expect(settled).toMatchObject({ outcome: "completed" })
      const history = yield* client.history()
      const mine = history.records.filter((record) => record.submissionId === receipt.submissionId)
      expect(mine.filter((record) => record.entry._tag === "ApprovalResolved")).toHaveLength(1)
      expect(mine.filter((record) => record.entry._tag === "SubmissionSettled")).toHaveLength(1)
    }),
  )

  it.live("settles once when aborts race the alarm that runs the Submission", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-race")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "a", input: { text: "x" } })
      yield* Effect.all(
        [
          Effect.promise(() => runDurableObjectAlarm(stubOf(thread)).catch(() => false)),
          ...Array.from({ length: 4 }, () => Effect.exit(client.abort(receipt.submissionId))),
          Effect.promise(() => runDurableObjectAlarm(stubOf(thread)).catch(() => false)),
        ],
        { concurrency: "unbounded" },
      )
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const answers = yield* Effect.all(
        Array.from({ length: 4 }, () => client.awaitSettlement(receipt.submissionId, 1_000)),
        { concurrency: "unbounded" },
      )
      expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1)
      const history = yield* client.history()
      const mine = history.records.filter((record) => record.submissionId === receipt.submissionId)
      expect(mine.filter((record) => record.entry._tag === "SubmissionSettled")).toHaveLength(1)
      expect(effectRuns.get(`${receipt.submissionId}:echo`) ?? 0).toBeLessThanOrEqual(1)
    }),
  )

  it.live("answers a submit racing the forget of its key either as a replay or a new admission", () =>
    Effect.gen(function* () {
      const thread = threadName("forget-race")
      const client = clientOf(thread)
      const first = yield* client.submit({ agentId: "echo", idempotencyKey: "f", input: { text: "x" } })
      yield* deliverUntil(thread, inState(client, first.submissionId, "settled"))
      const [, again] = yield* Effect.all(
        [
          client.forget(first.submissionId),
          client.submit({ agentId: "echo", idempotencyKey: "f", input: { text: "x" } }),
        ],
        { concurrency: "unbounded" },
      )
      expect(again.submissionId).toBe(first.submissionId)
      const rows = (yield* ledgerRows(thread)).filter((row) => row.thread_id === thread)
      if (again.replayed) {
        expect(rows).toHaveLength(0)
      } else {
        expect(rows).toHaveLength(1)
        yield* deliverUntil(thread, inState(client, again.submissionId, "settled"))
        const history = yield* client.history()
        const mine = history.records.filter((record) => record.submissionId === first.submissionId)
        expect(mine.filter((record) => record.entry._tag === "SubmissionSettled")).toHaveLength(1)
      }
    }),
  )

  it.live("records one event of many racing sends of one id, and each caller reads the same receipt", () =>
    Effect.gen(function* () {
      const thread = threadName("events")
      const client = clientOf(thread)
      const receipt = yield* client.agent(courierAgent).submit({ wait: "first" }, { idempotencyKey: "c" })
      const sends = Array.from({ length: callers }, (_, n) =>
        client.sendEvent(receipt.submissionId, "shipped", { tracking: "T-1" }, { eventId: `e${n % 2}` }),
      )
      const [receipts] = yield* Effect.all(
        [
          Effect.all(sends, { concurrency: "unbounded" }),
          Effect.promise(() => runDurableObjectAlarm(stubOf(thread)).catch(() => false)),
          Effect.promise(() => runDurableObjectAlarm(stubOf(thread)).catch(() => false)),
        ],
        { concurrency: "unbounded" },
      )
      for (const id of ["e0", "e1"])
        expect(
          receipts.filter((each) => each.eventId === id && !each.replayed),
          id,
        ).toHaveLength(1)
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const settled = yield* client.awaitSettlement(receipt.submissionId, 1_000)
      expect(settled).toMatchObject({ outcome: "completed", output: "T-1" })
      const mine = (yield* client.history()).records.filter(
        (record) => record.submissionId === receipt.submissionId,
      )
      expect(mine.filter((record) => record.entry._tag === "EventReceived")).toHaveLength(2)
      expect(mine.filter((record) => record.entry._tag === "EventConsumed")).toHaveLength(1)
      expect(mine.filter((record) => record.entry._tag === "SubmissionSettled")).toHaveLength(1)
    }),
  )

  it.live("answers racing joins of one key alike while their host settles", () =>
    Effect.gen(function* () {
      const thread = threadName("joins")
      const client = clientOf(thread)
      const host = yield* client.submit({ agentId: "tally", idempotencyKey: "host", input: { n: 1 } })
      yield* deliverUntil(thread, inState(client, host.submissionId, "suspended"))
      const joins = Array.from({ length: callers }, () =>
        Effect.exit(client.submit({ agentId: "tally", idempotencyKey: "j", input: { n: 2 }, mode: "join" })),
      )
      yield* client.resolveApproval(host.submissionId, { approved: true })
      const alarm = Effect.exit(
        Effect.promise(() => runDurableObjectAlarm(stubOf(thread)).catch(() => false)),
      )
      const exits = yield* Effect.all([alarm, ...joins, alarm], { concurrency: "unbounded" })
      const answers = exits.slice(1, callers + 1) as Array<
        Exit.Exit<{ readonly submissionId: string }, unknown>
      >
      const admitted = answers.filter(Exit.isSuccess).map((exit) => exit.value)
      // A key once accepted is never refused afterwards: either every join failed, or every
      // caller got that Submission's receipt.
      if (admitted.length > 0) {
        expect(admitted).toHaveLength(callers)
        expect(new Set(admitted.map((each) => each.submissionId)).size).toBe(1)
      }
    }),
  )

  it.live("admits no more than the lane's depth of many racing submits, each at its own sequence", () =>
    Effect.gen(function* () {
      const thread = threadName("depth")
      const client = clientOf(thread)
      const exits = yield* Effect.all(
        Array.from({ length: callers }, (_, n) =>
          Effect.exit(client.submit({ agentId: "echo", idempotencyKey: `k${n}`, input: { text: `${n}` } })),
        ),
        { concurrency: "unbounded" },
      )
      const admitted = exits.filter(Exit.isSuccess).map((exit) => exit.value)
      expect(admitted).toHaveLength(3)
      expect(new Set(admitted.map((each) => each.queueSequence)).size).toBe(3)
      for (const exit of exits.filter(Exit.isFailure))
        expect(failureOf(exit)).toMatchObject({ _tag: "AdmissionRefused" })
    }),
  )
})
