/**
 * Workflows at the edges of what the engine supports: racing activities, a deferred with a
 * long name, a deferred a caller may complete with too much data, and a detached child.
 */
import { Effect, Layer, Schema } from "effect"
import { Activity, DurableDeferred, Workflow } from "effect/workflow"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"

/** Races two activities with `Activity.raceAll`. */
export const RaceWorkflow = Workflow.make("EdgeRace", {
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** The deferred `GateWorkflow` awaits. */
export const Gate = DurableDeferred.make("gate", { success: Schema.Number, error: Schema.String })

/** Awaits `Gate` and answers its value. */
export const GateWorkflow = Workflow.make("EdgeGate", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** A deferred whose event name is longer than an event name may be. */
export const LongDeferred = DurableDeferred.make(`${"x".repeat(118)}-a`, { success: Schema.String })
/** Two deferreds with the same first 256 characters. */
export const LongerDeferredA = DurableDeferred.make(`${"y".repeat(300)}-a`, { success: Schema.String })
export const LongerDeferredB = DurableDeferred.make(`${"y".repeat(300)}-b`, { success: Schema.String })

/** Awaits the long-named deferreds. */
export const LongNameWorkflow = Workflow.make("EdgeLongName", {
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** A child a parent starts detached. */
export const DetachedChildWorkflow = Workflow.make("EdgeDetachedChild", {
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** Starts `DetachedChildWorkflow` with `discard: true, detached: true`. */
export const DetacherWorkflow = Workflow.make("EdgeDetacher", {
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** Live runs of the stale-resume workflow's activity, by execution id. */
export const fragileRuns = new Map<string, number>()

/** Suspends on failure: waits for a deferred, then its activity fails on its first run. */
export const Go = DurableDeferred.make("go")
export const StaleResumeWorkflow = Workflow.make("EdgeStaleResume", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
}).annotate(Workflow.SuspendOnFailure, true)

/** Suspends on failure: its activity fails on its first two runs. */
export const StubbornWorkflow = Workflow.make("EdgeStubborn", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
}).annotate(Workflow.SuspendOnFailure, true)

/** Its activity fails with a typed error of `bytes` characters, retried by `ActivityRetry` when `retried`. */
export const BulkyWorkflow = Workflow.make("EdgeBulky", {
  payload: { id: Schema.String, bytes: Schema.Number, retried: Schema.Boolean },
  success: Schema.String,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
})

const bulky = (bytes: number) =>
  Activity.make({
    name: "bulky",
    success: Schema.String,
    error: Schema.String,
    execute: Effect.fail("x".repeat(bytes)),
  })

const label = (name: string) => Activity.make({ name, success: Schema.String, execute: Effect.succeed(name) })

/** The handlers, registered with the Object's engine. */
export const edgeHandlers = Layer.mergeAll(
  RaceWorkflow.toLayer(() => Activity.raceAll("race", [label("r1"), label("r2")])),
  GateWorkflow.toLayer(() => Effect.map(DurableDeferred.await(Gate), (n) => `n=${n}`)),
  LongNameWorkflow.toLayer(() =>
    Effect.gen(function* () {
      const a = yield* DurableDeferred.await(LongDeferred)
      const b = yield* DurableDeferred.await(LongerDeferredA)
      const c = yield* DurableDeferred.await(LongerDeferredB)
      return `${a}+${b}+${c}`
    }),
  ),
  StaleResumeWorkflow.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      yield* DurableDeferred.await(Go)
      return yield* Activity.make({
        name: "fragile",
        success: Schema.String,
        error: Schema.String,
        execute: Effect.suspend(() => {
          const count = (fragileRuns.get(executionId) ?? 0) + 1
          fragileRuns.set(executionId, count)
          return count === 1 ? Effect.fail("first run fails") : Effect.succeed(`ran ${count} times`)
        }),
      })
    }),
  ),
  StubbornWorkflow.toLayer((_payload, executionId) =>
    Activity.make({
      name: "stubborn",
      success: Schema.String,
      error: Schema.String,
      execute: Effect.suspend(() => {
        const count = (fragileRuns.get(executionId) ?? 0) + 1
        fragileRuns.set(executionId, count)
        return count <= 2 ? Effect.fail(`run ${count} fails`) : Effect.succeed(`ran ${count} times`)
      }),
    }),
  ),
  BulkyWorkflow.toLayer(({ bytes, retried }) =>
    retried
      ? bulky(bytes).annotate(ThreadWorkflowEngine.ActivityRetry, {
          attempts: 2,
          backoff: { baseMillis: 10, jitter: 0 },
        })
      : bulky(bytes),
  ),
  DetachedChildWorkflow.toLayer(() => Effect.succeed("child finished")),
  DetacherWorkflow.toLayer(({ id }) =>
    Effect.as(
      DetachedChildWorkflow.execute({ id: `detached-${id}` }, { discard: true, detached: true }),
      "parent finished",
    ),
  ),
)

/** Their agents. */
export const edgeAgents = [
  RaceWorkflow,
  GateWorkflow,
  LongNameWorkflow,
  StaleResumeWorkflow,
  StubbornWorkflow,
  BulkyWorkflow,
  DetachedChildWorkflow,
  DetacherWorkflow,
].map((workflow) => ThreadWorkflowEngine.agent(workflow))
