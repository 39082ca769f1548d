import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { DurableAlarmError, ThreadHostMaintenanceError, ThreadPublicationError } from "../../src/Alarm.ts"
import { backoffDelay } from "../../src/internal/maintenance/backoff.ts"
import { DEADLINE_READ_MILLIS } from "../../src/internal/maintenance/maintenanceEnv.ts"
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
import { alarmOf, dayAhead, inObject, objectName, putRawState, rawState } from "./harness.ts"
import { maintenanceSwitchboard } from "../support/switchboard.ts"
import { incarnation } from "../support/incarnation.ts"

const refused = new ThreadHostMaintenanceError({
  hook: "outbox",
  operation: "host outbox",
  message: "relay unavailable",
})
const failingHost = (overrides: Parameters<typeof hostHooks>[0] = {}) =>
  hostHooks({ drainUntil: () => Effect.fail(refused), ...overrides })
const defaults = { alarmBackoffBase: 100, alarmBackoffCap: 5_000 }
const nativeDefectMessage = "lane selection died"
const nativeDefect = Effect.die(new Error(nativeDefectMessage))

describe("failure rearming", () => {
  it.effect("never moves the retry earlier across repeated failures and caps stalls at 30", () =>
    inObject(objectName("repeated"), (ctx) =>
      Effect.gen(function* () {
        let now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const { maintenance } = yield* incarnation(ctx, { host: failingHost() })
        let previous = { notBefore: 0, stalls: 0 }
        for (let failure = 1; failure <= 34; failure++) {
          const jitter = (failure * 0.377) % 1
          const exit = yield* Effect.exit(withJitter(jitter)(maintenance.pass))
          expect(failureOf(exit)).toBe(refused)
          const retry = yield* storedRetry(ctx)
          expect(retry).toEqual(
            encodedRetry({
              generation: 5n,
              notBefore: Math.max(previous.notBefore, now + backoffDelay(defaults, previous.stalls, jitter)),
              nativeOnly: false,
              stalls: Math.min(30, failure),
            }),
          )
          expect(yield* alarmOf(ctx)).toBe(retry?.notBefore)
          previous = { notBefore: retry!.notBefore, stalls: retry!.stalls }
          // Deliveries may come early (0 ms) or late; the wait never shrinks either way.
          const step = [0, 30, 2_000][failure % 3]!
          yield* TestClock.adjust(step)
          now += step
        }
      }),
    ),
  )

  // Seen with a due time past 2189 before the alarm was capped: the caught-up finish committed
  // (dropping the due retry), then the alarm write failed, and the count went 1, 2, 1, 2.
  it.effect.each(["caught up", "actionable"] as const)(
    "keeps backing off a %s event that fails after its finish committed",
    (kind) =>
      inObject(objectName(`after-finish-${kind.replace(" ", "-")}`), (ctx) =>
        Effect.gen(function* () {
          let now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n, kind === "actionable" ? { processed: "4" } : {}))
          const failpoints = yield* maintenanceSwitchboard()
          const { maintenance } = yield* incarnation(ctx, { maintenance: failpoints.handler })
          let previous = { notBefore: 0, stalls: 0 }
          for (let failure = 1; failure <= 6; failure++) {
            yield* failpoints.once("maintenance:finish:after", Effect.die(new Error("alarm write lost")))
            const exit = yield* Effect.exit(withJitter(0.5)(maintenance.pass))
            expect(Exit.isFailure(exit)).toBe(true)
            const retry = yield* storedRetry(ctx)
            expect(retry).toEqual(
              encodedRetry({
                generation: 5n,
                notBefore: Math.max(previous.notBefore, now + backoffDelay(defaults, previous.stalls, 0.5)),
                nativeOnly: false,
                stalls: failure,
              }),
            )
            expect(yield* alarmOf(ctx)).toBe(retry?.notBefore)
            previous = { notBefore: retry!.notBefore, stalls: retry!.stalls }
            // The next delivery comes when the retry is due.
            yield* TestClock.setTime(retry!.notBefore)
            now = retry!.notBefore
          }
        }),
      ),
  )

  it.effect("restarts the backoff for a newer generation", () =>
    inObject(objectName("newer-generation"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const old = encodedRetry({ generation: 4n, notBefore: now + 100_000, nativeOnly: true, stalls: 12 })
        yield* putRawState(ctx, caughtUpRecord(3n, { dirty: "4", retry: old }))
        const failpoints = yield* maintenanceSwitchboard()
        const { maintenance, gate } = yield* incarnation(ctx, {
          host: failingHost(),
          maintenance: failpoints.handler,
        })
        // Early delivery: caught up, the host fails, the pending wait only grows a stall.
        expect(failureOf(yield* Effect.exit(withJitter(0.5)(maintenance.pass)))).toBe(refused)
        expect(yield* storedRetry(ctx)).toEqual({ ...old, nativeOnly: false, stalls: 13 })
        expect(yield* alarmOf(ctx)).toBe(now + 100_000)

        yield* gate.withMutation(Effect.void)
        // Lane selection dies: a failure inside the native phase.
        yield* failpoints.once("maintenance:select:before", nativeDefect)
        const exit = yield* Effect.exit(withJitter(0.5)(maintenance.pass))
        expect(Exit.isFailure(exit) && Cause.pretty(exit.cause)).toContain(nativeDefectMessage)
        expect(yield* storedRetry(ctx)).toEqual(
          encodedRetry({ generation: 5n, notBefore: now + 75, nativeOnly: true, stalls: 1 }),
        )
        expect(yield* alarmOf(ctx)).toBe(now + 75)
      }),
    ),
  )

  it.effect("honours an overdue host deadline only after a native-phase failure", () =>
    Effect.gen(function* () {
      const now = yield* dayAhead
      const overdue = deadlineAt(now - 10)
      yield* inObject(objectName("overdue-after-host"), (ctx) =>
        Effect.gen(function* () {
          yield* putRawState(ctx, caughtUpRecord(5n))
          const { maintenance } = yield* incarnation(ctx, { host: failingHost({ pendingDeadline: overdue }) })
          yield* Effect.exit(withJitter(0.5)(maintenance.pass))
          expect(yield* alarmOf(ctx)).toBe(now + 75)
        }),
      )
      yield* inObject(objectName("overdue-after-native"), (ctx) =>
        Effect.gen(function* () {
          yield* putRawState(ctx, caughtUpRecord(4n, { dirty: "5" }))
          const failpoints = yield* maintenanceSwitchboard()
          yield* failpoints.once("maintenance:select:before", nativeDefect)
          const { maintenance } = yield* incarnation(ctx, {
            host: hostHooks({ pendingDeadline: overdue }),
            maintenance: failpoints.handler,
          })
          yield* Effect.exit(withJitter(0.5)(maintenance.pass))
          expect((yield* storedRetry(ctx))?.notBefore).toBe(now + 75)
          expect(yield* alarmOf(ctx)).toBe(now + 50)
        }),
      )
      yield* inObject(objectName("future-after-host"), (ctx) =>
        Effect.gen(function* () {
          yield* putRawState(ctx, caughtUpRecord(5n))
          const soon = deadlineAt(now + 60)
          const { maintenance } = yield* incarnation(ctx, { host: failingHost({ pendingDeadline: soon }) })
          yield* Effect.exit(withJitter(0.5)(maintenance.pass))
          expect(yield* alarmOf(ctx)).toBe(now + 60)
        }),
      )
    }),
  )

  it.effect("commits the retry even when the deadline read fails", () =>
    inObject(objectName("deadline-read-fails"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const unreadable = new ThreadHostMaintenanceError({
          hook: "outbox",
          operation: "read host deadline",
          message: "index unavailable",
        })
        const { maintenance } = yield* incarnation(ctx, {
          host: hostHooks({ pendingDeadline: Effect.fail(unreadable) }),
        })
        expect(failureOf(yield* Effect.exit(withJitter(0.5)(maintenance.pass)))).toBe(unreadable)
        expect((yield* storedRetry(ctx))?.notBefore).toBe(now + 75)
        expect(yield* alarmOf(ctx)).toBe(now + 75)
      }),
    ),
  )

  // As for a host hook: NaN would make every alarm derived from it NaN, which the caught-up
  // finish read as "nothing owed" and cleared, stranding owed native work with no alarm.
  it.effect.each([Number.NaN, Number.NEGATIVE_INFINITY])(
    "fails on a publication deadline of %s as the hook's failure and keeps owed work armed",
    (answer) =>
      inObject(objectName(`publication-${String(answer)}`), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n, { processed: "4" }))
          const { maintenance } = yield* incarnation(ctx, {
            publication: {
              invalidate: Effect.void,
              prepareGeneration: () => Effect.void,
              drain: Effect.void,
              pendingDeadline: Effect.succeed(Option.some(answer)),
            },
          })
          const error = failureOf(yield* Effect.exit(withJitter(0.5)(maintenance.pass)))
          expect(error).toBeInstanceOf(ThreadPublicationError)
          expect(error?.message).toContain(`pendingDeadline answered ${answer}`)
          expect(yield* storedRetry(ctx)).toEqual(
            encodedRetry({ generation: 5n, notBefore: now + 75, nativeOnly: false, stalls: 1 }),
          )
          expect(yield* alarmOf(ctx)).toBe(now + 75)
        }),
      ),
  )

  it.effect("commits the retry when the deadline read never answers, after a bounded wait", () =>
    inObject(objectName("deadline-read-stuck"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const { maintenance } = yield* incarnation(ctx, {
          host: failingHost({ pendingDeadline: Effect.never }),
        })
        const fiber = yield* Effect.forkChild(withJitter(0.5)(maintenance.pass))
        expect(yield* isDone(fiber)).toBe(false)
        yield* advance(DEADLINE_READ_MILLIS)
        expect(yield* isDone(fiber)).toBe(true)
        expect(failureOf(yield* Fiber.await(fiber))).toBe(refused)
        // The backoff is measured from when the commit ran, after the bounded read.
        const retry = yield* storedRetry(ctx)
        expect(retry?.notBefore).toBe(now + DEADLINE_READ_MILLIS + 75)
        expect(yield* alarmOf(ctx)).toBe(retry?.notBefore)
      }),
    ),
  )

  it.effect("never postpones a producer that raced or overlapped the failed pass", () =>
    Effect.gen(function* () {
      const now = yield* dayAhead
      yield* inObject(objectName("raced"), (ctx) =>
        Effect.gen(function* () {
          yield* putRawState(ctx, caughtUpRecord(5n))
          const { gate } = yield* incarnation(ctx)
          // A host mutation commits a newer generation during the event, then the host fails.
          const { maintenance } = yield* incarnation(ctx, {
            host: failingHost({
              drainUntil: () =>
                gate.withMutation(Effect.void).pipe(
                  Effect.mapError(() => refused),
                  Effect.andThen(Effect.fail(refused)),
                ),
            }),
          })
          yield* Effect.exit(withJitter(0.99)(maintenance.pass))
          expect(yield* storedRetry(ctx)).toEqual(
            encodedRetry({ generation: 5n, notBefore: now + 100, nativeOnly: false, stalls: 1 }),
          )
          expect(yield* alarmOf(ctx)).toBe(now + 50)
        }),
      )
      yield* inObject(objectName("overlapped"), (ctx) =>
        Effect.gen(function* () {
          yield* putRawState(ctx, caughtUpRecord(5n))
          const { maintenance, gate } = yield* incarnation(ctx, { host: failingHost() })
          const inBody = yield* Deferred.make<void>()
          const receipt = yield* Effect.forkChild(
            gate.withMutation(Effect.andThen(Deferred.succeed(inBody, undefined), Effect.never), {
              invalidatesRecovery: false,
            }),
          )
          yield* Deferred.await(inBody)
          yield* Effect.exit(withJitter(0.99)(maintenance.pass))
          expect((yield* storedRetry(ctx))?.notBefore).toBe(now + 100)
          expect(yield* alarmOf(ctx)).toBe(now + 50)
          yield* Fiber.interrupt(receipt)
        }),
      )
    }),
  )

  it.effect("leaves the begin prearm as the alarm when the backoff commit itself fails", () =>
    inObject(objectName("backoff-commit-fails"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const failpoints = yield* maintenanceSwitchboard()
        const corrupt = caughtUpRecord(5n, { dirty: "corrupt" })
        yield* failpoints.once(
          "maintenance:retry:before",
          Effect.promise(() => ctx.storage.put("effect-agent:thread-maintenance:v1", corrupt)),
        )
        const { maintenance } = yield* incarnation(ctx, {
          maintenance: failpoints.handler,
          host: failingHost(),
        })
        // The original failure still propagates.
        expect(failureOf(yield* Effect.exit(maintenance.pass))).toBe(refused)
        expect(yield* rawState(ctx)).toEqual(corrupt)
        expect(yield* alarmOf(ctx)).toBe(now + 50)
        expect(failpoints.hits).not.toContain("maintenance:retry:after")
      }),
    ),
  )

  it.effect("skips rearming when the failure struck before the generation was read", () =>
    inObject(objectName("before-begin"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const failpoints = yield* maintenanceSwitchboard()
        yield* failpoints.once("maintenance:begin:before", Effect.die("evicted"))
        const { maintenance } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        yield* Effect.exit(maintenance.pass)
        expect(failpoints.hits).toEqual(["maintenance:begin:before"])
        expect(yield* rawState(ctx)).toEqual(caughtUpRecord(5n))
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  // A stalled host deadline read no longer holds an event: it fails after a bounded wait
  // (caughtUpPass.test.ts).
  it.effect.each(["a delivery that never returns", "a paused failpoint"] as const)(
    "interrupts the event held by %s at its 14 minute deadline and commits the backoff",
    (holder) =>
      inObject(objectName(`deadline-${holder.replaceAll(" ", "-")}`), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n))
          const resources = makeResources()
          const held = yield* Deferred.make<void>()
          const failpoints = yield* maintenanceSwitchboard()
          const liveAtRetry: Array<number> = []
          yield* failpoints.once(
            "maintenance:retry:before",
            Effect.sync(() => liveAtRetry.push(resources.live)),
          )
          if (holder === "a paused failpoint") {
            yield* failpoints.once(
              "maintenance:finish:before",
              Effect.andThen(Deferred.succeed(held, undefined), Effect.never),
            )
          }
          const { maintenance } = yield* incarnation(ctx, {
            maintenance: failpoints.handler,
            host: hostHooks(),
            messages: {
              drainUntil: () =>
                holder === "a delivery that never returns"
                  ? Effect.andThen(
                      resources.acquire,
                      Effect.andThen(Deferred.succeed(held, undefined), Effect.never),
                    )
                  : Effect.void,
              pendingDeadline: deadlineAt(undefined),
            },
          })
          const pass = yield* Effect.forkChild(withJitter(0.5)(maintenance.pass))
          yield* Deferred.await(held)
          yield* advance(14 * 60_000 - 1)
          expect(yield* isDone(pass)).toBe(false)
          yield* advance(1)
          const error = failureOf(yield* Fiber.await(pass))
          expect(error).toBeInstanceOf(DurableAlarmError)
          expect(error).toMatchObject({ operation: "maintenance pass deadline" })
          expect(error?.message).toContain("14 minute deadline")
          const end = now + 14 * 60_000
          expect(yield* storedRetry(ctx)).toEqual(
            encodedRetry({ generation: 5n, notBefore: end + 75, nativeOnly: false, stalls: 1 }),
          )
          expect(yield* alarmOf(ctx)).toBe(end + 75)
          expect(liveAtRetry).toEqual([0])
        }),
      ),
  )
})
