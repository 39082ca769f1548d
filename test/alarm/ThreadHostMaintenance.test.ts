import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, DateTime, Deferred, Effect, Exit, Fiber, Layer, Option } from "effect"
import * as Alarm from "../../src/Alarm.ts"
import {
  ThreadHostMaintenance,
  ThreadHostMaintenanceError,
  type ThreadHostMaintenanceService,
  ThreadMutationGate,
} from "../../src/Alarm.ts"
import {
  advance,
  caughtUpRecord,
  deadlineAt,
  failureOf,
  hostHooks,
  isDone,
  makeResources,
  storedRetry,
} from "./fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, putRawState } from "./harness.ts"
import { incarnation } from "../support/incarnation.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"

/** A lane of `all`, as an application writes one: a layer that provides `ThreadHostMaintenance`. */
const lane = (service: ThreadHostMaintenanceService) => Layer.succeed(ThreadHostMaintenance, service)

const refusal = (hook: string) =>
  new ThreadHostMaintenanceError({ hook, operation: "relay", message: `${hook} is unavailable` })

/** The typed failures of an exit, in order. */
const failuresOf = <A, E>(exit: Exit.Exit<A, E>): ReadonlyArray<E> =>
  Exit.isFailure(exit) ? exit.cause.reasons.filter(Cause.isFailReason).map((reason) => reason.error) : []

/** Builds `ThreadHostMaintenance.all(lanes)` on its own and returns the combined hook. */
const combined = <const Lanes extends ReadonlyArray<Layer.Layer<never, unknown, never>>>(lanes: Lanes) =>
  Effect.map(Layer.build(ThreadHostMaintenance.all(lanes)), (context) =>
    Context.get(context, ThreadHostMaintenance),
  )

describe("ThreadHostMaintenance.all", () => {
  it.effect(
    "runs every hook as a parallel lane with the Object's services, and arms the earliest deadline",
    () =>
      inObject(objectName("all-lanes"), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n))
          const resources = makeResources()
          const waves: Array<string> = []
          // Lane "b" lets lane "a" finish: run one after the other, neither would.
          const handoff = yield* Deferred.make<void>()
          const gated = (label: string, deadline: number, wave: Effect.Effect<void>) =>
            Layer.effect(
              ThreadHostMaintenance,
              Effect.gen(function* () {
                const gate = yield* ThreadMutationGate
                return hostHooks({
                  drainUntil: (sourceFinished) =>
                    Effect.gen(function* () {
                      yield* resources.acquire
                      yield* wave
                      yield* gate
                        .withMutation(
                          Effect.sync(() => waves.push(label)),
                          { invalidatesRecovery: false },
                        )
                        .pipe(Effect.mapError(() => refusal(label)))
                      yield* sourceFinished
                    }),
                  pendingDeadline: deadlineAt(now + deadline),
                })
              }),
            )
          const { maintenance } = yield* incarnation(ctx, {
            hostLayer: ThreadHostMaintenance.all([
              gated("a", 9_000, Deferred.await(handoff)),
              gated("b", 4_000, Deferred.succeed(handoff, undefined)),
            ]),
          })
          const report = yield* maintenance.pass
          expect(waves.sort()).toEqual(["a", "b"])
          expect(resources.counts).toEqual({ acquired: 2, released: 2 })
          expect([report.phase, report.alarm]).toEqual(["caught-up", "rearmed"])
          expect(yield* alarmOf(ctx)).toBe(now + 4_000)
          expect(yield* maintenance.hostDeadline).toEqual(Option.some(now + 4_000))
        }),
      ),
  )

  it.effect("joins each lane for at most its own allowance, so the wave lasts at most the largest", () =>
    inObject(objectName("all-cutoffs"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const interrupted: Array<string> = []
        const retiring = yield* Deferred.make<void>()
        const stuck = (label: string, dispatchTimeoutMillis: number) =>
          lane(
            hostHooks({
              dispatchTimeoutMillis,
              drainUntil: (sourceFinished) =>
                Effect.andThen(
                  sourceFinished,
                  Effect.andThen(Deferred.succeed(retiring, undefined), Effect.never),
                ).pipe(Effect.onInterrupt(() => Effect.sync(() => interrupted.push(label)))),
            }),
          )
        const hostLayer = ThreadHostMaintenance.all([stuck("short", 1_000), stuck("long", 3_000)])
        expect((yield* combined([stuck("short", 1_000), stuck("long", 3_000)])).dispatchTimeoutMillis).toBe(
          3_000,
        )
        const { maintenance } = yield* incarnation(ctx, { hostLayer })
        const pass = yield* Effect.forkChild(maintenance.pass)
        yield* Deferred.await(retiring)
        yield* advance(1_000)
        // The short lane is cut off at its own allowance, not granted its sibling's.
        expect(interrupted).toEqual(["short"])
        expect(yield* isDone(pass)).toBe(false)
        yield* advance(1_999)
        expect(yield* isDone(pass)).toBe(false)
        yield* advance(1)
        const report = yield* Fiber.join(pass)
        expect([report.phase, report.alarm]).toEqual(["caught-up", "cleared"])
        expect(interrupted).toEqual(["short", "long"])
      }),
    ),
  )

  it.effect(
    "lets the other lanes finish their wave when one fails, then fails the pass and commits a retry",
    () =>
      inObject(objectName("all-one-fails"), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n))
          const failing = yield* Deferred.make<void>()
          const delivered = yield* Deferred.make<void>()
          let receipts = 0
          let interrupted = false
          const { maintenance } = yield* incarnation(ctx, {
            hostLayer: ThreadHostMaintenance.all([
              lane(
                hostHooks({
                  drainUntil: (sourceFinished) =>
                    Effect.andThen(
                      sourceFinished,
                      Effect.andThen(Deferred.succeed(failing, undefined), Effect.fail(refusal("relay"))),
                    ),
                }),
              ),
              lane(
                hostHooks({
                  dispatchTimeoutMillis: 60_000,
                  drainUntil: (sourceFinished) =>
                    Effect.gen(function* () {
                      yield* sourceFinished
                      yield* Deferred.await(delivered)
                      receipts += 1
                    }).pipe(Effect.onInterrupt(() => Effect.sync(() => (interrupted = true)))),
                }),
              ),
            ]),
          })
          const pass = yield* Effect.forkChild(maintenance.pass)
          yield* Deferred.await(failing)
          yield* advance(30_000)
          // The failed lane does not end the wave while its sibling is within its allowance.
          expect(yield* isDone(pass)).toBe(false)
          yield* Deferred.succeed(delivered, undefined)
          const exit = yield* Fiber.await(pass)
          expect(failuresOf(exit)).toEqual([refusal("relay")])
          expect(receipts).toBe(1)
          expect(interrupted).toBe(false)
          expect((yield* storedRetry(ctx))?.stalls).toBe(1)
        }),
      ),
  )

  it.effect("fails the pass with the error of every failed lane", () =>
    inObject(objectName("all-both-fail"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const failingLane = (hook: string) =>
          lane(hostHooks({ drainUntil: () => Effect.fail(refusal(hook)) }))
        const { maintenance } = yield* incarnation(ctx, {
          hostLayer: ThreadHostMaintenance.all([failingLane("outbox"), failingLane("relay")]),
        })
        const exit = yield* Effect.exit(maintenance.pass)
        expect(failuresOf(exit)).toEqual([refusal("outbox"), refusal("relay")])
      }),
    ),
  )

  it.effect(
    "arms a healthy lane's deadline after a pass failed on a sibling lane's unreadable deadline",
    () =>
      inObject(objectName("all-unread-sibling"), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(5n))
          const unreadable = lane(hostHooks({ pendingDeadline: Effect.fail(refusal("cursor")) }))
          const owing = lane(hostHooks({ pendingDeadline: deadlineAt(now + 1_000) }))
          const { maintenance } = yield* incarnation(ctx, {
            hostLayer: ThreadHostMaintenance.all([unreadable, owing]),
          })
          // Failures back off up to the cap (5 s): each retry stands, but the lane that can answer
          // is still armed for its own deadline, as it would be alone.
          for (let failed = 0; failed < 6; failed++) {
            expect(failuresOf(yield* Effect.exit(maintenance.pass))).toEqual([refusal("cursor")])
            const at = yield* alarmOf(ctx)
            expect(at).not.toBeNull()
            const current = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
            // No earlier than the pass's begin prearm (50 ms on): the alarm never undercuts it.
            if (current < now + 1_000) expect(at!).toBeLessThanOrEqual(Math.max(now + 1_000, current + 50))
            yield* advance(at! - (yield* Effect.clockWith((clock) => clock.currentTimeMillis)))
          }
        }),
      ),
  )

  it.effect("fails the pass naming the lane whose deadline is not a time, even beside a valid one", () =>
    inObject(objectName("all-nan-lane"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const { maintenance } = yield* incarnation(ctx, {
          hostLayer: ThreadHostMaintenance.all([
            lane(hostHooks({ pendingDeadline: deadlineAt(now + 1_000) })),
            lane(hostHooks({ pendingDeadline: deadlineAt(Number.POSITIVE_INFINITY) })),
          ]),
        })
        const error = failureOf(yield* Effect.exit(maintenance.pass))
        expect(error).toBeInstanceOf(ThreadHostMaintenanceError)
        expect((error as ThreadHostMaintenanceError).hook).toBe("host maintenance lane 1")
      }),
    ),
  )

  it.effect("checks each lane's allowance on its own and still runs the valid lanes", () =>
    inObject(objectName("all-allowance"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const drained: Array<string> = []
        const drainer = (label: string, dispatchTimeoutMillis: number) =>
          lane(
            hostHooks({
              dispatchTimeoutMillis,
              drainUntil: () => Effect.sync(() => drained.push(label)),
            }),
          )
        const lanes = [drainer("invalid", 0), drainer("valid", 2_000)] as const
        expect((yield* combined(lanes)).dispatchTimeoutMillis).toBe(2_000)
        const { maintenance } = yield* incarnation(ctx, { hostLayer: ThreadHostMaintenance.all(lanes) })
        const exit = yield* Effect.exit(maintenance.pass)
        expect(failureOf(exit)).toMatchObject({
          _tag: "DurableAlarmError",
          operation: "host dispatch allowance",
        })
        expect(drained).toEqual(["valid"])
        expect((yield* storedRetry(ctx))?.stalls).toBe(1)
      }),
    ),
  )

  it.effect(
    "flattens combined hooks: the earliest deadline, the largest allowance, a failed read fails",
    () =>
      Effect.gen(function* () {
        const inner = ThreadHostMaintenance.all([
          lane(hostHooks({ dispatchTimeoutMillis: 500, pendingDeadline: deadlineAt(7_000) })),
          lane(hostHooks({ dispatchTimeoutMillis: 4_000, pendingDeadline: deadlineAt(undefined) })),
        ])
        const outer = yield* combined([
          inner,
          lane(hostHooks({ dispatchTimeoutMillis: 2_000, pendingDeadline: deadlineAt(3_000) })),
        ])
        expect(outer.dispatchTimeoutMillis).toBe(4_000)
        expect(yield* outer.pendingDeadline).toEqual(Option.some(3_000))

        const none = yield* combined([lane(hostHooks()), lane(hostHooks())])
        expect(yield* none.pendingDeadline).toEqual(Option.none())

        const unreadable = yield* combined([
          lane(hostHooks({ pendingDeadline: deadlineAt(1_000) })),
          lane(hostHooks({ pendingDeadline: Effect.fail(refusal("cursor")) })),
        ])
        expect(failureOf(yield* Effect.exit(unreadable.pendingDeadline))).toEqual(refusal("cursor"))
      }).pipe(Effect.scoped),
  )

  it.effect("runs every lane when the combined hook's own drain is called, and reports their failures", () =>
    Effect.gen(function* () {
      const drained: Array<string> = []
      const hook = yield* combined([
        lane(hostHooks({ drainUntil: () => Effect.fail(refusal("outbox")) })),
        lane(hostHooks({ drainUntil: () => Effect.sync(() => drained.push("relay")) })),
      ])
      const exit = yield* Effect.exit(hook.drainUntil(Effect.void, DateTime.makeUnsafe(0)))
      expect(failuresOf(exit)).toEqual([refusal("outbox")])
      expect(drained).toEqual(["relay"])
    }).pipe(Effect.scoped),
  )

  it.effect("runs the other lanes of its own drain when one throws instead of returning its drain", () =>
    Effect.gen(function* () {
      const drained: Array<string> = []
      const hook = yield* combined([
        lane(
          hostHooks({
            drainUntil: () => {
              throw new Error("the outbox threw")
            },
          }),
        ),
        lane(hostHooks({ drainUntil: () => Effect.sync(() => drained.push("relay")) })),
      ])
      const exit = yield* Effect.exit(hook.drainUntil(Effect.void, DateTime.makeUnsafe(0)))
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
      expect(drained).toEqual(["relay"])
    }).pipe(Effect.scoped),
  )

  it.effect("refuses a lane that provides no ThreadHostMaintenance", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(combined([lane(hostHooks()), Layer.empty]))
      expect(failureOf(exit)).toMatchObject({
        _tag: "ThreadHostMaintenanceError",
        hook: "lane 1",
        message: "lane 1 of ThreadHostMaintenance.all provides no ThreadHostMaintenance",
      })
    }).pipe(Effect.scoped),
  )
})

describe("the hooks an application provides", () => {
  // Before, one hook whose deadline could not be read failed `obligations` as a whole
  // (ThreadObjectFailure, reason hook): the operator saw nothing of what the Object owes.
  it.effect("answer obligations with the rest when one hook's deadline read fails, naming that hook", () =>
    inObject(objectName("hook-unread"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const { context, maintenance } = yield* incarnation(ctx, {
          hostLayer: ThreadHostMaintenance.all([
            lane(hostHooks({ pendingDeadline: Effect.fail(refusal("cursor")) })),
            lane(hostHooks({ pendingDeadline: deadlineAt(now + 4_000) })),
            lane(hostHooks({ pendingDeadline: Effect.succeed(Option.some(Number.NaN)) })),
          ]),
          publication: {
            invalidate: Effect.void,
            prepareGeneration: () => Effect.void,
            drain: Effect.void,
            pendingDeadline: Effect.fail(
              new Alarm.ThreadPublicationError({ operation: "read its cursor", message: "feed unreadable" }),
            ),
          },
        })
        // The Object's constructor gate: an unreadable deadline reads as due there.
        yield* maintenance.ensureAlarm
        expect(yield* alarmOf(ctx)).toBe(now + 50)
        const owed = yield* objectCalls(undefined)
          .obligations({ threadId: "t" })
          .pipe(Effect.provideContext(context))
        expect(owed.obligations.map((obligation) => [obligation.source, obligation.dueAt])).toEqual([
          ["host-deadline", now + 4_000],
        ])
        expect(owed.unreadDeadlines).toEqual([
          { source: "host-deadline", hook: "cursor", message: "cursor is unavailable" },
          {
            source: "host-deadline",
            hook: "host maintenance lane 2",
            message: "pendingDeadline answered NaN, not a finite epoch-ms time",
          },
          { source: "publication-deadline", hook: "publication", message: "feed unreadable" },
        ])
        expect(owed.impliedAlarm).toBe(now + 4_000)
      }),
    ),
  )

  it("offer no message delivery: delivery between Threads is the Object's own", () => {
    // @ts-expect-error message delivery is not a hook an application can provide
    expect(Alarm.ThreadMessageDelivery).toBeUndefined()
    expect(Object.keys(Alarm)).not.toContain("ThreadMessageDelivery")
  })
})
