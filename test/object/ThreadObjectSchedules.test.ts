/**
 * Delayed submissions and schedules through a real `ThreadObject`, its alarm and its clients
 * (real time: the Object's clock is workerd's). A delayed Submission is admitted at once, is
 * explained and owed as a delayed start, runs no earlier than its time and holds the Submission
 * behind it; an Object with only a schedule holds its alarm at the next occurrence, and each
 * delivery at or after it admits that occurrence once, under a key that names it; unschedule
 * ends it; bad values are typed refusals that write nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { runDurableObjectAlarm } from "cloudflare:test"
import { echoAgent } from "../worker/threadObject.ts"
import {
  clientOf,
  deliverUntil,
  failureOf,
  inState,
  ledgerRows,
  storedEverything,
  storedMaintenance,
  stubOf,
  threadName,
} from "./support.ts"

const sleepUntil = (at: number) =>
  Effect.promise(() => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()))))

const deliver = (thread: string) =>
  Effect.promise(() => runDurableObjectAlarm(stubOf(thread)).catch(() => false))

describe("ThreadObject delayed submissions", () => {
  it.live("admits now, runs no earlier than notBefore, and the next Submission waits for it", () =>
    Effect.gen(function* () {
      const thread = threadName("delayed")
      const client = clientOf(thread)
      const echo = client.agent(echoAgent)
      const notBefore = Date.now() + 1_500
      const delayed = yield* echo.submit({ text: "later" }, { idempotencyKey: "later", notBefore })
      const next = yield* echo.submit({ text: "next" }, { idempotencyKey: "next" })
      // A repeat of the key answers the same receipt.
      expect(yield* echo.submit({ text: "later" }, { idempotencyKey: "later", notBefore })).toEqual({
        ...delayed,
        replayed: true,
      })
      for (let round = 0; round < 3; round++) yield* deliver(thread)
      expect(Date.now()).toBeLessThan(notBefore)
      expect((yield* client.status(delayed.submissionId)).state).toBe("waiting")
      expect((yield* client.status(next.submissionId)).state).toBe("ready")
      expect((yield* client.explain(delayed.submissionId)).reason).toEqual({ _tag: "Delayed", notBefore })
      const page = yield* client.submissionPage({ waiting: "delayed" })
      expect(page.submissions.map((summary) => summary.submission.submissionId)).toEqual([
        delayed.submissionId,
      ])
      const owed = yield* client.obligations
      expect(owed.obligations.filter((o) => o.source === "timer").map((o) => o.dueAt)).toEqual([notBefore])
      expect(owed.mismatch).toBeUndefined()
      expect((yield* storedMaintenance(thread)).alarm).toBeLessThanOrEqual(notBefore + 10)
      expect((yield* client.verify).violations).toEqual([])
      yield* sleepUntil(notBefore)
      yield* deliverUntil(thread, inState(client, next.submissionId, "settled"))
      const first = yield* client.status(delayed.submissionId)
      const second = yield* client.status(next.submissionId)
      expect(first.settlement?.outcome).toBe("completed")
      expect(first.settlement?.settledAt).toBeGreaterThanOrEqual(notBefore)
      expect(second.settlement?.settledAt).toBeGreaterThanOrEqual(first.settlement?.settledAt ?? Infinity)
    }),
  )

  it.live("refuses a notBefore that is not a finite number, and a delayed join", () =>
    Effect.gen(function* () {
      const thread = threadName("delayed-bad")
      const client = clientOf(thread)
      const bad = yield* Effect.exit(
        client.submit({
          agentId: "echo",
          idempotencyKey: "bad",
          input: { text: "x" },
          notBefore: "tomorrow" as never,
        }),
      )
      expect(failureOf(bad)).toMatchObject({ _tag: "InvalidRequest" })
      const join = yield* Effect.exit(
        client
          .agent(echoAgent)
          .submit({ text: "x" }, { idempotencyKey: "join", mode: "join", notBefore: Date.now() + 60_000 }),
      )
      expect(failureOf(join)).toMatchObject({ _tag: "JoinRefused", reason: "delayed" })
      expect(yield* ledgerRows(thread)).toEqual([])
    }),
  )
})

describe("ThreadObject schedules", () => {
  it.live(
    "sleeps until the next occurrence, admits each occurrence once, and stops when unscheduled",
    () =>
      Effect.gen(function* () {
        const thread = threadName("schedule")
        const client = clientOf(thread)
        const scheduled = yield* client
          .agent(echoAgent)
          .schedule({ text: "tick" }, { scheduleId: "ticker", everyMillis: 2_000 })
        expect(scheduled).toMatchObject({
          scheduleId: "ticker",
          threadId: thread,
          agentId: "echo",
          missed: "latest",
        })
        // Scheduling the same again changes nothing.
        expect(
          yield* client
            .agent(echoAgent)
            .schedule({ text: "tick" }, { scheduleId: "ticker", everyMillis: 2_000 }),
        ).toEqual(scheduled)
        // The Object's first pass acknowledges its creation; then only the schedule is owed.
        yield* deliverUntil(
          thread,
          Effect.map(client.obligations, (owed) => owed.obligations.every((o) => o.source === "schedule")),
        )
        const idle = yield* storedMaintenance(thread)
        expect(idle.alarm).not.toBeNull()
        expect(idle.alarm).toBeLessThanOrEqual(scheduled.nextAt + 10)
        const owed = yield* client.obligations
        expect(owed.obligations.map((o) => [o.source, o.dueAt, o.detail])).toEqual([
          ["schedule", scheduled.nextAt, "next occurrence of schedule ticker"],
        ])
        expect(owed.mismatch).toBeUndefined()
        expect((yield* client.verify).violations).toEqual([])
        expect(yield* ledgerRows(thread)).toEqual([])

        yield* sleepUntil(scheduled.nextAt)
        const key = `schedule:ticker:${scheduled.nextAt}`
        yield* deliverUntil(
          thread,
          Effect.map(client.findSubmission(key), (found) => found?.state === "settled"),
        )
        // Deliveries repeated at once find the occurrence admitted: no second Submission for it.
        for (let round = 0; round < 3; round++) yield* deliver(thread)
        const [listed] = yield* client.schedules
        expect(listed?.lastOccurrence).toBeGreaterThanOrEqual(scheduled.nextAt)
        expect(listed?.nextAt).toBeGreaterThan(listed?.lastOccurrence ?? Infinity)
        const keys = (yield* storedEverything(stubOf(thread))).ledger.map((row) =>
          String(row.idempotency_key),
        )
        expect(new Set(keys).size).toBe(keys.length)
        expect(keys.every((k) => k.startsWith("schedule:ticker:"))).toBe(true)
        expect(keys).toContain(key)
        expect((yield* client.verify).violations).toEqual([])

        expect(yield* client.unschedule("ticker")).toEqual({ removed: true })
        expect(yield* client.schedules).toEqual([])
        const before = (yield* ledgerRows(thread)).length
        // Past the occurrence that was next when it was removed.
        yield* sleepUntil((listed?.nextAt ?? 0) + 100)
        for (let round = 0; round < 3; round++) yield* deliver(thread)
        expect(yield* ledgerRows(thread)).toHaveLength(before)
        expect(yield* client.unschedule("ticker")).toEqual({ removed: false })
      }),
    20_000,
  )

  it.live(
    "refuses a cron that does not parse with InvalidSchedule, and an input the agent refuses or one too large",
    () =>
      Effect.gen(function* () {
        const thread = threadName("schedule-bad")
        const client = clientOf(thread)
        const cron = yield* Effect.exit(
          client.schedule({ scheduleId: "bad", cron: "at two", agentId: "echo", input: { text: "x" } }),
        )
        expect(failureOf(cron)).toMatchObject({ _tag: "InvalidSchedule", reason: "cron" })
        const input = yield* Effect.exit(
          client.schedule({ scheduleId: "bad", everyMillis: 60_000, agentId: "echo", input: { text: 1 } }),
        )
        expect(failureOf(input)).toMatchObject({ _tag: "AdmissionRefused", reason: "malformed-input" })
        // Every occurrence would be refused for its size (the test Object's limit is 4,096 bytes).
        const large = yield* Effect.exit(
          client.schedule({
            scheduleId: "large",
            everyMillis: 60_000,
            agentId: "echo",
            input: { text: "x".repeat(5_000) },
          }),
        )
        expect(failureOf(large)).toMatchObject({ _tag: "AdmissionRefused", reason: "input-bytes" })
        const id = yield* Effect.exit(
          client.schedule({ scheduleId: "", everyMillis: 60_000, agentId: "echo", input: { text: "x" } }),
        )
        expect(failureOf(id)).toMatchObject({ _tag: "InvalidRequest" })
        expect(Exit.isFailure(id)).toBe(true)
        const overlap = yield* Effect.exit(
          client.schedule({
            scheduleId: "o",
            everyMillis: 60_000,
            agentId: "echo",
            input: { text: "x" },
            overlap: "never" as never,
          }),
        )
        expect(failureOf(overlap)).toMatchObject({ _tag: "InvalidRequest" })
        expect(String(failureOf(overlap)?.message)).toContain("overlap")
        expect(yield* client.schedules).toEqual([])
        // A valid policy is stored and listed with the schedule.
        yield* client
          .agent(echoAgent)
          .schedule({ text: "x" }, { scheduleId: "skipping", everyMillis: 60_000, overlap: "skip" })
        expect(yield* client.schedules).toMatchObject([{ scheduleId: "skipping", overlap: "skip" }])
      }),
  )

  it.live("takes an option given as undefined as absent, as JSON does", () =>
    Effect.gen(function* () {
      const thread = threadName("schedule-undefined")
      const client = clientOf(thread)
      // Without exactOptionalPropertyTypes (TypeScript's default) these type-check.
      const skip: "skip" | undefined = undefined as "skip" | undefined
      const scheduled = yield* client.agent(echoAgent).schedule(
        { text: "x" },
        {
          scheduleId: "u",
          everyMillis: 60_000,
          overlap: skip as never,
          missed: undefined as never,
        },
      )
      expect(scheduled).toMatchObject({ scheduleId: "u", missed: "latest" })
      expect(scheduled.overlap).toBeUndefined()
      const after: string | undefined = undefined as string | undefined
      expect((yield* client.schedulePage({ after: after as never })).schedules).toMatchObject([
        { scheduleId: "u" },
      ])
    }),
  )
})
