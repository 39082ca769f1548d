/**
 * The harness of the differential workflow suite: how a program waits on each engine, and the
 * plain description of what a caller observes (exits, poll answers, the activity log), so that
 * the two engines' observations compare with `toEqual`.
 */
import { Cause, Effect, Exit, Option } from "effect"
import type { Workflow, WorkflowEngine } from "effect/workflow"
import { DiffRefused, diffLog } from "../worker/workflowDiff.ts"
import { deliverUntil, polled } from "./support.ts"

export type Polled = Parameters<typeof polled>[0]

/** How a program waits for an execution's poll to answer a tag on one engine. */
export interface Harness {
  readonly until: (
    workflow: Polled,
    executionId: string,
    tag: "Complete" | "Suspended",
  ) => Effect.Effect<unknown, never, WorkflowEngine.WorkflowEngine>
}

/** In memory nothing needs delivering: poll until the answer comes. */
export const memory: Harness = {
  until: (workflow, executionId, tag) =>
    Effect.gen(function* () {
      for (let round = 0; round < 500; round++) {
        if (yield* polled(workflow, executionId, tag)) return round
        yield* Effect.sleep(10)
      }
      return yield* Effect.die(new Error(`${executionId} never answered ${tag}`))
    }),
}

/** On Threads the execution's alarm is delivered until the answer comes. */
export const threads: Harness = {
  until: (workflow, executionId, tag) => deliverUntil(executionId, polled(workflow, executionId, tag)),
}

const describeDefect = (defect: unknown) =>
  defect instanceof Error ? `${defect.name}: ${defect.message}` : JSON.stringify(defect)

const describeError = (error: unknown) =>
  typeof error === "object" && error !== null
    ? { class: error.constructor.name, refused: error instanceof DiffRefused, ...error }
    : error

export const describeCause = (cause: Cause.Cause<unknown>) => ({
  failures: cause.reasons.filter(Cause.isFailReason).map((reason) => describeError(reason.error)),
  defects: cause.reasons.filter(Cause.isDieReason).map((reason) => describeDefect(reason.defect)),
  interrupted: cause.reasons.some(Cause.isInterruptReason),
})

export const describeExit = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isSuccess(exit) ? { success: exit.value } : describeCause(exit.cause)

export const describeResult = (result: Option.Option<Workflow.Result<unknown, unknown>>) =>
  Option.isNone(result)
    ? "none"
    : result.value._tag === "Complete"
      ? { complete: describeExit(result.value.exit) }
      : {
          suspended: {
            failed: result.value.failed ?? false,
            cause: result.value.cause === undefined ? undefined : describeCause(result.value.cause),
          },
        }

export const logOf = (executionId: string) => [...(diffLog.get(executionId) ?? [])]

export type Observation = Record<string, unknown>

export interface Program {
  readonly name: string
  readonly run: (
    harness: Harness,
    id: string,
  ) => Effect.Effect<Observation, unknown, WorkflowEngine.WorkflowEngine>
  /** A deliberate difference: what each engine shows, and where docs/workflows.md says so. */
  readonly differs?: {
    readonly documented: string
    readonly memory: Observation
    readonly threads: Observation
  }
}

/** Parks an execution, interrupts it, waits for its end; answers the polls around it. */
export const interruptParked = (
  harness: Harness,
  workflow: Polled & {
    readonly interrupt: (executionId: string) => Effect.Effect<void, never, WorkflowEngine.WorkflowEngine>
  },
  executionId: string,
) =>
  Effect.gen(function* () {
    yield* harness.until(workflow, executionId, "Suspended")
    const parked = describeResult(yield* workflow.poll(executionId))
    yield* workflow.interrupt(executionId)
    yield* harness.until(workflow, executionId, "Complete")
    return { parked, interrupted: describeResult(yield* workflow.poll(executionId)) }
  })
