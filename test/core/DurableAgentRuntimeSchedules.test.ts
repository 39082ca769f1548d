/**
 * Delayed submissions and recurring schedules in the runtime under `TestClock`, on both
 * ledgers: a delayed Submission never runs before its time and holds its lane's order; a
 * schedule's occurrence is admitted once however many passes (or incarnations) see it due, as a
 * Submission whose key names the schedule and the occurrence; after downtime `latest` runs the
 * latest missed occurrence once and `skip` waits for the next; a removed schedule admits
 * nothing more; a spec that cannot be used is refused with `InvalidSchedule`, writing nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { define } from "../../src/core/AgentRegistration.ts"
import { ScheduleRequest } from "../../src/core/DurableAgentRuntime.ts"
import { AgentId, IdempotencyKey, ThreadId } from "../../src/core/Identifiers.ts"
import { ScheduleId } from "../../src/core/SubmissionLedger.ts"
import { makeRuns, ran, type Runs, runsOf } from "./runtimeAgents.ts"
import { entriesOf, processDue, processHead, rowOf, submitTo } from "./runtimeFixtures.ts"
import { ledgerOf, runtimeHarnesses, runtimeOf, type Incarnation } from "./runtimeHarness.ts"

const MINUTE = 60_000

/** One step that counts its runs by its input. */
const tick = (runs: Runs) =>
  define({
    id: "tick",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Int,
    program: ({ n }, ctx) => ctx.step("tick", Effect.as(ran(runs, `tick-${n}`), n)),
  })

const scheduleOf = (
  incarnation: Incarnation,
  fields: Omit<ConstructorParameters<typeof ScheduleRequest>[0], "threadId" | "agentId" | "scheduleId"> & {
    readonly scheduleId: string
    readonly threadId?: string
  },
) =>
  Effect.gen(function* () {
    const runtime = runtimeOf(incarnation)
    const { scheduleId, threadId, ...rest } = fields
    const prepared = yield* runtime.prepareSchedule(
      new ScheduleRequest({
        ...rest,
        scheduleId: ScheduleId.make(scheduleId),
        threadId: ThreadId.make(threadId ?? "lane"),
        agentId: AgentId.make("tick"),
      }),
    )
    return yield* runtime.schedule(prepared)
  })

const admitDue = (incarnation: Incarnation) => runtimeOf(incarnation).admitDueOccurrences(10)

/** The idempotency keys of the Submissions of a lane, in admission order. */
const keysOf = (incarnation: Incarnation, thread: string) =>
  Effect.map(Stream.runCollect(ledgerOf(incarnation).scanAll), (rows) =>
    Array.from(rows)
      .filter((row) => row.threadId === thread)
      .sort((a, b) => a.queueSequence - b.queueSequence)
      .map((row) => row.idempotencyKey),
  )

for (const harness of runtimeHarnesses) {
  describe(`DurableAgentRuntime delayed submissions (${harness.label})`, () => {
    it.effect("never runs a delayed Submission before its time, and what follows it waits for it", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
          const runtime = runtimeOf(incarnation)
          const start = yield* Clock.currentTimeMillis
          const delayed = yield* runtime.submit({
            threadId: ThreadId.make("lane"),
            agentId: AgentId.make("tick"),
            idempotencyKey: IdempotencyKey.make("later"),
            input: { n: 1 },
            notBefore: start + 5_000,
          })
          const follower = yield* submitTo(incarnation, "lane", "tick", "next", { n: 2 })
          expect((yield* rowOf(incarnation, delayed.submissionId)).wait).toEqual({
            _tag: "Delayed",
            notBefore: start + 5_000,
          })
          for (const wait of [0, 4_999]) {
            yield* TestClock.adjust(wait)
            expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
            expect(yield* processDue(incarnation, delayed.submissionId)).toEqual({ _tag: "Unclaimed" })
          }
          expect(yield* runsOf(runs)).toEqual({})
          yield* TestClock.adjust(1)
          expect((yield* processDue(incarnation, delayed.submissionId))._tag).toBe("Settled")
          expect(yield* runsOf(runs)).toEqual({ "tick-1": 1 })
          expect(Option.isSome(yield* processHead(incarnation, "lane"))).toBe(true)
          expect(yield* runsOf(runs)).toEqual({ "tick-1": 1, "tick-2": 1 })
          expect((yield* rowOf(incarnation, follower.submissionId)).state).toBe("settled")
        }),
      ),
    )

    it.effect(
      "keeps its place behind earlier Submissions and holds the lane when it becomes the head early",
      () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const runs = yield* makeRuns
            const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
            const start = yield* Clock.currentTimeMillis
            yield* submitTo(incarnation, "lane", "tick", "first", { n: 1 })
            const delayed = yield* runtimeOf(incarnation).submit({
              threadId: ThreadId.make("lane"),
              agentId: AgentId.make("tick"),
              idempotencyKey: IdempotencyKey.make("later"),
              input: { n: 2 },
              notBefore: start + 5_000,
            })
            yield* submitTo(incarnation, "lane", "tick", "last", { n: 3 })
            expect(Option.isSome(yield* processHead(incarnation, "lane"))).toBe(true)
            // The delayed row is the head now, before its time: nothing claims it, it parks
            // until then (its lane skipped, the due bound owes it), and the last one waits.
            expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
            expect((yield* rowOf(incarnation, delayed.submissionId)).state).toBe("waiting")
            expect(yield* ledgerOf(incarnation).laneHeads).toEqual([])
            yield* TestClock.adjust(4_999)
            expect(yield* processDue(incarnation, delayed.submissionId)).toEqual({ _tag: "Unclaimed" })
            expect(yield* runsOf(runs)).toEqual({ "tick-1": 1 })
            yield* TestClock.adjust(1)
            expect((yield* processDue(incarnation, delayed.submissionId))._tag).toBe("Settled")
            expect(yield* runsOf(runs)).toEqual({ "tick-1": 1, "tick-2": 1 })
            expect(Option.isSome(yield* processHead(incarnation, "lane"))).toBe(true)
            expect(yield* runsOf(runs)).toEqual({ "tick-1": 1, "tick-2": 1, "tick-3": 1 })
          }),
        ),
    )

    it.effect("refuses a join that would wait and a key of the occurrences' form", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
          const runtime = runtimeOf(incarnation)
          const base = {
            threadId: ThreadId.make("lane"),
            agentId: AgentId.make("tick"),
            input: { n: 1 },
          }
          const join = yield* Effect.flip(
            runtime.submit({
              ...base,
              idempotencyKey: IdempotencyKey.make("j"),
              mode: "join",
              notBefore: (yield* Clock.currentTimeMillis) + 1_000,
            }),
          )
          expect(join).toMatchObject({ _tag: "JoinRefused", reason: "delayed" })
          const reserved = yield* Effect.flip(
            runtime.submit({ ...base, idempotencyKey: IdempotencyKey.make("schedule:s:60000") }),
          )
          expect(reserved).toMatchObject({ _tag: "AdmissionRefused", reason: "reserved-key" })
          expect(yield* keysOf(incarnation, "lane")).toEqual([])
        }),
      ),
    )
  })

  describe(`DurableAgentRuntime schedules (${harness.label})`, () => {
    it.effect("admits each occurrence once, however many passes and incarnations see it due", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const agents = [tick(runs)]
          const incarnation = yield* world.incarnation({ agents })
          const stored = yield* scheduleOf(incarnation, {
            scheduleId: "s",
            everyMillis: MINUTE,
            input: { n: 1 },
          })
          expect(stored.nextAt).toBe(MINUTE)
          expect(yield* admitDue(incarnation)).toBe(0)
          yield* TestClock.adjust(MINUTE)
          expect(yield* admitDue(incarnation)).toBe(1)
          expect(yield* admitDue(incarnation)).toBe(0)
          const later = yield* world.incarnation({ agents })
          expect(yield* admitDue(later)).toBe(0)
          expect(yield* keysOf(later, "lane")).toEqual([`schedule:s:${MINUTE}`])
          const [listed] = yield* runtimeOf(later).schedules
          expect(listed).toMatchObject({ nextAt: 2 * MINUTE, lastOccurrence: MINUTE })
          const submissionId = listed?.lastSubmissionId
          expect(submissionId).toBeDefined()
          const [accepted] = yield* entriesOf(later, submissionId as never)
          expect(accepted).toMatchObject({
            _tag: "SubmissionAccepted",
            schedule: { scheduleId: "s", occurrence: MINUTE },
          })
          expect(Option.isSome(yield* processHead(later, "lane"))).toBe(true)
          yield* TestClock.adjust(MINUTE)
          expect(yield* admitDue(later)).toBe(1)
          expect(yield* keysOf(later, "lane")).toEqual([`schedule:s:${MINUTE}`, `schedule:s:${2 * MINUTE}`])
        }),
      ),
    )

    it.effect(
      "after downtime, latest runs the latest missed occurrence once and skip waits for the next",
      () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const runs = yield* makeRuns
            const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
            const every = 5 * MINUTE
            yield* scheduleOf(incarnation, {
              scheduleId: "latest",
              threadId: "a",
              everyMillis: every,
              input: { n: 1 },
            })
            yield* scheduleOf(incarnation, {
              scheduleId: "skip",
              threadId: "b",
              everyMillis: every,
              input: { n: 2 },
              missed: "skip",
            })
            // Down from before the first occurrence until two minutes after the second.
            yield* TestClock.adjust(2 * every + 2 * MINUTE)
            expect(yield* admitDue(incarnation)).toBe(1)
            expect(yield* keysOf(incarnation, "a")).toEqual([`schedule:latest:${2 * every}`])
            expect(yield* keysOf(incarnation, "b")).toEqual([])
            const listed = yield* runtimeOf(incarnation).schedules
            expect(listed.map((schedule) => [schedule.scheduleId, schedule.nextAt])).toEqual([
              ["latest", 3 * every],
              ["skip", 3 * every],
            ])
            // A repeated pass admits nothing; the next occurrence, on time, is admitted under both.
            expect(yield* admitDue(incarnation)).toBe(0)
            yield* TestClock.adjust(3 * MINUTE)
            expect(yield* admitDue(incarnation)).toBe(2)
            expect(yield* keysOf(incarnation, "b")).toEqual([`schedule:skip:${3 * every}`])
          }),
        ),
    )

    it.effect(
      "under overlap skip, refuses an occurrence due while the last one has not settled; queue admits it behind",
      () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const runs = yield* makeRuns
            const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
            const runtime = runtimeOf(incarnation)
            /** A schedule of `tick` every minute: `queue` on lane a, `skip` on lane b. */
            const everyMinute = (overlap: "queue" | "skip", n: number, spelled = overlap === "skip") =>
              scheduleOf(incarnation, {
                scheduleId: overlap,
                threadId: overlap === "queue" ? "a" : "b",
                everyMillis: MINUTE,
                input: { n },
                ...(spelled ? { overlap } : {}),
              })
            yield* everyMinute("queue", 1)
            const skipping = yield* everyMinute("skip", 2)
            expect(skipping.overlap).toBe("skip")
            // `queue` spelled out is the stored default: the same definition, its next occurrence kept.
            yield* TestClock.adjust(MINUTE / 2)
            const again = yield* everyMinute("queue", 1, true)
            expect(again.createdAt).toBe(0)
            expect(again.overlap).toBeUndefined()
            yield* TestClock.adjust(MINUTE / 2)
            expect(yield* admitDue(incarnation)).toBe(2)
            const [first] = yield* keysOf(incarnation, "b")
            const previous = (yield* runtime.schedules).find((schedule) => schedule.scheduleId === "skip")
            // Neither first occurrence has run: the next one queues on a, and is passed over on b.
            yield* TestClock.adjust(MINUTE)
            expect(yield* admitDue(incarnation)).toBe(1)
            expect(yield* keysOf(incarnation, "a")).toEqual([
              `schedule:queue:${MINUTE}`,
              `schedule:queue:${2 * MINUTE}`,
            ])
            expect(yield* keysOf(incarnation, "b")).toEqual([first])
            const skipped = (yield* runtime.schedules).find((schedule) => schedule.scheduleId === "skip")
            expect(skipped).toMatchObject({
              nextAt: 3 * MINUTE,
              lastOccurrence: 2 * MINUTE,
              lastSubmissionId: previous?.lastSubmissionId,
              lastRefusal: { occurrence: 2 * MINUTE, reason: "overlap" },
            })
            expect(skipped?.lastRefusal?.message).toContain(String(previous?.lastSubmissionId))
            // Once the last one settles, the next occurrence is admitted again.
            expect(Option.isSome(yield* processHead(incarnation, "b"))).toBe(true)
            yield* TestClock.adjust(MINUTE)
            expect(yield* admitDue(incarnation)).toBe(2)
            expect(yield* keysOf(incarnation, "b")).toEqual([first, `schedule:skip:${3 * MINUTE}`])
            expect(yield* runsOf(runs)).toEqual({ "tick-2": 1 })
            // Replacing the schedule keeps what became of its last occurrence: still unsettled, the
            // replacement's first occurrence is passed over too.
            const replaced = yield* everyMinute("skip", 4)
            expect(replaced.lastSubmissionId).toBeDefined()
            yield* TestClock.adjust(MINUTE)
            expect(yield* admitDue(incarnation)).toBe(1)
            expect((yield* keysOf(incarnation, "b")).length).toBe(2)
          }),
        ),
    )

    it.effect(
      "a replacement checked before an occurrence was admitted keeps that occurrence as the last one",
      () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const runs = yield* makeRuns
            const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
            const runtime = runtimeOf(incarnation)
            const request = (n: number) =>
              new ScheduleRequest({
                scheduleId: ScheduleId.make("skip"),
                threadId: ThreadId.make("b"),
                agentId: AgentId.make("tick"),
                input: { n },
                everyMillis: MINUTE,
                overlap: "skip",
              })
            yield* runtime.schedule(yield* runtime.prepareSchedule(request(1)))
            yield* TestClock.adjust(MINUTE)
            expect(yield* admitDue(incarnation)).toBe(1)
            expect(Option.isSome(yield* processHead(incarnation, "b"))).toBe(true)
            // The Object checks a replacement before its mutation gate, and stores it after: an
            // alarm pass may admit an occurrence in between.
            yield* TestClock.adjust(MINUTE)
            const prepared = yield* runtime.prepareSchedule(request(2))
            expect(yield* admitDue(incarnation)).toBe(1)
            const admitted = (yield* runtime.schedules)[0]
            yield* runtime.schedule(prepared)
            expect((yield* runtime.schedules)[0]).toMatchObject({
              lastOccurrence: 2 * MINUTE,
              lastSubmissionId: admitted?.lastSubmissionId,
            })
            // That occurrence has not settled: the replacement's first one is passed over.
            yield* TestClock.adjust(MINUTE)
            expect(yield* admitDue(incarnation)).toBe(0)
            expect((yield* runtime.schedules)[0]?.lastRefusal).toMatchObject({ reason: "overlap" })
            expect((yield* keysOf(incarnation, "b")).length).toBe(2)
          }),
        ),
    )

    it.effect("admits nothing more once unscheduled; an admitted occurrence runs on", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
          const runtime = runtimeOf(incarnation)
          yield* scheduleOf(incarnation, { scheduleId: "s", everyMillis: MINUTE, input: { n: 1 } })
          yield* TestClock.adjust(MINUTE)
          expect(yield* admitDue(incarnation)).toBe(1)
          expect(yield* runtime.unschedule(ScheduleId.make("s"))).toEqual({ removed: true })
          expect(yield* runtime.unschedule(ScheduleId.make("s"))).toEqual({ removed: false })
          expect(yield* runtime.schedules).toEqual([])
          expect(yield* ledgerOf(incarnation).nextOccurrenceAt).toBeUndefined()
          yield* TestClock.adjust(5 * MINUTE)
          expect(yield* admitDue(incarnation)).toBe(0)
          expect(Option.isSome(yield* processHead(incarnation, "lane"))).toBe(true)
          expect(yield* runsOf(runs)).toEqual({ "tick-1": 1 })
        }),
      ),
    )

    it.effect("replaces a schedule by id, and the same definition again keeps its next occurrence", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
          const first = yield* scheduleOf(incarnation, {
            scheduleId: "s",
            everyMillis: MINUTE,
            input: { n: 1 },
          })
          yield* TestClock.adjust(30_000)
          const again = yield* scheduleOf(incarnation, {
            scheduleId: "s",
            everyMillis: MINUTE,
            input: { n: 1 },
          })
          expect(again).toEqual(first)
          const replaced = yield* scheduleOf(incarnation, {
            scheduleId: "s",
            everyMillis: 2 * MINUTE,
            input: { n: 3 },
          })
          expect([replaced.nextAt, replaced.input]).toEqual([30_000 + 2 * MINUTE, { n: 3 }])
          yield* TestClock.adjust(MINUTE)
          expect(yield* admitDue(incarnation)).toBe(0)
          expect(yield* runtimeOf(incarnation).schedules).toHaveLength(1)
        }),
      ),
    )

    it.effect("computes cron occurrences in the schedule's time zone", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
          // 02:00 in New York on 1 January 1970 is 07:00 UTC (EST, five hours behind).
          const nightly = yield* scheduleOf(incarnation, {
            scheduleId: "nightly",
            cron: "0 2 * * *",
            timeZone: "America/New_York",
            input: { n: 1 },
          })
          expect(nightly.nextAt).toBe(7 * 3_600_000)
          yield* TestClock.adjust(7 * 3_600_000)
          expect(yield* admitDue(incarnation)).toBe(1)
          const [listed] = yield* runtimeOf(incarnation).schedules
          expect(listed?.nextAt).toBe(31 * 3_600_000)
        }),
      ),
    )

    it.effect("refuses a spec it cannot use with InvalidSchedule, writing nothing", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const incarnation = yield* world.incarnation({ agents: [tick(runs)] })
          const refused = (fields: Parameters<typeof scheduleOf>[1]) =>
            Effect.map(Effect.flip(scheduleOf(incarnation, fields)), (error) =>
              error._tag === "InvalidSchedule" ? error.reason : error._tag,
            )
          const base = { scheduleId: "s", input: { n: 1 } }
          expect(yield* refused({ ...base, cron: "every night" })).toBe("cron")
          expect(yield* refused({ ...base, cron: "0 0 30 2 *" })).toBe("cron")
          expect(yield* refused({ ...base, cron: "0 2 * * *", timeZone: "Mars/Olympus" })).toBe("time-zone")
          expect(yield* refused({ ...base, everyMillis: 10 })).toBe("interval")
          expect(yield* refused({ ...base, everyMillis: 1.5 * MINUTE + 0.5 })).toBe("interval")
          expect(yield* refused({ ...base, cron: "* * * * *", everyMillis: MINUTE })).toBe("spec")
          expect(yield* refused(base)).toBe("spec")
          expect(yield* refused({ ...base, everyMillis: MINUTE, input: { n: "one" } })).toBe(
            "AdmissionRefused",
          )
          expect(yield* runtimeOf(incarnation).schedules).toEqual([])
        }),
      ),
    )
  })
}
