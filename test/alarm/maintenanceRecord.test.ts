import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { DurableAlarmError } from "../../src/Alarm.ts"
import { FreshStore } from "../../src/internal/maintenance/freshStore.ts"
import { caughtUpRecord, encodedRetry, failureOf } from "./fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, putRawState, rawState } from "./harness.ts"
import { maintenanceSwitchboard } from "../support/switchboard.ts"
import { incarnation } from "../support/incarnation.ts"

const bootstrap = { schemaVersion: 1, dirty: "1", processed: "0", nonterminal: 0 }

describe("the maintenance record", () => {
  it.effect("is bootstrapped as dirty 1, processed 0 and persisted by ensureAlarm", () =>
    inObject(objectName("bootstrap-ensure"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const { maintenance } = yield* incarnation(ctx)
        expect(yield* rawState(ctx)).toBeUndefined()
        yield* maintenance.ensureAlarm
        expect(yield* rawState(ctx)).toEqual(bootstrap)
        // The bootstrap is dirty on purpose: the first pass classifies existing work.
        expect(yield* alarmOf(ctx)).toBe(now + 1_000)
      }),
    ),
  )

  it.effect(
    "is written clean by ensureAlarm on a store its Object found empty; an existing record is kept",
    () =>
      Effect.gen(function* () {
        yield* inObject(objectName("fresh-ensure"), (ctx) =>
          Effect.gen(function* () {
            yield* dayAhead
            const { maintenance } = yield* incarnation(ctx)
            yield* maintenance.ensureAlarm.pipe(Effect.provideService(FreshStore, true))
            // No work can predate the record: nothing owed, no alarm.
            expect(yield* rawState(ctx)).toEqual({ ...bootstrap, dirty: "0" })
            expect(yield* alarmOf(ctx)).toBeNull()
          }),
        )
        yield* inObject(objectName("fresh-ensure-existing"), (ctx) =>
          Effect.gen(function* () {
            const now = yield* dayAhead
            const { maintenance } = yield* incarnation(ctx)
            yield* putRawState(ctx, { ...bootstrap, dirty: "3", processed: "2" })
            yield* maintenance.ensureAlarm.pipe(Effect.provideService(FreshStore, true))
            // A stored record is never reset: its owed generation keeps its alarm.
            expect(yield* rawState(ctx)).toEqual({ ...bootstrap, dirty: "3", processed: "2" })
            expect(yield* alarmOf(ctx)).toBe(now + 1_000)
          }),
        )
      }),
  )

  it.effect("is bootstrapped and prearmed by the begin transaction of a pass", () =>
    inObject(objectName("bootstrap-begin"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        const failpoints = yield* maintenanceSwitchboard()
        const begun = yield* failpoints.pause("maintenance:begin:after")
        const { maintenance } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        const pass = yield* Effect.forkChild(maintenance.pass)
        yield* begun.reached
        expect(yield* rawState(ctx)).toEqual(bootstrap)
        expect(yield* alarmOf(ctx)).toBe(now + 50)
        yield* Fiber.interrupt(pass)
      }),
    ),
  )

  it.effect("is bootstrapped by a gated mutation, advancing dirty only when it invalidates recovery", () =>
    Effect.gen(function* () {
      const receiptOnly = objectName("bootstrap-receipt")
      yield* inObject(receiptOnly, (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          const { gate } = yield* incarnation(ctx)
          yield* gate.withMutation(Effect.void, { invalidatesRecovery: false })
          expect(yield* rawState(ctx)).toEqual(bootstrap)
        }),
      )
      yield* inObject(objectName("bootstrap-mutation"), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          const { gate } = yield* incarnation(ctx)
          yield* gate.withMutation(Effect.void)
          expect(yield* rawState(ctx)).toEqual({ ...bootstrap, dirty: "2" })
        }),
      )
    }),
  )

  it.effect("decodes a record written without the optional keys and leaves it unchanged", () =>
    inObject(objectName("older-record"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const older = caughtUpRecord(7n, { nonterminal: 3 })
        yield* putRawState(ctx, older)
        const { maintenance } = yield* incarnation(ctx)
        yield* maintenance.ensureAlarm
        const report = yield* maintenance.pass
        expect([report.phase, report.nonterminal, report.alarm]).toEqual(["caught-up", 3, "cleared"])
        expect(yield* rawState(ctx)).toEqual(older)
        expect(yield* alarmOf(ctx)).toBeNull()
      }),
    ),
  )

  it.effect("is damaged when only a key stored as undefined tells it from a valid record", () =>
    inObject(objectName("memo-hidden-difference"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const valid = caughtUpRecord(5n)
        yield* putRawState(ctx, valid)
        const { maintenance } = yield* incarnation(ctx)
        yield* maintenance.ensureAlarm
        // The same JSON as the record just decoded, but a key stored as undefined is damage.
        const hidden = { ...valid, lastServedThreadId: undefined }
        expect(JSON.stringify(hidden)).toBe(JSON.stringify(valid))
        yield* putRawState(ctx, hidden)
        const error = failureOf(yield* Effect.exit(maintenance.ensureAlarm))
        expect(error).toBeInstanceOf(DurableAlarmError)
        expect((error as DurableAlarmError).message).toContain(`["lastServedThreadId"]`)
        // A record decoded before, stored again, is read as it is.
        yield* putRawState(ctx, valid)
        yield* maintenance.ensureAlarm
        expect(yield* rawState(ctx)).toEqual(valid)
      }),
    ),
  )

  it.effect("stores generations as exact decimal strings beyond the safe integer range", () =>
    inObject(objectName("bigint"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const huge = 2n ** 64n + 1n
        yield* putRawState(ctx, caughtUpRecord(huge, { lastServedThreadId: "lane-b" }))
        const { gate } = yield* incarnation(ctx)
        yield* gate.withMutation(Effect.void)
        yield* gate.withMutation(Effect.void)
        expect(yield* rawState(ctx)).toEqual(
          caughtUpRecord(huge, { dirty: "18446744073709551619", lastServedThreadId: "lane-b" }),
        )
      }),
    ),
  )

  const retry = encodedRetry({ generation: 3n, notBefore: 0, nativeOnly: false, stalls: 1 })
  const malformed: ReadonlyArray<readonly [string, unknown, string]> = [
    ["a generation that is not a number", caughtUpRecord(3n, { dirty: "three" }), `["dirty"]`],
    ["a negative generation", caughtUpRecord(3n, { processed: "-1" }), `["processed"]`],
    ["a fractional generation", caughtUpRecord(3n, { dirty: "3.5" }), `["dirty"]`],
    ["a generation stored as a number", caughtUpRecord(3n, { dirty: 3 }), `["dirty"]`],
    ["an unknown schema version", caughtUpRecord(3n, { schemaVersion: 2 }), `["schemaVersion"]`],
    ["a negative nonterminal count", caughtUpRecord(3n, { nonterminal: -1 }), `["nonterminal"]`],
    ["an empty lane cursor", caughtUpRecord(3n, { lastServedThreadId: "" }), `["lastServedThreadId"]`],
    ["31 stalls", caughtUpRecord(3n, { retry: { ...retry, stalls: 31 } }), `["retry"]["stalls"]`],
    [
      "a retry without its generation",
      caughtUpRecord(3n, { retry: { ...retry, generation: undefined } }),
      `["retry"]["generation"]`,
    ],
    [
      "an infinite retry deadline",
      caughtUpRecord(3n, { retry: { ...retry, notBefore: Infinity } }),
      `["retry"]["notBefore"]`,
    ],
    [
      "a binding wait with negative attempts",
      caughtUpRecord(3n, {
        bindingRetries: [{ threadId: "t", submissionId: "s", attempts: -1, notBefore: 0, reportedAt: 0 }],
      }),
      `["bindingRetries"][0]["attempts"]`,
    ],
    ["a value that is not a record", "dirty", "Expected object"],
  ]

  it.effect.each(malformed)(
    "with %s is a DurableAlarmError everywhere and is never reset",
    ([label, value, names]) =>
      inObject(objectName(`malformed-${label.replaceAll(" ", "-")}`), (ctx) =>
        Effect.gen(function* () {
          const now = yield* dayAhead
          yield* putRawState(ctx, value)
          yield* Effect.promise(() => ctx.storage.setAlarm(now + 60_000))
          const { maintenance, gate } = yield* incarnation(ctx)
          let bodyRan = false
          const outcomes: ReadonlyArray<readonly [string, Exit.Exit<unknown, unknown>]> = [
            ["ensure maintenance alarm", yield* Effect.exit(maintenance.ensureAlarm)],
            ["begin maintenance pass", yield* Effect.exit(maintenance.pass)],
            [
              "advance maintenance generation",
              yield* Effect.exit(gate.withMutation(Effect.sync(() => (bodyRan = true)))),
            ],
            [
              "advance maintenance generation",
              yield* Effect.exit(
                gate.withMutation(
                  Effect.sync(() => (bodyRan = true)),
                  { invalidatesRecovery: false },
                ),
              ),
            ],
          ] as const
          for (const [operation, exit] of outcomes) {
            const error = failureOf(exit)
            expect(error).toBeInstanceOf(DurableAlarmError)
            expect(error).toMatchObject({ operation })
            expect((error as DurableAlarmError).message).toContain(names)
          }
          expect(bodyRan).toBe(false)
          expect(yield* rawState(ctx)).toEqual(value)
          expect(yield* alarmOf(ctx)).toBe(now + 60_000)
        }),
      ),
  )
})
