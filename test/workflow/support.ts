/**
 * Helpers of the workflow suites: the Worker's engine over the test namespace, and alarm
 * delivery to an execution's Object until its poll answers what a test waits for.
 */
import { env, runDurableObjectAlarm } from "cloudflare:test"
import { Effect, Option } from "effect"
import type { Workflow, WorkflowEngine } from "effect/workflow"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"

/** The engine a Worker uses: every call reaches the execution's Object. */
export const clientEngine = ThreadWorkflowEngine.layerClient(env.THREADS_WORKFLOW)

/** The Thread client of an execution. */
export const executionClient = (executionId: string) =>
  ThreadWorkflowEngine.executionClient(env.THREADS_WORKFLOW, executionId)

/** The exit a completed execution's poll answers (undefined while it runs or is suspended). */
export const completedExit = <A, E>(result: Option.Option<Workflow.Result<A, E>>) =>
  Option.isSome(result) && result.value._tag === "Complete" ? result.value.exit : undefined

/** A payload id no other test uses (storage is shared by the tests of a file). */
export const uniqueId = (label: string) => `${label}-${crypto.randomUUID()}`

/** Delivers the execution's alarm once (a rejected delivery counts as delivered). */
export const deliverAlarm = (executionId: string) =>
  Effect.promise(() => runDurableObjectAlarm(env.THREADS_WORKFLOW.getByName(executionId)).catch(() => false))

/** Delivers the execution's alarm until `done` holds; fails after `rounds` deliveries. */
export const deliverUntil = <E, R>(executionId: string, done: Effect.Effect<boolean, E, R>, rounds = 200) =>
  Effect.gen(function* () {
    for (let round = 0; round < rounds; round++) {
      if (yield* done) return round
      yield* deliverAlarm(executionId)
      yield* Effect.sleep(10)
    }
    return yield* Effect.die(new Error(`condition not reached after ${rounds} alarm deliveries`))
  })

/** Whether the execution's poll answers a result with this tag. */
export const polled = (
  workflow: {
    readonly poll: (
      executionId: string,
    ) => Effect.Effect<Option.Option<Workflow.Result<unknown, unknown>>, never, WorkflowEngine.WorkflowEngine>
  },
  executionId: string,
  tag: "Complete" | "Suspended",
) => Effect.map(workflow.poll(executionId), (result) => Option.isSome(result) && result.value._tag === tag)
