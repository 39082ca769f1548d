/**
 * The operator pages: `submissionPage` filters a Thread's Submissions by state, agent and why
 * they wait, a page at a time; `threadPage` lists the Object's Threads with their counts and
 * heads; `findSubmission` finds a Submission by its idempotency key. All of them only read.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as ThreadClient from "../../src/ThreadClient.ts"
import {
  clientOf,
  deliverUntil,
  failureOf,
  inState,
  storedEverything,
  storedMaintenance,
  stubOf,
  threadName,
} from "./support.ts"

/** Nothing owed and no alarm: no pass runs while the reads are compared. */
const quiet = (objectName: string) =>
  Effect.map(storedMaintenance(objectName), (stored) => {
    const record = stored.record as { dirty: string; processed: string } | undefined
    return stored.alarm === null && record !== undefined && record.dirty === record.processed
  })

const keysOf = (page: ThreadClient.SubmissionPage) =>
  page.submissions.map((summary) => `${summary.submission.queueSequence}:${summary.waiting}`)

describe("ThreadObject operator pages", () => {
  it.live("filter a Thread's Submissions by why they wait, by state and agent, and page them", () =>
    Effect.gen(function* () {
      const thread = threadName("pages")
      const client = clientOf(thread)
      const head = yield* client.submit({ agentId: "review", idempotencyKey: "h", input: { draft: "plan" } })
      yield* deliverUntil(thread, inState(client, head.submissionId, "suspended"))
      const first = yield* client.submit({ agentId: "echo", idempotencyKey: "e1", input: { text: "a" } })
      yield* client.submit({ agentId: "echo", idempotencyKey: "e2", input: { text: "b" } })
      yield* deliverUntil(thread, quiet(thread))
      const before = yield* storedEverything(stubOf(thread))

      const all = yield* client.submissionPage()
      expect(all.order).toBe("newest-first")
      expect(keysOf(all)).toEqual(["3:queued", "2:queued", "1:approval"])
      expect(all.next).toBeUndefined()

      const approvals = yield* client.submissionPage({ waiting: "approval" })
      expect(approvals.order).toBe("queue")
      expect(keysOf(approvals)).toEqual(["1:approval"])
      expect(keysOf(yield* client.submissionPage({ waiting: "child" }))).toEqual([])

      const page1 = yield* client.submissionPage({ states: ["ready"], agentId: "echo", limit: 1 })
      expect(keysOf(page1)).toEqual(["2:queued"])
      expect(page1.next).toBe(2)
      const page2 = yield* client.submissionPage({
        states: ["ready"],
        agentId: "echo",
        limit: 1,
        ...(page1.next === undefined ? {} : { cursor: page1.next }),
      })
      expect(keysOf(page2)).toEqual(["3:queued"])

      const threads = yield* client.threadPage()
      expect(threads.unsettled).toBe(3)
      expect(threads.next).toBeUndefined()
      expect(threads.threads).toHaveLength(1)
      expect(threads.threads[0]).toMatchObject({
        threadId: thread,
        admitted: 3,
        open: 2,
        parked: 1,
        settled: 0,
        capped: false,
        head: { waiting: "approval", submission: { submissionId: head.submissionId } },
      })

      expect((yield* client.findSubmission("e1"))?.submissionId).toBe(first.submissionId)
      expect(yield* client.findSubmission("never-used")).toBeNull()
      // Reading wrote nothing: not the ledger, the history, the record nor the alarm.
      expect(yield* storedEverything(stubOf(thread))).toEqual(before)

      yield* client.resolveApproval(head.submissionId, { approved: true })
      yield* deliverUntil(thread, inState(client, first.submissionId, "settled"))
      yield* deliverUntil(
        thread,
        Effect.map(client.threadPage(), (page) => page.threads[0]?.settled === 3),
      )
      expect(keysOf(yield* client.submissionPage({ waiting: "settled" }))).toEqual([
        "3:settled",
        "2:settled",
        "1:settled",
      ])
      expect((yield* client.threadPage()).threads[0]?.head).toBeUndefined()
    }),
  )

  it.live("name a durable wait by its kind: a sleep is `sleep`, and the filter finds it", () =>
    Effect.gen(function* () {
      const thread = threadName("pages-sleep")
      const client = clientOf(thread)
      // An hour's nap: it parks `waiting` with its due time, and nothing wakes it in this test.
      const nap = yield* client.submit({
        agentId: "nap",
        idempotencyKey: "n",
        input: { text: "zz", millis: 3_600_000 },
      })
      yield* deliverUntil(thread, inState(client, nap.submissionId, "waiting"))
      expect(keysOf(yield* client.submissionPage({}))).toEqual(["1:sleep"])
      expect(keysOf(yield* client.submissionPage({ waiting: "sleep" }))).toEqual(["1:sleep"])
      expect(keysOf(yield* client.submissionPage({ waiting: "approval" }))).toEqual([])
      expect(keysOf(yield* client.submissionPage({ waiting: "retry" }))).toEqual([])
    }),
  )

  it.live("list an Object's Threads a page at a time", () =>
    Effect.gen(function* () {
      const object = threadName("lanes")
      for (const lane of ["c", "a", "b"]) {
        yield* clientOf(lane, object).submit({ agentId: "echo", idempotencyKey: "k", input: { text: lane } })
      }
      const client = clientOf("a", object)
      const first = yield* client.threadPage({ limit: 2 })
      expect(first.threads.map((thread) => thread.threadId)).toEqual(["a", "b"])
      expect(first.next).toBe("b")
      const rest = yield* client.threadPage({ limit: 2, after: "b" })
      expect(rest.threads.map((thread) => thread.threadId)).toEqual(["c"])
      expect(rest.next).toBeUndefined()
    }),
  )

  it.live("refuse a page size or filter out of range with InvalidRequest", () =>
    Effect.gen(function* () {
      const client = clientOf(threadName("bad-page"))
      for (const call of [
        Effect.asVoid(client.submissionPage({ limit: 0 })),
        Effect.asVoid(client.submissionPage({ limit: 101 })),
        Effect.asVoid(client.submissionPage({ states: ["nonsense" as never] })),
        Effect.asVoid(client.submissionPage({ waiting: "bored" as never })),
        Effect.asVoid(client.threadPage({ limit: 1_000 })),
      ] as const) {
        expect(failureOf(yield* Effect.exit(call))?._tag).toBe("InvalidRequest")
      }
    }),
  )
})
