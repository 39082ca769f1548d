/**
 * The programs of the differential suite: each runs on Effect's in-memory engine and on the
 * Threads engine, and what a caller observes is compared. Activities and compensations note
 * what they did, by execution id, in a log kept in the test isolate.
 */
import { Effect, Exit, Layer, Option, Schema } from "effect"
import { Activity, DurableClock, DurableDeferred, Workflow } from "effect/workflow"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"

/** What each execution's activities and compensations did, in order, by execution id. */
export const diffLog = new Map<string, Array<string>>()

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

/** The typed refusal the programs fail with. */
export class DiffRefused extends Schema.TaggedError<DiffRefused>()("DiffRefused", {
  reason: Schema.String,
}) {}

const byId = { idempotencyKey: ({ id }: { readonly id: string }) => id }

/** An activity failing `failures` times with a typed error, under `Activity.retry({ times: 3 })`. */
export const DiffRetry = Workflow.make("DiffRetry", {
  payload: { id: Schema.String, failures: Schema.Number },
  success: Schema.Number,
  error: Schema.String,
  ...byId,
})

/** An activity, then the workflow's typed failure. */
export const DiffTyped = Workflow.make("DiffTyped", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: DiffRefused,
  ...byId,
})

/** A defect of the workflow's own code, or of an activity. */
export const DiffDefect = Workflow.make("DiffDefect", {
  payload: { id: Schema.String, inActivity: Schema.Boolean },
  success: Schema.String,
  ...byId,
})

/** Three compensated activities, then a typed failure. */
export const DiffCompensate = Workflow.make("DiffCompensate", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: DiffRefused,
  ...byId,
})

/** An activity, an hour's durable clock, an activity. */
export const DiffNap = Workflow.make("DiffNap", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** The deferred `DiffHold` awaits. */
export const DiffSignal = DurableDeferred.make("signal", { success: Schema.String, error: Schema.String })

/** A compensated activity, the signal, an activity. */
export const DiffHold = Workflow.make("DiffHold", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})

/** An activity failing on its first run, under `SuspendOnFailure`. */
export const DiffResumable = Workflow.make("DiffResumable", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
}).annotate(Workflow.SuspendOnFailure, true)

/** The two deferreds `DiffPair` awaits, in this order. */
export const DiffFirst = DurableDeferred.make("first", { success: Schema.String })
export const DiffSecond = DurableDeferred.make("second", { success: Schema.String })

/** Awaits `DiffFirst`, an activity, `DiffSecond`, an activity. */
export const DiffPair = Workflow.make("DiffPair", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** One activity. */
export const DiffOnce = Workflow.make("DiffOnce", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** An activity, a short (in-memory) clock, an activity. */
export const DiffShortNap = Workflow.make("DiffShortNap", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** A child: an activity, then a typed failure or a defect. */
export const DiffChild = Workflow.make("DiffChild", {
  payload: { id: Schema.String, defect: Schema.Boolean },
  success: Schema.String,
  error: DiffRefused,
  ...byId,
})

/** Executes `DiffChild`; `recover` catches its typed failure and runs a fallback activity. */
export const DiffParent = Workflow.make("DiffParent", {
  payload: { id: Schema.String, recover: Schema.Boolean, defect: Schema.Boolean },
  success: Schema.String,
  error: DiffRefused,
  ...byId,
})

/** The child execution's payload of a parent's. */
export const childPayload = (id: string, defect: boolean) => ({ id: `child-of-${id}`, defect })

/** A workflow finalizer, then the signal. */
export const DiffFinal = Workflow.make("DiffFinal", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})

/** Its own code fails on its first pass, under `SuspendOnFailure`. */
export const DiffSelfFail = Workflow.make("DiffSelfFail", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
}).annotate(Workflow.SuspendOnFailure, true)

/** Executes `DiffHold` as a child and waits for it. */
export const DiffGuard = Workflow.make("DiffGuard", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})

/** The child execution's payload of a guard's. */
export const heldPayload = (id: string) => ({ id: `held-by-${id}` })

/** A durable clock on the Object's alarm (threshold 0) between two activities. */
export const DiffAlarm = Workflow.make("DiffAlarm", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** Starts `DiffHold` as a child with `discard: true` and completes without awaiting it. */
export const DiffFire = Workflow.make("DiffFire", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** Executes `DiffResumable` as a child and waits for it. */
export const DiffAdopt = Workflow.make("DiffAdopt", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})

/** A workflow finalizer, then an activity the workflow's code cuts short with a timeout. */
export const DiffTimeout = Workflow.make("DiffTimeout", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** Under `SuspendOnFailure`: a compensated activity, the signal, an activity failing on its first run. */
export const DiffCareful = Workflow.make("DiffCareful", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
}).annotate(Workflow.SuspendOnFailure, true)

/** Values whose JSON form differs from their type: a Date, an Option, a BigInt. */
export const DiffValues = Workflow.make("DiffValues", {
  payload: { id: Schema.String, at: Schema.Date },
  success: Schema.Struct({ at: Schema.Date, maybe: Schema.Option(Schema.Number), big: Schema.BigInt }),
  ...byId,
})

/** Dies with a value that is not an Error. */
export const DiffOddDefect = Workflow.make("DiffOddDefect", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

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
].map((workflow) => ThreadWorkflowEngine.agent(workflow))
