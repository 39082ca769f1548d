/**
 * The `portCall` entry point over a real gate and alarm: decoding before anything runs, the
 * classification of every request kind, the prearm of mutating kinds, and refusals that name
 * their reason and never run the handler.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { SubmissionId } from "../../src/core/Identifiers.ts"
import { makePortCall, type PortHandlers } from "../../src/internal/object/portCall.ts"
import { PortRequest, PORT_REQUEST_ACCESS } from "../../src/RoutedPort.ts"
import { caughtUpRecord, failureOf } from "./fixtures.ts"
import { alarmOf, dayAhead, generations, inObject, objectName, putRawState } from "./harness.ts"
import { incarnation } from "../support/incarnation.ts"

const settledMarker = {
  messageId: "settled:child-1",
  request: {
    _tag: "ChildSettled",
    parentSubmissionId: "parent-1",
    step: 2,
    childSubmissionId: "child-1",
    outcome: "completed",
    output: { approved: true },
  },
}

const describeChild = {
  messageId: "describe:1",
  request: { _tag: "DescribeChild", threadId: "child-thread", idempotencyKey: "parent:parent-1:2" },
}

/** Handlers that record what ran and what the storage looked like inside them. */
const recordingHandlers = (ctx: DurableObjectState, seen: Array<unknown>): PortHandlers<never> => {
  const observe = (kind: string) =>
    Effect.gen(function* () {
      // A corrupt record reads as none here: the read-only path must not need it.
      const record = Option.getOrUndefined(
        yield* generations(ctx).pipe(Effect.catchDefect(() => Effect.succeed(Option.none()))),
      )
      seen.push({ kind, dirty: record?.dirty, alarm: yield* alarmOf(ctx) })
    })
  return {
    AdmitChild: () =>
      Effect.as(observe("AdmitChild"), {
        _tag: "ChildRefused",
        reason: "unknown-agent",
        message: "no agent fraud",
      } as const),
    ChildSettled: () =>
      Effect.as(observe("ChildSettled"), { _tag: "ChildSettledRecorded", applied: true } as const),
    AbortChild: () =>
      Effect.andThen(observe("AbortChild"), Effect.fail({ message: "the ledger is unavailable" })),
    DescribeChild: () => Effect.as(observe("DescribeChild"), { _tag: "ChildDescribed" } as const),
  }
}

const withPortCall = (ctx: DurableObjectState, seen: Array<unknown>) =>
  Effect.gen(function* () {
    const live = yield* incarnation(ctx)
    const call = makePortCall(recordingHandlers(ctx, seen))
    return (raw: unknown) => call(raw).pipe(Effect.provideContext(live.context))
  })

describe("ThreadObject.portCall", () => {
  it("classifies every request kind of the protocol", () => {
    const kinds = PortRequest.pipe(Schema.toTaggedUnion("_tag")).discriminants
    expect([...kinds].sort()).toEqual(Object.keys(PORT_REQUEST_ACCESS).sort())
    expect(
      Object.values(PORT_REQUEST_ACCESS).every((access) => access === "mutating" || access === "read-only"),
    ).toBe(true)
  })

  it.effect("runs a mutating request through the gate: the generation and the alarm commit first", () =>
    inObject(objectName("port-mutating"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(7n))
        const seen: Array<unknown> = []
        const portCall = yield* withPortCall(ctx, seen)
        const reply = yield* portCall(settledMarker)
        expect(reply).toEqual({ _tag: "ChildSettledRecorded", applied: true })
        expect(seen).toEqual([{ kind: "ChildSettled", dirty: 8n, alarm: now + 50 }])
      }),
    ),
  )

  it.effect("runs a read-only request without touching the maintenance record or the alarm", () =>
    inObject(objectName("port-read-only"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(7n))
        const seen: Array<unknown> = []
        const portCall = yield* withPortCall(ctx, seen)
        expect(yield* portCall(describeChild)).toEqual({ _tag: "ChildDescribed" })
        expect(seen).toEqual([{ kind: "DescribeChild", dirty: 7n, alarm: null }])
      }),
    ),
  )

  it.effect.each([
    ["not an object", "text"],
    ["an unknown kind", { messageId: "m", request: { _tag: "DropTables" } }],
    [
      "a missing field",
      { messageId: "m", request: { ...settledMarker.request, childSubmissionId: undefined } },
    ],
    ["an empty message id", { ...settledMarker, messageId: "" }],
  ])("refuses %s by name before anything runs and writes nothing", ([, raw]) =>
    inObject(objectName("port-malformed"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(7n))
        const seen: Array<unknown> = []
        const portCall = yield* withPortCall(ctx, seen)
        const error = failureOf(yield* Effect.exit(portCall(raw)))
        expect(error).toMatchObject({ _tag: "PortProtocolError", reason: "malformed-request" })
        expect(error?.message.length).toBeGreaterThan(0)
        expect(seen).toEqual([])
        expect(Option.getOrThrow(yield* generations(ctx)).dirty).toBe(7n)
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect("names the field of a request that does not decode", () =>
    inObject(objectName("port-field"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const portCall = yield* withPortCall(ctx, [])
        const error = failureOf(
          yield* Effect.exit(portCall({ ...settledMarker, request: { ...settledMarker.request, step: -1 } })),
        )
        expect(error?.message).toContain("step")
      }),
    ),
  )

  it.effect("answers a failed prearm with a protocol failure and never runs the mutation", () =>
    inObject(objectName("port-prearm"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(7n, { dirty: "seven" }))
        const seen: Array<unknown> = []
        const portCall = yield* withPortCall(ctx, seen)
        const error = failureOf(yield* Effect.exit(portCall(settledMarker)))
        expect(error).toMatchObject({ _tag: "PortProtocolError", reason: "prearm-failed" })
        expect(error?.message).toContain("could not arm its maintenance alarm before the mutation")
        expect(seen).toEqual([])
        // A read-only request still runs: it needs no prearm.
        expect(yield* portCall(describeChild)).toEqual({ _tag: "ChildDescribed" })
      }),
    ),
  )

  it.effect("reports a failure inside the handler as a receiver failure the sender may retry", () =>
    inObject(objectName("port-receiver"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(7n))
        const portCall = yield* withPortCall(ctx, [])
        const error = failureOf(
          yield* Effect.exit(
            portCall({
              messageId: "abort:parent-1:2",
              request: {
                _tag: "AbortChild",
                threadId: "child-thread",
                idempotencyKey: String(SubmissionId.make("parent:parent-1:2")),
              },
            }),
          ),
        )
        expect(error).toEqual(
          expect.objectContaining({
            _tag: "PortProtocolError",
            reason: "receiver-failed",
            message: "the ledger is unavailable",
          }),
        )
      }),
    ),
  )
})
