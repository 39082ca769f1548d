import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber } from "effect"
import { ThreadPublicationError, type ThreadPublicationService } from "../../src/Alarm.ts"
import { caughtUpRecord, deadlineAt, failureOf } from "./fixtures.ts"
import { dayAhead, inObject, objectName, putRawState, rawState } from "./harness.ts"
import { maintenanceSwitchboard } from "../support/switchboard.ts"
import { incarnation } from "../support/incarnation.ts"

const publicationLogging = (
  log: Array<string>,
  drain: Effect.Effect<void, ThreadPublicationError> = Effect.void,
) =>
  ({
    invalidate: Effect.sync(() => log.push("invalidate")),
    prepareGeneration: () => Effect.void,
    drain: Effect.andThen(
      Effect.sync(() => log.push("drain")),
      drain,
    ),
    pendingDeadline: deadlineAt(undefined),
  }) satisfies ThreadPublicationService

describe("ThreadMaintenance.withMutation", () => {
  it.effect("publishes after the body, inside the mutation window", () =>
    inObject(objectName("publish-order"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(2n))
        const failpoints = yield* maintenanceSwitchboard()
        const draining = yield* Deferred.make<void>()
        const delivered = yield* Deferred.make<void>()
        const drain = Effect.andThen(Deferred.succeed(draining, undefined), Deferred.await(delivered))
        const { maintenance, gate } = yield* incarnation(ctx, {
          maintenance: failpoints.handler,
          publication: publicationLogging(failpoints.hits, drain),
        })
        const mutation = yield* Effect.forkChild(
          maintenance.withMutation(Effect.sync(() => failpoints.hits.push("body"))),
        )
        yield* Deferred.await(draining)
        // A pass cannot acknowledge while publication is still part of the mutation.
        expect(yield* gate.withSnapshot((active) => Effect.succeed(active))).toBe(1)
        yield* Deferred.succeed(delivered, undefined)
        yield* Fiber.join(mutation)
        expect(failpoints.hits).toEqual([
          "maintenance:dirty:before",
          "maintenance:dirty:after",
          "maintenance:mutation:armed",
          "body",
          "invalidate",
          "drain",
          "maintenance:mutation:finished",
        ])
        expect(yield* rawState(ctx)).toEqual(caughtUpRecord(2n, { dirty: "3" }))
      }),
    ),
  )

  it.effect("keeps a committed mutation successful when publication fails", () =>
    inObject(objectName("publish-fails"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const log: Array<string> = []
        const refused = new ThreadPublicationError({
          operation: "publish",
          message: "destination unavailable",
        })
        const { maintenance } = yield* incarnation(ctx, {
          publication: publicationLogging(log, Effect.fail(refused)),
        })
        expect(yield* maintenance.withMutation(Effect.succeed("receipt"))).toBe("receipt")
        expect(log).toEqual(["invalidate", "drain"])
      }),
    ),
  )

  it.effect("re-raises an interruption of publication", () =>
    inObject(objectName("publish-interrupted"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const { maintenance } = yield* incarnation(ctx, {
          publication: publicationLogging([], Effect.interrupt),
        })
        const exit = yield* Effect.exit(maintenance.withMutation(Effect.succeed("receipt")))
        expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
      }),
    ),
  )

  it.effect("publishes nothing when the body fails", () =>
    inObject(objectName("body-fails"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const log: Array<string> = []
        const { maintenance } = yield* incarnation(ctx, { publication: publicationLogging(log) })
        expect(failureOf(yield* Effect.exit(maintenance.withMutation(Effect.fail("refused"))))).toBe(
          "refused",
        )
        expect(log).toEqual([])
      }),
    ),
  )
})
