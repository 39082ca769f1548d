import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { ThreadHostMaintenanceError } from "../../src/Alarm.ts"
import { advance, caughtUpRecord, failureOf, hostHooks, isDone, storedRetry } from "./fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName, putRawState } from "./harness.ts"
import { maintenanceSwitchboard } from "../support/switchboard.ts"
import { incarnation } from "../support/incarnation.ts"

const passSteps = [
  "maintenance:begin:before",
  "maintenance:begin:after",
  "maintenance:finish:before",
  "maintenance:finish:after",
]

describe("overlapping passes", () => {
  it.effect("run one after another through one layer", () =>
    inObject(objectName("serialized"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const failpoints = yield* maintenanceSwitchboard()
        const held = yield* failpoints.pause("maintenance:begin:after")
        const { maintenance } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        const first = yield* Effect.forkChild(maintenance.pass)
        yield* held.reached
        const second = yield* Effect.forkChild(maintenance.pass)
        expect(yield* isDone(second)).toBe(false)
        expect(failpoints.hits).toEqual(["maintenance:begin:before", "maintenance:begin:after"])
        yield* held.release
        yield* Fiber.join(first)
        yield* Fiber.join(second)
        expect(failpoints.hits).toEqual([...passSteps, ...passSteps])
      }),
    ),
  )

  it.effect("of separately built layers are not serialized by each other", () =>
    inObject(objectName("fresh-layers"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const failpoints = yield* maintenanceSwitchboard()
        const held = yield* failpoints.pause("maintenance:begin:after")
        const stale = yield* incarnation(ctx, { maintenance: failpoints.handler })
        const fresh = yield* incarnation(ctx)
        const first = yield* Effect.forkChild(stale.maintenance.pass)
        yield* held.reached
        expect((yield* fresh.maintenance.pass).phase).toBe("caught-up")
        yield* held.release
        yield* Fiber.join(first)
      }),
    ),
  )

  it.effect("wait for failure rearming, and the permit wait counts against the 14 minute deadline", () =>
    inObject(objectName("permit-deadline"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const failpoints = yield* maintenanceSwitchboard()
        const rearming = yield* failpoints.pause("maintenance:retry:before")
        const refused = new ThreadHostMaintenanceError({
          hook: "outbox",
          operation: "host outbox",
          message: "relay unavailable",
        })
        const { maintenance } = yield* incarnation(ctx, {
          maintenance: failpoints.handler,
          host: hostHooks({ drainUntil: () => Effect.fail(refused) }),
        })
        const failing = yield* Effect.forkChild(maintenance.pass)
        yield* rearming.reached
        yield* advance(60_000)
        const sibling = yield* Effect.forkChild(maintenance.pass)
        yield* advance(14 * 60_000)
        const late = failureOf(yield* Fiber.await(sibling))
        expect(late).toMatchObject({ _tag: "DurableAlarmError", operation: "maintenance pass deadline" })
        // The sibling never began: failure rearming still held the permit.
        expect(failpoints.hits.filter((hit) => hit === "maintenance:begin:before")).toHaveLength(1)
        yield* rearming.release
        // Its own deadline passed while it was rearming, which completes once either way.
        expect(failureOf(yield* Fiber.await(failing))).toMatchObject({
          operation: "maintenance pass deadline",
        })
        expect(failpoints.hits.at(-1)).toBe("maintenance:retry:after")
        expect((yield* storedRetry(ctx))?.stalls).toBe(1)
      }),
    ),
  )

  it.effect("drop an immediate wake hint given while they run", () =>
    inObject(objectName("wake-dropped"), (ctx) =>
      Effect.gen(function* () {
        const now = yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const failpoints = yield* maintenanceSwitchboard()
        const held = yield* failpoints.pause("maintenance:begin:after")
        const { maintenance, alarm } = yield* incarnation(ctx, { maintenance: failpoints.handler })
        const pass = yield* Effect.forkChild(maintenance.pass)
        yield* held.reached
        // An earlier alarm written now would make workerd cancel the running handler.
        yield* alarm.scheduleNow
        expect(yield* alarmOf(ctx)).toBe(now + 50)
        yield* held.release
        expect((yield* Fiber.join(pass)).alarm).toBe("cleared")
        // The dropped hint is not replayed; durable state decided the slot.
        expect(yield* alarmOf(ctx)).toBeNull()
        yield* alarm.scheduleNow
        expect(yield* alarmOf(ctx)).toBe(now)
      }),
    ),
  )
})
