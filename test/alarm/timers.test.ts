/**
 * Timed waits on the Object's one alarm, in workerd: an Object whose only work is sleepers has
 * its alarm at the earliest due time and is otherwise idle; with 10,000 sleepers a caught-up
 * pass reads the maintenance record alone and a pass reads rows in proportion to the timers
 * due; timers due within the coalescing window share one delivery; the due rows and the lanes
 * share an event; a stale bound is corrected once; a failed reconcile settles by alarms alone.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Reconcile } from "../../src/core/AgentContext.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import { AgentId, IdempotencyKey, ThreadId } from "../../src/core/Identifiers.ts"
import { makeRuns, ran, type Runs, runsOf, threeSteps } from "../core/runtimeAgents.ts"
import { type Incarnation, incarnation } from "../support/incarnation.ts"
import { freezeAt } from "../support/switchboard.ts"
import { converge, deliverOk, reportOf, rowOf, submit } from "./actionable/fixtures.ts"
import { abandon } from "./actionable/fixtures.ts"
import { forbidSql, meterSql } from "./fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, putRawState, rawState } from "./harness.ts"

/** Sleeps `millis`, then finishes with one step. */
const sleeper = (runs: Runs) =>
  define({
    id: "sleeper",
    version: "1",
    input: Schema.Struct({ millis: Schema.Int }),
    output: Schema.Int,
    program: ({ millis }, ctx) =>
      Effect.gen(function* () {
        yield* ctx.sleep("nap", millis)
        return yield* ctx.step("done", Effect.as(ran(runs, "done"), millis))
      }),
  })

/** Admits `count` delayed `agent` Submissions, one per lane, due from `from`, `spacing` apart. */
const sleepers = (
  inc: Incarnation,
  agent: ReturnType<typeof sleeper>,
  count: number,
  from: number,
  spacing = 1_000,
) =>
  Effect.gen(function* () {
    for (let index = 0; index < count; index++) {
      const key = String(index).padStart(6, "0")
      yield* inc.ledger.admit({
        threadId: ThreadId.make(`sleeper-${key}`),
        idempotencyKey: IdempotencyKey.make(key),
        agentId: AgentId.make("sleeper"),
        agentDigest: agent.digest,
        inputPayload: '{"millis":0}',
        inputDigest: "zero",
        now: from - 1,
        notBefore: from + index * spacing,
      })
    }
  })

/** The due times of the Object's timed waits, earliest first. */
const dueTimes = (inc: Incarnation) =>
  Effect.map(inc.ledger.earliestDue(1_000), (rows) => rows.map((row) => row.dueAt ?? -1))

/** Delivers alarms while the stored one is earlier than `until`, returning how many. */
const deliverUntil = (ctx: DurableObjectState, inc: Incarnation, until: number) =>
  Effect.gen(function* () {
    let deliveries = 0
    while (true) {
      const at = yield* alarmOf(ctx)
      if (at === null || at >= until) return deliveries
      yield* deliverOk(ctx, inc.maintenance)
      deliveries++
    }
  })

describe("timed waits on the alarm", () => {
  it.effect("keep the alarm at the earliest due time, one delivery per due time, and nothing else", () =>
    inObject(objectName("timers-idle"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [sleeper(runs)] })
        for (const millis of [5_000, 8_000, 12_000])
          yield* submit(inc, `lane-${millis}`, "sleeper", `k-${millis}`, { millis })
        // The submissions run and park: what is left is the earliest due time.
        yield* deliverUntil(ctx, inc, now + 5_000)
        const [first, second, third] = yield* dueTimes(inc)
        expect(second! - first!).toBeGreaterThanOrEqual(3_000)
        expect(yield* alarmOf(ctx)).toBe(first)
        expect(yield* rawState(ctx)).toMatchObject({ nextDueAt: first })
        for (const [at, next] of [
          [first, second],
          [second, third],
        ] as const) {
          const report = yield* deliverOk(ctx, inc.maintenance)
          expect([report.phase, report.settled, yield* Clock.currentTimeMillis]).toEqual([
            "actionable",
            1,
            at,
          ])
          expect(yield* alarmOf(ctx)).toBe(next)
        }
        expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 1, 0, "cleared"])
        expect(yield* alarmOf(ctx)).toBeNull()
        expect(yield* runsOf(runs)).toEqual({ done: 3 })
      }),
    ),
  )

  it.effect(
    "with 10,000 sleepers, read the record alone when caught up and rows in proportion to the due",
    () =>
      inObject(objectName("timers-many"), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          const runs = yield* makeRuns
          const agent = sleeper(runs)
          const inc = yield* incarnation(ctx, { agents: [agent] })
          yield* inc.maintenance.withMutation(sleepers(inc, agent, 10_000, now + 60_000))
          // The mutation's pass finds them waiting and places the alarm at the first.
          expect((yield* deliverOk(ctx, inc.maintenance)).phase).toBe("actionable")
          expect(yield* alarmOf(ctx)).toBe(now + 60_000)
          expect(yield* rawState(ctx)).toMatchObject({ nextDueAt: now + 60_000 })
          // An early delivery (a host deadline, a redelivery): the record alone, no SQL.
          const forbidden = yield* forbidSql(ctx)
          const caughtUp = yield* inc.maintenance.pass
          expect(forbidden.attempts).toEqual([])
          forbidden.restore()
          expect(reportOf(caughtUp)).toEqual(["caught-up", 0, 0, 10_000, "rearmed"])
          expect(yield* alarmOf(ctx)).toBe(now + 60_000)
          // At the first due time the pass serves the one due row and reads a bounded number
          // of rows, whatever the number of rows waiting.
          const meter = yield* meterSql(ctx)
          const served = yield* deliverOk(ctx, inc.maintenance)
          expect(served.settled).toBe(1)
          expect(meter.rowsRead).toBeLessThan(100)
          expect(yield* alarmOf(ctx)).toBe(now + 61_000)
        }),
      ),
    120_000,
  )

  it.effect("resume timers due within the coalescing window in one delivery", () =>
    inObject(objectName("timers-cluster"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        // Every submission starts in one event, so their due times differ by their sleeps alone.
        const inc = yield* incarnation(ctx, { agents: [sleeper(runs)], config: { maxHeadsPerEvent: 16 } })
        for (let index = 0; index < 16; index++) {
          const millis = 10_000 + (index % 10)
          yield* submit(inc, `lane-${index}`, "sleeper", `k-${index}`, { millis })
        }
        yield* deliverUntil(ctx, inc, now + 10_000)
        const dues = yield* dueTimes(inc)
        expect(dues).toHaveLength(16)
        expect(Math.max(...dues) - Math.min(...dues)).toBe(9)
        // None early: the alarm is the latest of the cluster, at most the window after the first.
        expect(yield* alarmOf(ctx)).toBe(Math.max(...dues))
        const report = yield* deliverOk(ctx, inc.maintenance)
        expect([report.settled, report.nonterminal, report.alarm]).toEqual([16, 0, "cleared"])
        expect(yield* runsOf(runs)).toEqual({ done: 16 })
      }),
    ),
  )

  it.effect("serve due rows beside the lane heads in the same event", () =>
    inObject(objectName("timers-lanes"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const agent = sleeper(runs)
        const inc = yield* incarnation(ctx, { agents: [agent, threeSteps(runs)] })
        yield* inc.maintenance.withMutation(sleepers(inc, agent, 3, now + 1_000, 1))
        for (let index = 0; index < 3; index++)
          yield* submit(inc, "busy", "three-steps", `busy-${index}`, { n: index })
        yield* TestClock.setTime(now + 1_002)
        // One lane head (the default budget) and every due row, in one event.
        const report = yield* deliverOk(ctx, inc.maintenance)
        expect([report.phase, report.settled]).toEqual(["actionable", 4])
        expect((yield* runsOf(runs)).done).toBe(3)
        yield* converge(ctx, inc.maintenance)
        expect((yield* runsOf(runs)).one).toBe(3)
      }),
    ),
  )

  it.effect("serve the queue a timer held once the timer's Submission settles", () =>
    inObject(objectName("timers-freed-lane"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [sleeper(runs), threeSteps(runs)] })
        yield* submit(inc, "lane", "sleeper", "nap", { millis: 2_000 })
        yield* deliverUntil(ctx, inc, now + 2_000)
        // Queued behind the sleeper: nothing runs for them until it settles.
        for (let index = 0; index < 2; index++)
          yield* submit(inc, "lane", "three-steps", `after-${index}`, { n: index })
        yield* deliverUntil(ctx, inc, now + 2_000)
        expect((yield* runsOf(runs)).one).toBeUndefined()
        // The timer's event settles the sleeper and acknowledges nothing new, yet the lane it
        // freed is served by the alarms that follow.
        yield* converge(ctx, inc.maintenance)
        expect(yield* runsOf(runs)).toMatchObject({ done: 1, one: 2, two: 2, three: 2 })
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect("correct a bound that is too early once, then stay caught up with no SQL", () =>
    inObject(objectName("timers-stale"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const runs = yield* makeRuns
        const inc = yield* incarnation(ctx, { agents: [sleeper(runs)] })
        yield* submit(inc, "lane", "sleeper", "k", { millis: 30_000 })
        yield* deliverUntil(ctx, inc, now + 30_000)
        const record = yield* rawState(ctx)
        yield* putRawState(ctx, { ...record, nextDueAt: now })
        const corrected = yield* inc.maintenance.pass
        expect([corrected.phase, corrected.settled]).toEqual(["actionable", 0])
        expect(yield* rawState(ctx)).toMatchObject({ nextDueAt: now + 30_000 })
        expect(yield* alarmOf(ctx)).toBe(now + 30_000)
        const forbidden = yield* forbidSql(ctx)
        expect((yield* inc.maintenance.pass).phase).toBe("caught-up")
        expect(forbidden.attempts).toEqual([])
      }),
    ),
  )

  it.effect("settle an Unknown Outcome whose reconcile failed once by alarms alone", () =>
    inObject(objectName("timers-reconcile"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const answers = yield* Ref.make<ReadonlyArray<"fail" | "happened">>(["fail", "happened"])
        const charge = define({
          id: "charge",
          version: "1",
          input: Schema.Struct({ n: Schema.Int }),
          output: Schema.String,
          program: ({ n }, ctx) =>
            ctx.uncertainStep("charge", Effect.as(ran(runs, "charge"), `charged-${n}`), {
              reconcile: Effect.gen(function* () {
                yield* ran(runs, "reconcile")
                const [next] = yield* Ref.getAndUpdate(answers, (all) => all.slice(1))
                return next === "fail"
                  ? yield* new AgentFailure({ message: "provider unavailable" })
                  : Reconcile.happened(`found-${n}`)
              }),
            }),
        })
        // The first Attempt dies after the charge started: its outcome is unknown.
        const crash = yield* freezeAt("uncertain:after-start-append")
        const first = yield* incarnation(ctx, { agents: [charge], runtime: crash.handler })
        const receipt = yield* submit(first, "lane", "charge", "k", { n: 3 })
        yield* abandon(deliverOk(ctx, first.maintenance))
        yield* crash.reached
        yield* TestClock.adjust(30_001)
        const second = yield* incarnation(ctx, { agents: [charge] })
        yield* second.maintenance.ensureAlarm
        // No person acts: the alarms run the reconcile, its backoff, and the next reconcile.
        yield* converge(ctx, second.maintenance)
        expect((yield* rowOf(second, receipt.submissionId)).settlement?.output).toBe("found-3")
        expect(yield* runsOf(runs)).toEqual({ reconcile: 2 })
      }),
    ),
  )
})
