/**
 * The delivery driver over a real outbox, gate and alarm in a Durable Object, with a scripted
 * port standing in for the other Objects: what it sends, in which order, how many at once,
 * what it makes durable before returning, and how the pass and the alarm follow it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, DateTime, Deferred, Effect, Fiber, Option, Queue } from "effect"
import type { ThreadMessageDeliveryService } from "../../src/internal/maintenance/hooks.ts"
import { IdempotencyKey, SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { type DeliveryOutcome, MessageOutbox, type NewMessage } from "../../src/core/MessageOutbox.ts"
import { undeliverableIsFinal } from "../../src/core/internal/runtime/children/children.ts"
import { type DeliverySettings, makeMessageDelivery, retryDelay } from "../../src/internal/delivery/driver.ts"
import {
  type PortEnvelope,
  type PortFailure,
  PortProtocolError,
  type PortReply,
  PortUnavailable,
  PortUnreachable,
} from "../../src/RoutedPort.ts"
import { advance, caughtUpRecord, isDone, settle } from "./fixtures.ts"
import { alarmOf, dayAhead, generations, inObject, objectName, putRawState } from "./harness.ts"
import { incarnation } from "../support/incarnation.ts"

const settings: DeliverySettings = {
  attemptTimeoutMillis: 1_000,
  retryBaseMillis: 100,
  retryCapMillis: 1_000,
  concurrency: 4,
  waveSize: 16,
}

const child = { namespace: "THREADS", objectName: "child" } as const

const admit = (id: string): NewMessage => ({
  messageId: id,
  target: child,
  message: {
    _tag: "AdmitChild",
    threadId: ThreadId.make("child-thread"),
    idempotencyKey: IdempotencyKey.make(id),
    agentId: "fraud" as never,
    agentDigest: "d",
    input: { id },
    parent: {
      address: { namespace: "THREADS", objectId: "f".repeat(64) },
      threadId: ThreadId.make("parent-thread"),
      submissionId: SubmissionId.make("parent"),
      step: 0,
    },
  },
})

const abort = (id: string, dependsOn?: string): NewMessage => ({
  messageId: id,
  target: child,
  message: {
    _tag: "AbortChild",
    threadId: ThreadId.make("child-thread"),
    idempotencyKey: IdempotencyKey.make(id),
  },
  ...(dependsOn === undefined ? {} : { dependsOn }),
})

const settledMarker = (id: string): NewMessage => ({
  messageId: id,
  target: { namespace: "THREADS", objectId: "f".repeat(64) },
  message: {
    _tag: "ChildSettled",
    parentSubmissionId: SubmissionId.make("parent"),
    step: 0,
    childSubmissionId: SubmissionId.make("child-1"),
    outcome: "completed",
  },
})

const admitted: PortReply = {
  _tag: "ChildAdmitted",
  submissionId: SubmissionId.make("child-1"),
  receiptId: "r" as never,
  replayed: false,
}
const abortRecorded: PortReply = { _tag: "ChildAbortRecorded", known: true }

type Script = (envelope: PortEnvelope) => Effect.Effect<PortReply, PortFailure>

/** The driver over the Object's own outbox and gate; the port answers by `script`. */
const deliveryWorld = (
  ctx: DurableObjectState,
  script: Script,
  invalidates = false,
  nudged?: Effect.Effect<void>,
) =>
  Effect.gen(function* () {
    const sent: Array<string> = []
    const recorded: Array<{ readonly messageId: string; readonly outcome: DeliveryOutcome }> = []
    let driver: ThreadMessageDeliveryService | undefined
    const messages: ThreadMessageDeliveryService = {
      drainUntil: (finished, until) =>
        Effect.suspend(() => driver?.drainUntil(finished, until) ?? Effect.void),
      pendingDeadline: Effect.suspend(() => driver?.pendingDeadline ?? Effect.succeed(Option.none())),
    }
    const live = yield* incarnation(ctx, { messages })
    const outbox = Context.get(live.context, MessageOutbox)
    driver = makeMessageDelivery({
      outbox,
      gate: live.gate,
      port: {
        call: (_address, envelope) =>
          Effect.suspend(() => {
            sent.push(envelope.messageId)
            return script(envelope)
          }),
      },
      recorder: {
        invalidatesRecovery: () => invalidates,
        undeliverableIsFinal,
        record: (row, outcome) =>
          Effect.flatMap(
            Effect.sync(() => recorded.push({ messageId: row.messageId, outcome })),
            () =>
              Effect.flatMap(DateTime.now, (now) =>
                outbox.acknowledge(row.messageId, DateTime.toEpochMillis(now)),
              ),
          ),
      },
      settings,
      ...(nudged === undefined ? {} : { nudged }),
    })
    return { driver, outbox, sent, recorded, maintenance: live.maintenance }
  })

const horizon = (now: number) => DateTime.makeUnsafe(now + 14 * 60_000)

describe("ThreadMessageDelivery driver", () => {
  it.effect("delivers due messages, records each reply through the gate and acknowledges them", () =>
    inObject(objectName("delivery-ack"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        const world = yield* deliveryWorld(ctx, () => Effect.succeed(admitted), true)
        yield* world.outbox.enqueue([admit("a"), admit("b")], now)
        expect(yield* world.driver.pendingDeadline).toEqual(Option.some(now))
        yield* world.driver.drainUntil(Effect.void, horizon(now)).pipe(Effect.scoped)
        expect(world.sent.sort()).toEqual(["a", "b"])
        expect(world.recorded.map((r) => [r.messageId, r.outcome._tag]).sort()).toEqual([
          ["a", "Replied"],
          ["b", "Replied"],
        ])
        expect(yield* world.driver.pendingDeadline).toEqual(Option.none())
        // Each recording that changes native work advances the generation and prearms.
        expect(Option.getOrThrow(yield* generations(ctx)).dirty).toBe(5n)
        expect(yield* alarmOf(ctx)).toBe(now + 50)
      }),
    ),
  )

  it.effect("sends at each nudge what native work enqueued since, before native work ends", () =>
    inObject(objectName("delivery-nudge"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        const nudges = yield* Queue.unbounded<void>()
        const world = yield* deliveryWorld(ctx, () => Effect.succeed(admitted), false, Queue.take(nudges))
        const finished = yield* Deferred.make<void>()
        const settleTurns = Effect.forEach([1, 2, 3, 4, 5], () => Effect.yieldNow, { discard: true })
        const fiber = yield* Effect.forkChild(
          world.driver.drainUntil(Deferred.await(finished), horizon(now)).pipe(Effect.scoped),
        )
        yield* settleTurns
        // Enqueued during native work: without a nudge it waits for native work to end.
        yield* world.outbox.enqueue([admit("a")], now)
        yield* settleTurns
        expect(world.sent).toEqual([])
        yield* Queue.offer(nudges, undefined)
        yield* settleTurns
        expect(world.sent).toEqual(["a"])
        expect(world.recorded.map((r) => r.messageId)).toEqual(["a"])
        expect(yield* isDone(fiber)).toBe(false)
        // What native work enqueues after the last nudge leaves with the wave at its end.
        yield* world.outbox.enqueue([admit("b")], now)
        yield* Deferred.succeed(finished, undefined)
        yield* Fiber.join(fiber)
        expect(world.sent).toEqual(["a", "b"])
      }),
    ),
  )

  it.effect("persists the retry of a failed delivery before it returns, with capped doubling backoff", () =>
    inObject(objectName("delivery-retry"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        const world = yield* deliveryWorld(ctx, () =>
          Effect.fail(new PortUnavailable({ message: "network down" })),
        )
        yield* world.outbox.enqueue([admit("a")], now)
        const delays: Array<number> = []
        for (let attempt = 0; attempt < 6; attempt++) {
          const before = (yield* world.outbox.lookup("a")).pipe(Option.getOrThrow)
          yield* advance(Math.max(0, before.nextAttemptAt - DateTime.toEpochMillis(yield* DateTime.now)))
          const at = DateTime.toEpochMillis(yield* DateTime.now)
          yield* world.driver.drainUntil(Effect.void, horizon(at)).pipe(Effect.scoped)
          const row = (yield* world.outbox.lookup("a")).pipe(Option.getOrThrow)
          expect(row.attempts).toBe(attempt + 1)
          expect(row.lastError).toBe("network down")
          delays.push(row.nextAttemptAt - at)
        }
        expect(delays).toEqual([100, 200, 400, 800, 1_000, 1_000])
        expect(delays).toEqual([0, 1, 2, 3, 4, 5].map((n) => retryDelay(settings, n)))
        expect(world.recorded).toEqual([])
        // A retry is receipt-only bookkeeping: it never creates native recovery debt.
        expect(Option.getOrThrow(yield* generations(ctx)).dirty).toBe(3n)
      }),
    ),
  )

  it.effect("bounds each delivery by its own timeout and records the retry when it expires", () =>
    inObject(objectName("delivery-timeout"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        const world = yield* deliveryWorld(ctx, () => Effect.never)
        yield* world.outbox.enqueue([admit("a")], now)
        const fiber = yield* Effect.forkChild(
          world.driver.drainUntil(Effect.void, horizon(now)).pipe(Effect.scoped),
        )
        yield* advance(999)
        expect(yield* isDone(fiber)).toBe(false)
        yield* advance(1)
        yield* Fiber.join(fiber)
        const row = (yield* world.outbox.lookup("a")).pipe(Option.getOrThrow)
        expect(row).toMatchObject({ attempts: 1, nextAttemptAt: now + 1_000 + 100 })
        expect(row.lastError).toContain("no answer within 1000 ms")
      }),
    ),
  )

  it.effect("keeps at most four deliveries in flight", () =>
    inObject(objectName("delivery-concurrency"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        const gate = yield* Deferred.make<void>()
        let inFlight = 0
        let peak = 0
        const world = yield* deliveryWorld(ctx, () =>
          Effect.gen(function* () {
            inFlight++
            peak = Math.max(peak, inFlight)
            yield* Deferred.await(gate)
            inFlight--
            return admitted
          }),
        )
        yield* world.outbox.enqueue(
          Array.from({ length: 10 }, (_, index) => admit(`m${index}`)),
          now,
        )
        const fiber = yield* Effect.forkChild(
          world.driver.drainUntil(Effect.void, horizon(now)).pipe(Effect.scoped),
        )
        yield* settle
        expect(inFlight).toBe(4)
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(fiber)
        expect(peak).toBe(4)
        expect(world.recorded).toHaveLength(10)
      }),
    ),
  )

  it.effect("starts no delivery whose timeout would outlast the event's dispatch horizon", () =>
    inObject(objectName("delivery-horizon"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        const world = yield* deliveryWorld(ctx, () => Effect.succeed(admitted))
        yield* world.outbox.enqueue([admit("a")], now)
        yield* world.driver.drainUntil(Effect.void, DateTime.makeUnsafe(now + 999)).pipe(Effect.scoped)
        expect(world.sent).toEqual([])
        expect(yield* world.driver.pendingDeadline).toEqual(Option.some(now))
      }),
    ),
  )

  it.effect(
    "ends an admission or an abort that can never be delivered, and keeps retrying a settlement marker",
    () =>
      inObject(objectName("delivery-permanent"), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(3n))
          const world = yield* deliveryWorld(ctx, (envelope) =>
            envelope.request._tag === "AdmitChild"
              ? Effect.fail(
                  new PortUnreachable({ message: "no Durable Object namespace is bound as THREADS" }),
                )
              : Effect.fail(new PortProtocolError({ reason: "malformed-request", message: "unknown kind" })),
          )
          yield* world.outbox.enqueue([admit("a"), abort("x"), settledMarker("s")], now)
          yield* world.driver.drainUntil(Effect.void, horizon(now)).pipe(Effect.scoped)
          expect(world.recorded).toEqual([
            {
              messageId: "a",
              outcome: { _tag: "Undeliverable", message: "no Durable Object namespace is bound as THREADS" },
            },
            {
              messageId: "x",
              outcome: { _tag: "Undeliverable", message: "malformed-request: unknown kind" },
            },
          ])
          // The parent must hear its child: the marker waits for a receiver that can decode it.
          const marker = (yield* world.outbox.lookup("s")).pipe(Option.getOrThrow)
          expect(marker).toMatchObject({ attempts: 1, lastError: "malformed-request: unknown kind" })
          expect(marker.acknowledgedAt).toBeUndefined()
          expect(yield* world.driver.pendingDeadline).toEqual(Option.some(now + settings.retryBaseMillis))
        }),
      ),
  )

  it.effect("retries a reply that does not answer the message's kind", () =>
    inObject(objectName("delivery-mismatch"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        const world = yield* deliveryWorld(ctx, () => Effect.succeed(abortRecorded))
        yield* world.outbox.enqueue([admit("a")], now)
        yield* world.driver.drainUntil(Effect.void, horizon(now)).pipe(Effect.scoped)
        expect(world.recorded).toEqual([])
        const row = (yield* world.outbox.lookup("a")).pipe(Option.getOrThrow)
        expect(row.lastError).toBe("the receiver answered AdmitChild with ChildAbortRecorded")
      }),
    ),
  )

  it.effect("sends a dependent message only after its dependency is acknowledged, in a later wave", () =>
    inObject(objectName("delivery-order"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(3n))
        const world = yield* deliveryWorld(ctx, (envelope) =>
          Effect.succeed(envelope.request._tag === "AdmitChild" ? admitted : abortRecorded),
        )
        yield* world.outbox.enqueue([abort("stop", "start"), admit("start")], now)
        const sourceFinished = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(
          world.driver.drainUntil(Deferred.await(sourceFinished), horizon(now)).pipe(Effect.scoped),
        )
        yield* settle
        expect(world.sent).toEqual(["start"])
        yield* Deferred.succeed(sourceFinished, undefined)
        yield* Fiber.join(fiber)
        expect(world.sent).toEqual(["start", "stop"])
      }),
    ),
  )

  it.effect(
    "keeps the Object's alarm for pending messages through the pass, and clears it once all are sent",
    () =>
      inObject(objectName("delivery-pass"), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, caughtUpRecord(3n))
          let failing = true
          const world = yield* deliveryWorld(ctx, () =>
            failing ? Effect.fail(new PortUnavailable({ message: "busy" })) : Effect.succeed(admitted),
          )
          yield* world.outbox.enqueue([admit("a")], now)
          const first = yield* world.maintenance.pass
          expect([first.phase, first.alarm]).toEqual(["caught-up", "rearmed"])
          expect(yield* alarmOf(ctx)).toBe(now + 100)
          failing = false
          yield* advance(100)
          const second = yield* world.maintenance.pass
          expect(second.alarm).toBe("cleared")
          expect(yield* alarmOf(ctx)).toBeNull()
          expect(world.recorded.map((r) => r.messageId)).toEqual(["a"])
        }),
      ),
  )
})
