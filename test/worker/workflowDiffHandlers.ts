/**
 * The handlers of the differential suite's workflows, registered with either engine, and their
 * agents for the workflow test Object.
 */
import { Effect, Exit, Layer, Option, Schema } from "effect"
import { Activity, DurableClock, DurableDeferred, Workflow } from "effect/workflow"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"
import {
  childPayload,
  DiffAdopt,
  DiffAlarm,
  DiffCareful,
  DiffChild,
  DiffCompensate,
  DiffDefect,
  DiffFinal,
  DiffFire,
  DiffFirst,
  DiffGuard,
  DiffHold,
  diffLog,
  DiffNap,
  DiffOddDefect,
  DiffOnce,
  DiffPair,
  DiffParent,
  DiffRefused,
  DiffResumable,
  DiffRetry,
  DiffSecond,
  DiffSelfFail,
  DiffShortNap,
  DiffSignal,
  DiffTimeout,
  DiffTyped,
  DiffValues,
  heldPayload,
  DiffTokened,
  diffTokens,
} from "./workflowDiff.ts"

const note = (executionId: string, text: string) =>
  Effect.sync(() => {
    const entries = diffLog.get(executionId) ?? []
    entries.push(text)
    diffLog.set(executionId, entries)
    return entries.filter((entry) => entry === text).length
  })

/** An activity that notes its run and answers `value`. */
const step = (executionId: string, name: string) =>
  Activity.make({ name, success: Schema.String, execute: Effect.as(note(executionId, name), name) })

/** The handlers, registered with either engine. */
export const diffHandlers = Layer.mergeAll(
  DiffRetry.toLayer(({ failures }, executionId) =>
    Activity.make({
      name: "flaky",
      success: Schema.Number,
      error: Schema.String,
      execute: Effect.gen(function* () {
        const attempt = yield* Activity.CurrentAttempt
        yield* note(executionId, `flaky ${attempt}`)
        if (attempt <= failures) return yield* Effect.fail(`attempt ${attempt} failed`)
        return attempt
      }),
    }).pipe(Activity.retry({ times: 3 })),
  ),
  DiffTyped.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "charge")
      return yield* new DiffRefused({ reason: "refused" })
    }),
  ),
  DiffDefect.toLayer(({ inActivity }, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "before")
      if (inActivity) {
        return yield* Activity.make({
          name: "explode",
          success: Schema.String,
          execute: Effect.andThen(note(executionId, "explode"), Effect.die(new Error("activity boom"))),
        })
      }
      return yield* Effect.die(new Error("workflow boom"))
    }),
  ),
  DiffCompensate.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      for (const name of ["a", "b", "c"]) {
        yield* step(executionId, name).pipe(
          Workflow.withCompensation((value) => Effect.asVoid(note(executionId, `undo ${value}`))),
        )
      }
      return yield* new DiffRefused({ reason: "after c" })
    }),
  ),
  DiffNap.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "before")
      yield* DurableClock.sleep({ name: "nap", duration: "1 hour", inMemoryThreshold: 0 })
      yield* step(executionId, "after")
      return "rested"
    }),
  ),
  DiffHold.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "reserve").pipe(
        Workflow.withCompensation(() => Effect.asVoid(note(executionId, "release"))),
      )
      const value = yield* DurableDeferred.await(DiffSignal)
      yield* step(executionId, "finish")
      return `got ${value}`
    }),
  ),
  DiffResumable.toLayer((_payload, executionId) =>
    Activity.make({
      name: "fragile",
      success: Schema.String,
      error: Schema.String,
      execute: Effect.flatMap(note(executionId, "fragile"), (count) =>
        count === 1 ? Effect.fail("first run fails") : Effect.succeed(`ran ${count} times`),
      ),
    }),
  ),
  DiffPair.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      const first = yield* DurableDeferred.await(DiffFirst)
      yield* step(executionId, `after ${first}`)
      const second = yield* DurableDeferred.await(DiffSecond)
      yield* step(executionId, `after ${second}`)
      return `${first}+${second}`
    }),
  ),
  DiffOnce.toLayer((_payload, executionId) => Effect.map(step(executionId, "work"), () => "worked")),
  DiffShortNap.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "before")
      yield* DurableClock.sleep({ name: "short", duration: 20 })
      yield* step(executionId, "after")
      return "rested"
    }),
  ),
  DiffChild.toLayer(({ defect }, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "child work")
      if (defect) return yield* Effect.die(new Error("child boom"))
      return yield* new DiffRefused({ reason: "child refused" })
    }),
  ),
  DiffParent.toLayer(({ id, recover, defect }, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "parent work")
      const child = DiffChild.execute(childPayload(id, defect))
      if (!recover) return yield* child
      return yield* Effect.catch(child, (refused) =>
        Effect.as(step(executionId, "fallback"), `recovered from ${refused.reason}`),
      )
    }),
  ),
  DiffFinal.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* Workflow.addFinalizer((exit) =>
        Effect.asVoid(note(executionId, Exit.isSuccess(exit) ? "finalized: success" : "finalized: failure")),
      )
      return yield* DurableDeferred.await(DiffSignal)
    }),
  ),
  DiffSelfFail.toLayer((_payload, executionId) =>
    Effect.flatMap(note(executionId, "pass"), (pass) =>
      pass === 1 ? Effect.fail("own code fails") : Effect.succeed(`passed ${pass} times`),
    ),
  ),
  DiffGuard.toLayer(({ id }) => DiffHold.execute(heldPayload(id))),
  DiffAlarm.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "before")
      yield* DurableClock.sleep({ name: "alarm", duration: 200, inMemoryThreshold: 0 })
      yield* step(executionId, "after")
      return "woke"
    }),
  ),
  DiffFire.toLayer(({ id }, executionId) =>
    Effect.gen(function* () {
      yield* DiffHold.execute(heldPayload(id), { discard: true })
      yield* step(executionId, "fired")
      return "fired"
    }),
  ),
  DiffAdopt.toLayer(({ id }) => DiffResumable.execute({ id: `adopted-by-${id}` })),
  DiffTimeout.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* Workflow.addFinalizer((exit) =>
        Effect.asVoid(note(executionId, Exit.isSuccess(exit) ? "finalized: success" : "finalized: failure")),
      )
      const slow = Activity.make({
        name: "slow",
        success: Schema.String,
        execute: Effect.as(Effect.sleep(5_000), "slow finished"),
      })
      const outcome = yield* Effect.timeoutOption(slow, 50)
      return Option.isNone(outcome) ? "timed out" : outcome.value
    }),
  ),
  DiffCareful.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* step(executionId, "reserve").pipe(
        Workflow.withCompensation(() => Effect.asVoid(note(executionId, "release"))),
      )
      const value = yield* DurableDeferred.await(DiffSignal)
      return yield* Activity.make({
        name: "fragile",
        success: Schema.String,
        error: Schema.String,
        execute: Effect.flatMap(note(executionId, "fragile"), (count) =>
          count === 1 ? Effect.fail("first run fails") : Effect.succeed(`${value} after ${count} runs`),
        ),
      })
    }),
  ),
  DiffValues.toLayer(({ at }, executionId) =>
    Effect.gen(function* () {
      const later = yield* Activity.make({
        name: "later",
        success: Schema.Date,
        execute: Effect.as(note(executionId, "later"), new Date(at.getTime() + 1000)),
      })
      const maybe = yield* Activity.make({
        name: "maybe",
        success: Schema.Option(Schema.Number),
        execute: Effect.as(note(executionId, "maybe"), Option.some(7)),
      })
      return { at: later, maybe, big: 12345678901234567890n }
    }),
  ),
  DiffOddDefect.toLayer((_payload, executionId) =>
    Effect.andThen(step(executionId, "before"), Effect.die({ code: 42, detail: "not an Error" })),
  ),
  DiffTokened.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      const token = yield* DurableDeferred.token(DiffSignal)
      yield* Activity.make({
        name: "publish",
        execute: Effect.andThen(
          note(executionId, "publish"),
          Effect.sync(() => {
            diffTokens.set(executionId, token)
          }),
        ),
      })
      return `got ${yield* DurableDeferred.await(DiffSignal)}`
    }),
  ),
)

/** Their agents, registered in the workflow test Object. */
export const diffAgents = [
  DiffRetry,
  DiffTyped,
  DiffDefect,
  DiffCompensate,
  DiffNap,
  DiffHold,
  DiffResumable,
  DiffPair,
  DiffOnce,
  DiffShortNap,
  DiffChild,
  DiffParent,
  DiffFinal,
  DiffSelfFail,
  DiffGuard,
  DiffAlarm,
  DiffFire,
  DiffAdopt,
  DiffTimeout,
  DiffCareful,
  DiffValues,
  DiffOddDefect,
  DiffTokened,
].map((workflow) => ThreadWorkflowEngine.agent(workflow))
