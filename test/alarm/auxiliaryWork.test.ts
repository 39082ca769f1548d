import { describe, expect, it } from "@effect/vitest"
import { Cause, DateTime, Deferred, Effect, Exit, Fiber } from "effect"
import { ThreadHostMaintenanceError } from "../../src/Alarm.ts"
import { ThreadProjectionError } from "../../src/core/ThreadProjectionMaintenance.ts"
import {
  advance,
  caughtUpRecord,
  deadlineAt,
  encodedRetry,
  failureOf,
  hostHooks,
  isDone,
  makeResources,
  storedRetry,
  withJitter,
} from "./fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, putRawState } from "./harness.ts"
import { maintenanceSwitchboard } from "../support/switchboard.ts"
import { incarnation } from "../support/incarnation.ts"
import { makeRuns, threeSteps } from "../core/runtimeAgents.ts"
import { deliver, rowOf, submit } from "./actionable/fixtures.ts"

const fourteenMinutes = 14 * 60_000

describe("auxiliary work of a pass", () => {
  it.effect(
    "admits one initial host wave and delivery on a caught-up pass and closes their Scope first",
    () =>
      inObject(objectName("initial-wave"), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n))
          const resources = makeResources()
          const windows: Array<string> = []
          const wave =
            (label: string) => (sourceFinished: Effect.Effect<void>, dispatchUntil: DateTime.Utc) =>
              Effect.gen(function* () {
                yield* resources.acquire
                windows.push(`${label} until +${DateTime.toEpochMillis(dispatchUntil) - now}`)
                yield* sourceFinished
              })
          const failpoints = yield* maintenanceSwitchboard()
          const liveAtFinish: Array<number> = []
          yield* failpoints.once(
            "maintenance:finish:before",
            Effect.sync(() => liveAtFinish.push(resources.live)),
          )
          const { maintenance } = yield* incarnation(ctx, {
            maintenance: failpoints.handler,
            host: hostHooks({ drainUntil: wave("host") }),
            messages: { drainUntil: wave("delivery"), pendingDeadline: deadlineAt(undefined) },
          })
          expect((yield* maintenance.pass).alarm).toBe("cleared")
          expect(windows.sort()).toEqual([
            `delivery until +${fourteenMinutes}`,
            `host until +${fourteenMinutes}`,
          ])
          expect(resources.counts).toEqual({ acquired: 2, released: 2 })
          expect(liveAtFinish).toEqual([0])
        }),
      ),
  )

  it.effect("cuts a host drain off after its allowance, interrupts it and releases its resources", () =>
    inObject(objectName("host-cutoff"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const resources = makeResources()
        const retiring = yield* Deferred.make<void>()
        let interrupted = false
        const { maintenance } = yield* incarnation(ctx, {
          host: hostHooks({
            dispatchTimeoutMillis: 1_000,
            drainUntil: (sourceFinished) =>
              Effect.gen(function* () {
                yield* resources.acquire
                yield* sourceFinished
                yield* Deferred.succeed(retiring, undefined)
                return yield* Effect.never
              }).pipe(Effect.onInterrupt(() => Effect.sync(() => (interrupted = true)))),
          }),
        })
        const pass = yield* Effect.forkChild(maintenance.pass)
        yield* Deferred.await(retiring)
        yield* advance(999)
        expect(yield* isDone(pass)).toBe(false)
        yield* advance(1)
        const report = yield* Fiber.join(pass)
        expect([report.phase, report.alarm]).toEqual(["caught-up", "cleared"])
        expect(interrupted).toBe(true)
        expect(resources.live).toBe(0)
      }),
    ),
  )

  it.effect.each([0, 1.5, 300_001, Number.NaN])(
    "fails the pass for the host allowance %s and commits a failure retry",
    (allowance) =>
      inObject(objectName(`allowance-${allowance}`), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n))
          let drained = false
          const { maintenance } = yield* incarnation(ctx, {
            host: hostHooks({
              dispatchTimeoutMillis: allowance,
              drainUntil: () => Effect.sync(() => (drained = true)),
            }),
          })
          const exit = yield* Effect.exit(withJitter(0.5)(maintenance.pass))
          expect(failureOf(exit)).toMatchObject({
            _tag: "DurableAlarmError",
            operation: "host dispatch allowance",
            message: "Declare an integer whole-wave allowance between 1 and 300000 milliseconds",
          })
          expect(drained).toBe(false)
          expect(yield* storedRetry(ctx)).toEqual(
            encodedRetry({ generation: 5n, notBefore: now + 75, nativeOnly: false, stalls: 1 }),
          )
          expect(yield* alarmOf(ctx)).toBe(now + 75)
        }),
      ),
  )

  it.effect("accepts the boundary allowances of 1 and 300000 milliseconds", () =>
    inObject(objectName("allowance-bounds"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        for (const dispatchTimeoutMillis of [1, 300_000]) {
          const { maintenance } = yield* incarnation(ctx, { host: hostHooks({ dispatchTimeoutMillis }) })
          expect((yield* maintenance.pass).alarm).toBe("cleared")
        }
      }),
    ),
  )

  it.effect(
    "bounds a due backfill wave by projectionDispatchTimeoutMillis, and the timeout is no failure",
    () =>
      inObject(objectName("backfill-timeout"), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n))
          const draining = yield* Deferred.make<void>()
          let interrupted = false
          const { maintenance } = yield* incarnation(ctx, {
            config: { projectionDispatchTimeoutMillis: 2_000 },
            projection: {
              applyCommitted: () => Effect.void,
              drain: Effect.andThen(Deferred.succeed(draining, undefined), Effect.never).pipe(
                Effect.onInterrupt(() => Effect.sync(() => (interrupted = true))),
              ),
              pendingDeadline: Effect.suspend(() => deadlineAt(0)),
            },
          })
          const pass = yield* Effect.forkChild(maintenance.pass)
          yield* Deferred.await(draining)
          yield* advance(1_999)
          expect(yield* isDone(pass)).toBe(false)
          yield* advance(1)
          const report = yield* Fiber.join(pass)
          // The backlog is still due, so the slot is rearmed at the floor.
          expect([report.phase, report.alarm]).toEqual(["caught-up", "rearmed"])
          expect(interrupted).toBe(true)
        }),
      ),
  )

  it.effect("does not drain a backfill whose deadline is still ahead", () =>
    inObject(objectName("backfill-ahead"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const { maintenance } = yield* incarnation(ctx, {
          projection: {
            applyCommitted: () => Effect.void,
            drain: Effect.die("a backfill ahead of its deadline must not run"),
            pendingDeadline: deadlineAt(now + 9_000),
          },
        })
        expect((yield* maintenance.pass).alarm).toBe("rearmed")
        expect(yield* alarmOf(ctx)).toBe(now + 9_000)
      }),
    ),
  )

  it.effect("joins message delivery without a maintenance timer", () =>
    inObject(objectName("delivery-join"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const delivering = yield* Deferred.make<void>()
        const claimed = yield* Deferred.make<void>()
        let interrupted = false
        const { maintenance } = yield* incarnation(ctx, {
          messages: {
            drainUntil: () =>
              Effect.andThen(Deferred.succeed(delivering, undefined), Deferred.await(claimed)).pipe(
                Effect.onInterrupt(() => Effect.sync(() => (interrupted = true))),
              ),
            pendingDeadline: deadlineAt(undefined),
          },
        })
        const pass = yield* Effect.forkChild(maintenance.pass)
        yield* Deferred.await(delivering)
        // Far beyond the host allowance and the backfill timer, short of the event deadline.
        yield* advance(5 * 60_000)
        expect(yield* isDone(pass)).toBe(false)
        yield* Deferred.succeed(claimed, undefined)
        expect((yield* Fiber.join(pass)).alarm).toBe("cleared")
        expect(interrupted).toBe(false)
      }),
    ),
  )

  it.effect(
    "fails the pass when a host hook fails, with every auxiliary resource released before rearming",
    () =>
      inObject(objectName("host-fails"), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n))
          const resources = makeResources()
          const refused = new ThreadHostMaintenanceError({
            hook: "outbox",
            operation: "host outbox",
            message: "relay unavailable",
          })
          const failpoints = yield* maintenanceSwitchboard()
          const liveAtRetry: Array<number> = []
          yield* failpoints.once(
            "maintenance:retry:before",
            Effect.sync(() => liveAtRetry.push(resources.live)),
          )
          const { maintenance } = yield* incarnation(ctx, {
            maintenance: failpoints.handler,
            host: hostHooks({
              drainUntil: (sourceFinished) =>
                Effect.gen(function* () {
                  yield* resources.acquire
                  yield* sourceFinished
                  return yield* Effect.fail(refused)
                }),
            }),
            messages: {
              drainUntil: () => Effect.andThen(resources.acquire, Effect.never),
              pendingDeadline: deadlineAt(undefined),
            },
          })
          const exit = yield* Effect.exit(maintenance.pass)
          expect(failureOf(exit)).toBe(refused)
          expect(liveAtRetry).toEqual([0])
          expect(resources.counts).toEqual({ acquired: 2, released: 2 })
          expect((yield* storedRetry(ctx))?.nativeOnly).toBe(false)
          expect(failpoints.hits).not.toContain("maintenance:finish:before")
        }),
      ),
  )

  it.effect("runs native work when a hook throws instead of returning its drain, then fails the pass", () =>
    inObject(objectName("aux-throws"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const bug = new Error("the hook threw before returning its Effect")
        const inc = yield* incarnation(ctx, {
          agents: [threeSteps(runs)],
          host: hostHooks({
            drainUntil: () => {
              throw bug
            },
          }),
        })
        const { submissionId } = yield* submit(inc, "t", "three-steps", "k", { n: 1 })
        const exit = yield* withJitter(0.5)(deliver(ctx, inc.maintenance))
        // Its failure is reported after the native opportunity, never instead of it.
        expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
        expect((yield* rowOf(inc, submissionId)).state).toBe("settled")
        expect((yield* storedRetry(ctx))?.stalls).toBe(1)
      }),
    ),
  )

  it.effect("treats a hook's own interruption and a failed backfill as failures of the pass", () =>
    inObject(objectName("aux-failures"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const selfInterrupted = yield* incarnation(ctx, {
          host: hostHooks({ drainUntil: () => Effect.interrupt }),
        })
        const interrupted = yield* Effect.exit(selfInterrupted.maintenance.pass)
        expect(Exit.isFailure(interrupted) && Cause.hasInterrupts(interrupted.cause)).toBe(true)
        expect((yield* storedRetry(ctx))?.stalls).toBe(1)

        const broken = new ThreadProjectionError({ operation: "backfill", message: "index unavailable" })
        const failedBackfill = yield* incarnation(ctx, {
          projection: {
            applyCommitted: () => Effect.void,
            drain: Effect.fail(broken),
            pendingDeadline: deadlineAt(0),
          },
        })
        expect(failureOf(yield* Effect.exit(failedBackfill.maintenance.pass))).toBe(broken)
        expect((yield* storedRetry(ctx))?.stalls).toBe(2)
      }),
    ),
  )
})
