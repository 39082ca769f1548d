import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { ThreadHostMaintenanceError, type ThreadPublicationService } from "../../src/Alarm.ts"
import {
  advance,
  caughtUpRecord,
  deadlineAt,
  encodedRetry,
  failureOf,
  forbidSql,
  hostHooks,
  isDone,
  storedRetry,
  withJitter,
} from "./fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, putRawState, rawState } from "./harness.ts"
import { maintenanceSwitchboard } from "../support/switchboard.ts"
import { incarnation } from "../support/incarnation.ts"

const reportOf = (report: {
  phase: string
  recovered: number
  settled: number
  nonterminal: number
  alarm: string
}) => [report.phase, report.recovered, report.settled, report.nonterminal, report.alarm]

const relayRefused = new ThreadHostMaintenanceError({
  hook: "outbox",
  operation: "host outbox",
  message: "relay unavailable",
})

/** A host whose drain fails with `relayRefused` while `failing` is set. */
const flakyHost = () => {
  const state = { failing: true }
  const hooks = hostHooks({
    drainUntil: () => Effect.suspend(() => (state.failing ? Effect.fail(relayRefused) : Effect.void)),
  })
  return Object.assign(state, { hooks })
}

describe("a caught-up pass", () => {
  it.effect("does O(1) work with no SQL and no runtime call, and clears the alarm", () =>
    inObject(objectName("quiescent"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const record = caughtUpRecord(5n, { nonterminal: 2, lastServedThreadId: "lane-a" })
        yield* putRawState(ctx, record)
        yield* Effect.promise(() => ctx.storage.setAlarm(now))
        const failpoints = yield* maintenanceSwitchboard()
        const { maintenance } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        const spy = yield* forbidSql(ctx)
        // Every runtime call reads SQL: a pass that ran no statement ran no native work.
        const report = yield* maintenance.pass
        expect(spy.attempts).toEqual([])
        expect(reportOf(report)).toEqual(["caught-up", 0, 0, 2, "cleared"])
        expect(yield* alarmOf(ctx)).toBeNull()
        expect(yield* rawState(ctx)).toEqual(record)
        expect(failpoints.hits).toEqual([
          "maintenance:begin:before",
          "maintenance:begin:after",
          "maintenance:finish:before",
          "maintenance:finish:after",
        ])
      }),
    ),
  )

  it.effect("is what a dirty generation gets while its retry is not yet due, rearming at the retry", () =>
    inObject(objectName("retry-pending"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const retry = encodedRetry({ generation: 4n, notBefore: now + 20_000, nativeOnly: true, stalls: 2 })
        const record = caughtUpRecord(3n, { dirty: "4", retry })
        yield* putRawState(ctx, record)
        const { maintenance } = yield* incarnation(ctx)
        const spy = yield* forbidSql(ctx)
        const report = yield* maintenance.pass
        expect(spy.attempts).toEqual([])
        expect(reportOf(report)).toEqual(["caught-up", 0, 0, 0, "rearmed"])
        expect(yield* alarmOf(ctx)).toBe(now + 20_000)
        expect(yield* rawState(ctx)).toEqual(record)
      }),
    ),
  )

  it.effect("prearms within the floor before any host hook runs", () =>
    inObject(objectName("prearm"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const calls: Array<string> = []
        const failpoints = yield* maintenanceSwitchboard()
        const begun = yield* failpoints.pause("maintenance:begin:after")
        const { maintenance } = yield* incarnation(ctx, {
          maintenance: failpoints.handler,
          host: hostHooks({
            drainUntil: () => Effect.sync(() => calls.push("host drain")),
            pendingDeadline: Effect.sync(() => calls.push("host deadline")).pipe(
              Effect.andThen(deadlineAt(undefined)),
            ),
          }),
        })
        const pass = yield* Effect.forkChild(maintenance.pass)
        yield* begun.reached
        expect(yield* alarmOf(ctx)).toBe(now + 50)
        expect(calls).toEqual([])
        yield* begun.release
        expect((yield* Fiber.join(pass)).alarm).toBe("cleared")
        expect(calls).toEqual(["host drain", "host deadline"])
      }),
    ),
  )

  it.effect("rearms for a pending host deadline, never earlier than the floor", () =>
    inObject(objectName("host-deadline"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        let deadline = now + 5_000
        const { maintenance } = yield* incarnation(ctx, {
          host: hostHooks({ pendingDeadline: Effect.suspend(() => deadlineAt(deadline)) }),
        })
        expect((yield* maintenance.pass).alarm).toBe("rearmed")
        expect(yield* alarmOf(ctx)).toBe(now + 5_000)
        deadline = now - 1_000
        expect((yield* maintenance.pass).alarm).toBe("rearmed")
        expect(yield* alarmOf(ctx)).toBe(now + 50)
      }),
    ),
  )

  it.effect("services a host deadline before a pending retry without touching the retry", () =>
    inObject(objectName("host-before-retry"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const retry = encodedRetry({ generation: 4n, notBefore: now + 20_000, nativeOnly: true, stalls: 2 })
        const record = caughtUpRecord(3n, { dirty: "4", retry })
        yield* putRawState(ctx, record)
        const { maintenance } = yield* incarnation(ctx, {
          host: hostHooks({ pendingDeadline: deadlineAt(now + 2_000) }),
        })
        expect((yield* maintenance.pass).phase).toBe("caught-up")
        expect(yield* alarmOf(ctx)).toBe(now + 2_000)
        expect(yield* rawState(ctx)).toEqual(record)
      }),
    ),
  )

  it.effect("rearms at the scan cadence while receipt-only bookkeeping is in flight", () =>
    inObject(objectName("mutation-active"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const { maintenance, gate } = yield* incarnation(ctx)
        const inBody = yield* Deferred.make<void>()
        const mutation = yield* Effect.forkChild(
          gate.withMutation(Effect.andThen(Deferred.succeed(inBody, undefined), Effect.never), {
            invalidatesRecovery: false,
          }),
        )
        yield* Deferred.await(inBody)
        expect((yield* maintenance.pass).alarm).toBe("rearmed")
        expect(yield* alarmOf(ctx)).toBe(now + 1_000)
        yield* Fiber.interrupt(mutation)
      }),
    ),
  )

  it.effect("defers native work while required publication stays pending", () =>
    inObject(objectName("publication-pending"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n, { dirty: "4" }))
        const calls: Array<string> = []
        const publication: ThreadPublicationService = {
          invalidate: Effect.void,
          prepareGeneration: (generation) => Effect.sync(() => calls.push(`prepare ${generation}`)),
          drain: Effect.sync(() => calls.push("drain")),
          pendingDeadline: deadlineAt(now - 1),
        }
        const { maintenance, gate } = yield* incarnation(ctx, { publication })
        // Publication gates the actionable generation: no native work runs, the pass is caught up.
        expect(reportOf(yield* maintenance.pass)).toEqual(["caught-up", 0, 0, 0, "rearmed"])
        expect(calls).toEqual(["prepare 4", "drain"])
        expect(yield* alarmOf(ctx)).toBe(now + 50)

        // With a source mutation in flight at the start snapshot, no generation is prepared.
        calls.length = 0
        const inBody = yield* Deferred.make<void>()
        const receipt = yield* Effect.forkChild(
          gate.withMutation(Effect.andThen(Deferred.succeed(inBody, undefined), Effect.never), {
            invalidatesRecovery: false,
          }),
        )
        yield* Deferred.await(inBody)
        expect((yield* maintenance.pass).phase).toBe("caught-up")
        expect(calls).toEqual(["drain"])
        yield* Fiber.interrupt(receipt)
      }),
    ),
  )

  it.effect("leaves publication that is not yet due to its own deadline", () =>
    inObject(objectName("publication-ahead"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const publication: ThreadPublicationService = {
          invalidate: Effect.void,
          prepareGeneration: () => Effect.die("a caught-up pass prepares no generation"),
          drain: Effect.die("publication ahead of its deadline must not drain"),
          pendingDeadline: deadlineAt(now + 4_000),
        }
        const { maintenance } = yield* incarnation(ctx, { publication })
        expect((yield* maintenance.pass).alarm).toBe("rearmed")
        expect(yield* alarmOf(ctx)).toBe(now + 4_000)
      }),
    ),
  )

  it.effect("drains due publication and clears once nothing is pending", () =>
    inObject(objectName("publication-drained"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        let pending = true
        const publication: ThreadPublicationService = {
          invalidate: Effect.void,
          prepareGeneration: () => Effect.die("a caught-up pass prepares no generation"),
          drain: Effect.sync(() => (pending = false)),
          pendingDeadline: Effect.suspend(() => deadlineAt(pending ? now : undefined)),
        }
        const { maintenance } = yield* incarnation(ctx, { publication })
        expect((yield* maintenance.pass).alarm).toBe("cleared")
        expect(pending).toBe(false)
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect("never lets a later failure commit a retry earlier than one a success left standing", () =>
    inObject(objectName("success-keeps-retry"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const host = flakyHost()
        const { maintenance } = yield* incarnation(ctx, { host: host.hooks })
        // Five failures at one instant back the host off to 75·2^4 ms.
        for (let failure = 0; failure < 5; failure++) {
          expect(failureOf(yield* Effect.exit(withJitter(0.5)(maintenance.pass)))).toBe(relayRefused)
        }
        const backedOff = yield* storedRetry(ctx)
        expect(backedOff).toEqual(
          encodedRetry({ generation: 5n, notBefore: now + 1_200, nativeOnly: false, stalls: 5 }),
        )
        // An early success (a host deadline pulled the alarm in) does not end a wait still running.
        host.failing = false
        expect((yield* maintenance.pass).alarm).toBe("cleared")
        host.failing = true
        expect(failureOf(yield* Effect.exit(withJitter(0.5)(maintenance.pass)))).toBe(relayRefused)
        const after = yield* storedRetry(ctx)
        expect(after?.notBefore).toBeGreaterThanOrEqual(now + 1_200)
        expect(after).toEqual(
          encodedRetry({ generation: 5n, notBefore: now + 2_400, nativeOnly: false, stalls: 6 }),
        )
      }),
    ),
  )

  it.effect("does not keep the Object awake for the retry of a failed caught-up pass", () =>
    inObject(objectName("failed-then-quiet"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const host = flakyHost()
        const { maintenance } = yield* incarnation(ctx, { host: host.hooks })
        const failed = yield* Effect.exit(withJitter(0.5)(maintenance.pass))
        expect(failureOf(failed)).toBe(relayRefused)
        const retry = encodedRetry({ generation: 5n, notBefore: now + 75, nativeOnly: false, stalls: 1 })
        expect(yield* rawState(ctx)).toEqual(caughtUpRecord(5n, { retry }))
        expect(yield* alarmOf(ctx)).toBe(now + 75)

        host.failing = false
        expect((yield* maintenance.pass).alarm).toBe("cleared")
        expect(yield* alarmOf(ctx)).toBeNull()
        // The wait is not over yet: a failure now would continue it, not restart it.
        expect(yield* rawState(ctx)).toEqual(caughtUpRecord(5n, { retry }))
        // The first success once it is due ends it.
        yield* TestClock.adjust(75)
        expect((yield* maintenance.pass).alarm).toBe("cleared")
        expect(yield* alarmOf(ctx)).toBeNull()
        expect(yield* rawState(ctx)).toEqual(caughtUpRecord(5n))
      }),
    ),
  )

  it.effect("fails by name, soon, when a hook's deadline read never answers, and lets mutations in", () =>
    inObject(objectName("stuck-deadline"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const { maintenance } = yield* incarnation(ctx, {
          host: hostHooks({ pendingDeadline: Effect.never }),
        })
        const pass = yield* Effect.forkChild(withJitter(0.5)(maintenance.pass))
        // The finish reads the deadline under the mutation gate: a submit waits meanwhile.
        const submit = yield* Effect.forkChild(maintenance.withMutation(Effect.void))
        yield* advance(4_999)
        expect(yield* isDone(pass)).toBe(false)
        yield* advance(1)
        // The rearm's own read of the deadline is cut off after another five seconds.
        yield* advance(5_000)
        expect(yield* isDone(pass)).toBe(true)
        expect(failureOf(yield* Fiber.await(pass))).toMatchObject({
          _tag: "DurableAlarmError",
          operation: "read pending deadlines",
        })
        expect((yield* storedRetry(ctx))?.stalls).toBe(1)
        expect(yield* isDone(submit)).toBe(true)
      }),
    ),
  )
})
