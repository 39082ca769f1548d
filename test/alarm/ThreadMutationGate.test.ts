import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import { DurableAlarmError } from "../../src/Alarm.ts"
import { caughtUpRecord, failureOf, isDone } from "./fixtures.ts"
import { alarmOf, dayAhead, generations, inObject, objectName, putRawState, rawState } from "./harness.ts"
import { maintenanceSwitchboard } from "../support/switchboard.ts"
import { incarnation } from "../support/incarnation.ts"

const dirtyOf = (ctx: DurableObjectState) =>
  Effect.map(generations(ctx), Option.match({ onNone: () => undefined, onSome: (state) => state.dirty }))

describe("ThreadMutationGate", () => {
  it.effect("advances dirty and arms the alarm within the floor before the body runs", () =>
    inObject(objectName("prearm"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(4n))
        yield* Effect.promise(() => ctx.storage.setAlarm(now + 600_000))
        const { gate } = yield* incarnation(ctx)
        const seen = yield* gate.withMutation(
          Effect.all([dirtyOf(ctx), alarmOf(ctx)]).pipe(Effect.map(([dirty, alarm]) => ({ dirty, alarm }))),
        )
        expect(seen).toEqual({ dirty: 5n, alarm: now + 50 })
        // An earlier alarm is never postponed by a prearm.
        yield* Effect.promise(() => ctx.storage.setAlarm(now + 10))
        yield* gate.withMutation(Effect.void)
        expect(yield* alarmOf(ctx)).toBe(now + 10)
        expect(yield* dirtyOf(ctx)).toBe(6n)
      }),
    ),
  )

  it.effect("commits the generation and the alarm together, between dirty:before and dirty:after", () =>
    inObject(objectName("prearm-atomic"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(4n))
        const failpoints = yield* maintenanceSwitchboard()
        const observed: Array<unknown> = []
        const observe = Effect.gen(function* () {
          observed.push({ dirty: yield* dirtyOf(ctx), alarm: yield* alarmOf(ctx) })
        })
        yield* failpoints.once("maintenance:dirty:before", observe)
        yield* failpoints.once("maintenance:dirty:after", observe)
        const { gate } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        yield* gate.withMutation(Effect.void)
        expect(observed).toEqual([
          { dirty: 4n, alarm: null },
          { dirty: 5n, alarm: now + 50 },
        ])
      }),
    ),
  )

  it.effect("ensures the alarm without advancing dirty for receipt-only bookkeeping", () =>
    inObject(objectName("receipt-only"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(4n))
        const { gate } = yield* incarnation(ctx)
        const alarmInBody = yield* gate.withMutation(alarmOf(ctx), { invalidatesRecovery: false })
        expect(alarmInBody).toBe(now + 50)
        expect(yield* rawState(ctx)).toEqual(caughtUpRecord(4n))
      }),
    ),
  )

  it.effect("never runs the body when the prearm fails", () =>
    inObject(objectName("prearm-fails"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(4n, { dirty: "four" }))
        const failpoints = yield* maintenanceSwitchboard()
        const { gate } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        let ran = false
        const exit = yield* Effect.exit(gate.withMutation(Effect.sync(() => (ran = true))))
        expect(failureOf(exit)).toBeInstanceOf(DurableAlarmError)
        expect(ran).toBe(false)
        expect(failpoints.hits).toEqual(["maintenance:dirty:before"])
        expect(yield* gate.withSnapshot((active) => Effect.succeed(active))).toBe(0)
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect("hits its failpoints in order, and mutation:finished only after a successful body", () =>
    inObject(objectName("failpoint-order"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const failpoints = yield* maintenanceSwitchboard()
        const { gate } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        yield* gate.withMutation(Effect.sync(() => failpoints.hits.push("body")))
        expect(failpoints.hits).toEqual([
          "maintenance:dirty:before",
          "maintenance:dirty:after",
          "maintenance:mutation:armed",
          "body",
          "maintenance:mutation:finished",
        ])
        failpoints.hits.length = 0
        yield* Effect.exit(gate.withMutation(Effect.fail("refused")))
        expect(failpoints.hits).toEqual([
          "maintenance:dirty:before",
          "maintenance:dirty:after",
          "maintenance:mutation:armed",
        ])
      }),
    ),
  )

  it.effect(
    "counts active mutations for snapshots and releases them on success, failure and interruption",
    () =>
      inObject(objectName("active"), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          const { gate } = yield* incarnation(ctx)
          const active = gate.withSnapshot((count) => Effect.succeed(count))
          const started = yield* Deferred.make<void>()
          const proceed = yield* Deferred.make<void>()
          const blocked = (outcome: Effect.Effect<void, string>) =>
            gate.withMutation(
              Deferred.succeed(started, undefined).pipe(
                Effect.andThen(Deferred.await(proceed)),
                Effect.andThen(outcome),
              ),
            )

          const first = yield* Effect.forkChild(blocked(Effect.void))
          yield* Deferred.await(started)
          // The permit is not held across the body: a snapshot sees the mutation in flight.
          expect(yield* active).toBe(1)
          const second = yield* Effect.forkChild(
            gate.withMutation(Effect.andThen(Deferred.await(proceed), Effect.fail("refused"))),
          )
          yield* isDone(second)
          expect(yield* active).toBe(2)
          yield* Deferred.succeed(proceed, undefined)
          expect(yield* Fiber.await(first)).toEqual(Exit.void)
          expect(Exit.isFailure(yield* Fiber.await(second))).toBe(true)
          expect(yield* active).toBe(0)

          const hung = yield* Effect.forkChild(gate.withMutation(Effect.never))
          yield* isDone(hung)
          expect(yield* active).toBe(1)
          yield* Fiber.interrupt(hung)
          expect(yield* active).toBe(0)
        }),
      ),
  )

  it.effect("keeps a new mutation from beginning while a snapshot body runs", () =>
    inObject(objectName("snapshot-excludes"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(4n))
        const { gate } = yield* incarnation(ctx)
        const inSnapshot = yield* Deferred.make<void>()
        const certify = yield* Deferred.make<void>()
        const snapshot = yield* Effect.forkChild(
          gate.withSnapshot(() =>
            Effect.andThen(Deferred.succeed(inSnapshot, undefined), Deferred.await(certify)),
          ),
        )
        yield* Deferred.await(inSnapshot)
        const mutation = yield* Effect.forkChild(gate.withMutation(Effect.void))
        expect(yield* isDone(mutation)).toBe(false)
        expect(yield* dirtyOf(ctx)).toBe(4n)
        yield* Deferred.succeed(certify, undefined)
        yield* Fiber.join(snapshot)
        yield* Fiber.join(mutation)
        expect(yield* dirtyOf(ctx)).toBe(5n)
      }),
    ),
  )
})
