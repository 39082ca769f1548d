/**
 * Differential: each program runs on Effect's in-memory engine (`WorkflowEngine.layerMemory`,
 * the reference semantics) and on the Threads engine, and what a caller observes (exits, poll
 * answers, what activities and compensations did, in order) must be the same, unless the row
 * names a deliberate difference that docs/workflows.md documents.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { DurableDeferred, type Workflow, WorkflowEngine } from "effect/workflow"
import {
  childPayload,
  DiffChild,
  DiffCompensate,
  DiffDefect,
  DiffFirst,
  DiffHold,
  diffHandlers,
  diffLog,
  DiffNap,
  DiffOddDefect,
  DiffValues,
  DiffOnce,
  DiffPair,
  DiffParent,
  DiffRefused,
  DiffResumable,
  DiffRetry,
  DiffSecond,
  DiffShortNap,
  DiffSignal,
  DiffTyped,
  DiffTimeout,
  DiffAdopt,
  DiffAlarm,
  DiffCareful,
  DiffFinal,
  DiffFire,
  DiffGuard,
  DiffSelfFail,
  heldPayload,
} from "../worker/workflowDiff.ts"
import { clientEngine, deliverUntil, polled, uniqueId } from "./support.ts"

type Polled = Parameters<typeof polled>[0]

/** How a program waits for an execution's poll to answer a tag on one engine. */
interface Harness {
  readonly until: (
    workflow: Polled,
    executionId: string,
    tag: "Complete" | "Suspended",
  ) => Effect.Effect<unknown, never, WorkflowEngine.WorkflowEngine>
}

/** In memory nothing needs delivering: poll until the answer comes. */
const memory: Harness = {
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
const threads: Harness = {
  until: (workflow, executionId, tag) => deliverUntil(executionId, polled(workflow, executionId, tag)),
}

const describeDefect = (defect: unknown) =>
  defect instanceof Error ? `${defect.name}: ${defect.message}` : JSON.stringify(defect)

const describeError = (error: unknown) =>
  typeof error === "object" && error !== null
    ? { class: error.constructor.name, refused: error instanceof DiffRefused, ...error }
    : error

const describeCause = (cause: Cause.Cause<unknown>) => ({
  failures: cause.reasons.filter(Cause.isFailReason).map((reason) => describeError(reason.error)),
  defects: cause.reasons.filter(Cause.isDieReason).map((reason) => describeDefect(reason.defect)),
  interrupted: cause.reasons.some(Cause.isInterruptReason),
})

const describeExit = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isSuccess(exit) ? { success: exit.value } : describeCause(exit.cause)

const describeResult = (result: Option.Option<Workflow.Result<unknown, unknown>>) =>
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

const logOf = (executionId: string) => [...(diffLog.get(executionId) ?? [])]

type Observation = Record<string, unknown>

interface Program {
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
const interruptParked = (
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

const programs: ReadonlyArray<Program> = [
  {
    name: "an activity failing twice, then succeeding under Activity.retry",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(DiffRetry.execute({ id, failures: 2 }))
        return { exit: describeExit(exit), log: logOf(yield* DiffRetry.executionId({ id, failures: 2 })) }
      }),
  },
  {
    name: "an activity whose retries are spent fails with its last typed error",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(DiffRetry.execute({ id, failures: 9 }))
        return { exit: describeExit(exit), log: logOf(yield* DiffRetry.executionId({ id, failures: 9 })) }
      }),
  },
  {
    name: "a typed workflow failure, decoded on the caller side, then polled and executed again",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(DiffTyped.execute({ id }))
        const executionId = yield* DiffTyped.executionId({ id })
        const again = yield* Effect.exit(DiffTyped.execute({ id }))
        return {
          exit: describeExit(exit),
          poll: describeResult(yield* DiffTyped.poll(executionId)),
          again: describeExit(again),
          log: logOf(executionId),
        }
      }),
  },
  {
    name: "a defect of the workflow's own code",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(DiffDefect.execute({ id, inActivity: false }))
        const executionId = yield* DiffDefect.executionId({ id, inActivity: false })
        return { exit: describeExit(exit), log: logOf(executionId) }
      }),
  },
  {
    name: "a defect of an activity",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(DiffDefect.execute({ id, inActivity: true }))
        const executionId = yield* DiffDefect.executionId({ id, inActivity: true })
        return { exit: describeExit(exit), log: logOf(executionId) }
      }),
  },
  {
    name: "compensations run in reverse order when the workflow fails",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(DiffCompensate.execute({ id }))
        return { exit: describeExit(exit), log: logOf(yield* DiffCompensate.executionId({ id })) }
      }),
  },
  {
    name: "interrupt while sleeping on a durable clock",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffNap.execute({ id }, { discard: true })
        const polls = yield* interruptParked(harness, DiffNap, executionId)
        const executed = describeExit(yield* Effect.exit(DiffNap.execute({ id })))
        return { ...polls, executed, log: logOf(executionId) }
      }),
  },
  {
    name: "interrupt while awaiting a deferred, with a compensation registered; done afterwards",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffHold.execute({ id }, { discard: true })
        const polls = yield* interruptParked(harness, DiffHold, executionId)
        const token = DurableDeferred.tokenFromExecutionId(DiffSignal, { workflow: DiffHold, executionId })
        yield* DurableDeferred.succeed(DiffSignal, { token, value: "late" })
        const after = describeResult(yield* DiffHold.poll(executionId))
        return { ...polls, after, log: logOf(executionId) }
      }),
    differs: {
      documented:
        "docs/workflows.md, `Workflow.withCompensation`: run when the workflow fails; not on interrupt",
      memory: { log: ["reserve", "release"] },
      threads: { log: ["reserve"] },
    },
  },
  {
    name: "interrupt after completion changes nothing",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const first = yield* Effect.exit(DiffOnce.execute({ id }))
        const executionId = yield* DiffOnce.executionId({ id })
        yield* DiffOnce.interrupt(executionId)
        const poll = describeResult(yield* DiffOnce.poll(executionId))
        const again = describeExit(yield* Effect.exit(DiffOnce.execute({ id })))
        return { first: describeExit(first), poll, again, log: logOf(executionId) }
      }),
  },
  {
    name: "resume after SuspendOnFailure runs the failed activity again",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffResumable.execute({ id }, { discard: true })
        yield* harness.until(DiffResumable, executionId, "Suspended")
        const suspended = describeResult(yield* DiffResumable.poll(executionId))
        yield* DiffResumable.resume(executionId)
        yield* harness.until(DiffResumable, executionId, "Complete")
        const resumed = describeResult(yield* DiffResumable.poll(executionId))
        return { suspended, resumed, log: logOf(executionId) }
      }),
  },
  {
    name: "a deferred done with a typed failure exit",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffHold.execute({ id }, { discard: true })
        yield* harness.until(DiffHold, executionId, "Suspended")
        const token = DurableDeferred.tokenFromExecutionId(DiffSignal, { workflow: DiffHold, executionId })
        yield* DurableDeferred.fail(DiffSignal, { token, error: "denied" })
        yield* harness.until(DiffHold, executionId, "Complete")
        const executed = describeExit(yield* Effect.exit(DiffHold.execute({ id })))
        return { poll: describeResult(yield* DiffHold.poll(executionId)), executed, log: logOf(executionId) }
      }),
  },
  {
    name: "a deferred done with a defect exit",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffHold.execute({ id }, { discard: true })
        yield* harness.until(DiffHold, executionId, "Suspended")
        const token = DurableDeferred.tokenFromExecutionId(DiffSignal, { workflow: DiffHold, executionId })
        yield* DurableDeferred.done(DiffSignal, { token, exit: Exit.die(new Error("signal boom")) })
        yield* harness.until(DiffHold, executionId, "Complete")
        return { poll: describeResult(yield* DiffHold.poll(executionId)), log: logOf(executionId) }
      }),
  },
  {
    name: "two deferreds completed out of order",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffPair.execute({ id }, { discard: true })
        yield* harness.until(DiffPair, executionId, "Suspended")
        const tokenOf = (deferred: typeof DiffFirst) =>
          DurableDeferred.tokenFromExecutionId(deferred, { workflow: DiffPair, executionId })
        yield* DurableDeferred.succeed(DiffSecond, { token: tokenOf(DiffSecond), value: "b" })
        yield* harness.until(DiffPair, executionId, "Suspended")
        const afterSecond = {
          poll: describeResult(yield* DiffPair.poll(executionId)),
          log: logOf(executionId),
        }
        yield* DurableDeferred.succeed(DiffFirst, { token: tokenOf(DiffFirst), value: "a" })
        yield* harness.until(DiffPair, executionId, "Complete")
        return {
          afterSecond,
          poll: describeResult(yield* DiffPair.poll(executionId)),
          log: logOf(executionId),
        }
      }),
  },
  {
    name: "the same execution id executed twice at once, with the same payload",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const both = yield* Effect.all([DiffOnce.execute({ id }), DiffOnce.execute({ id })], {
          concurrency: 2,
        })
        return { both, log: logOf(yield* DiffOnce.executionId({ id })) }
      }),
  },
  {
    name: "a child workflow failing with a typed error, propagated by its parent",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const payload = { id, recover: false, defect: false }
        const exit = yield* Effect.exit(DiffParent.execute(payload))
        const childId = yield* DiffChild.executionId(childPayload(id, false))
        return {
          exit: describeExit(exit),
          child: describeResult(yield* DiffChild.poll(childId)),
          log: logOf(yield* DiffParent.executionId(payload)),
          childLog: logOf(childId),
        }
      }),
  },
  {
    name: "a child workflow failing with a typed error, caught by its parent",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const payload = { id, recover: true, defect: false }
        const exit = yield* Effect.exit(DiffParent.execute(payload))
        const childId = yield* DiffChild.executionId(childPayload(id, false))
        return {
          exit: describeExit(exit),
          log: logOf(yield* DiffParent.executionId(payload)),
          childLog: logOf(childId),
        }
      }),
  },
  {
    name: "a child workflow's defect",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const payload = { id, recover: true, defect: true }
        const exit = yield* Effect.exit(DiffParent.execute(payload))
        const childId = yield* DiffChild.executionId(childPayload(id, true))
        return {
          exit: describeExit(exit),
          child: describeResult(yield* DiffChild.poll(childId)),
          log: logOf(yield* DiffParent.executionId(payload)),
        }
      }),
  },
  {
    name: "poll before the start, while parked on a deferred, after completion",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffHold.executionId({ id })
        const before = describeResult(yield* DiffHold.poll(executionId))
        yield* DiffHold.execute({ id }, { discard: true })
        yield* harness.until(DiffHold, executionId, "Suspended")
        const parked = describeResult(yield* DiffHold.poll(executionId))
        const token = DurableDeferred.tokenFromExecutionId(DiffSignal, { workflow: DiffHold, executionId })
        yield* DurableDeferred.succeed(DiffSignal, { token, value: "yes" })
        yield* harness.until(DiffHold, executionId, "Complete")
        const after = describeResult(yield* DiffHold.poll(executionId))
        return { before, parked, after, log: logOf(executionId) }
      }),
  },
  {
    name: "discard: true answers the execution id, then poll answers the result",
    run: (harness, id) =>
      Effect.gen(function* () {
        const answered = yield* DiffOnce.execute({ id }, { discard: true })
        const executionId = yield* DiffOnce.executionId({ id })
        yield* harness.until(DiffOnce, executionId, "Complete")
        return {
          answeredTheId: answered === executionId,
          poll: describeResult(yield* DiffOnce.poll(executionId)),
          log: logOf(executionId),
        }
      }),
  },
  {
    name: "a deferred done (by tokenFromPayload) before the execution starts",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const token = yield* DurableDeferred.tokenFromPayload(DiffSignal, {
          workflow: DiffHold,
          payload: { id },
        })
        yield* DurableDeferred.succeed(DiffSignal, { token, value: "early" })
        const exit = describeExit(yield* Effect.exit(DiffHold.execute({ id })))
        return { exit, log: logOf(yield* DiffHold.executionId({ id })) }
      }),
  },
  {
    name: "a short durable clock between two activities",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = describeExit(yield* Effect.exit(DiffShortNap.execute({ id })))
        return { exit, log: logOf(yield* DiffShortNap.executionId({ id })) }
      }),
  },
  {
    name: "a workflow finalizer across a park on a deferred",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffFinal.execute({ id }, { discard: true })
        yield* harness.until(DiffFinal, executionId, "Suspended")
        const parked = logOf(executionId)
        const token = DurableDeferred.tokenFromExecutionId(DiffSignal, { workflow: DiffFinal, executionId })
        yield* DurableDeferred.succeed(DiffSignal, { token, value: "done" })
        yield* harness.until(DiffFinal, executionId, "Complete")
        return { parked, poll: describeResult(yield* DiffFinal.poll(executionId)), log: logOf(executionId) }
      }),
    differs: {
      documented:
        "docs/workflows.md, `addFinalizer`: once, by the run that completes; the in-memory engine also runs the finalizer of the run that parked, observing success",
      memory: { log: ["finalized: success", "finalized: success"] },
      threads: { log: ["finalized: success"] },
    },
  },
  {
    name: "resume after SuspendOnFailure of the workflow's own code",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffSelfFail.execute({ id }, { discard: true })
        yield* harness.until(DiffSelfFail, executionId, "Suspended")
        const suspended = describeResult(yield* DiffSelfFail.poll(executionId))
        yield* DiffSelfFail.resume(executionId)
        yield* harness.until(DiffSelfFail, executionId, "Complete")
        const resumed = describeResult(yield* DiffSelfFail.poll(executionId))
        return { suspended, resumed, log: logOf(executionId) }
      }),
    differs: {
      documented:
        "docs/workflows.md, Suspended executions: a failure outside an activity answers `Suspended` without a cause or `failed`",
      memory: {
        suspended: {
          suspended: {
            failed: true,
            cause: { failures: [], defects: ['"own code fails"'], interrupted: false },
          },
        },
      },
      threads: { suspended: { suspended: { failed: false, cause: undefined } } },
    },
  },
  {
    name: "interrupt of an execution suspended by SuspendOnFailure",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffResumable.execute({ id }, { discard: true })
        const polls = yield* interruptParked(harness, DiffResumable, executionId)
        yield* DiffResumable.resume(executionId)
        const after = describeResult(yield* DiffResumable.poll(executionId))
        return { ...polls, after, log: logOf(executionId) }
      }),
  },
  {
    name: "resume of an execution parked on a deferred (not suspended) changes nothing",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffHold.execute({ id }, { discard: true })
        yield* harness.until(DiffHold, executionId, "Suspended")
        yield* DiffHold.resume(executionId)
        yield* harness.until(DiffHold, executionId, "Suspended")
        const parked = { poll: describeResult(yield* DiffHold.poll(executionId)), log: logOf(executionId) }
        const token = DurableDeferred.tokenFromExecutionId(DiffSignal, { workflow: DiffHold, executionId })
        yield* DurableDeferred.succeed(DiffSignal, { token, value: "yes" })
        yield* harness.until(DiffHold, executionId, "Complete")
        yield* DiffHold.resume(executionId)
        return { parked, poll: describeResult(yield* DiffHold.poll(executionId)), log: logOf(executionId) }
      }),
  },
  {
    name: "interrupt of a parent while its child is parked on a deferred",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffGuard.execute({ id }, { discard: true })
        const childId = yield* DiffHold.executionId(heldPayload(id))
        yield* harness.until(DiffHold, childId, "Suspended")
        const polls = yield* interruptParked(harness, DiffGuard, executionId)
        yield* harness.until(DiffHold, childId, "Complete")
        return { ...polls, child: describeResult(yield* DiffHold.poll(childId)), childLog: logOf(childId) }
      }),
    differs: {
      documented:
        "docs/workflows.md, `Workflow.withCompensation`: run when the workflow fails; not on interrupt (the child is aborted with its parent)",
      memory: { childLog: ["reserve", "release"] },
      threads: { childLog: ["reserve"] },
    },
  },
  {
    name: "a caller's execute waiting while the execution parks, completed by another caller",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffHold.executionId({ id })
        const complete = Effect.gen(function* () {
          yield* harness.until(DiffHold, executionId, "Suspended")
          const token = DurableDeferred.tokenFromExecutionId(DiffSignal, { workflow: DiffHold, executionId })
          yield* DurableDeferred.succeed(DiffSignal, { token, value: "first" })
          yield* DurableDeferred.succeed(DiffSignal, { token, value: "second" })
        })
        const [exit] = yield* Effect.all([Effect.exit(DiffHold.execute({ id })), complete], {
          concurrency: 2,
        })
        return { exit: describeExit(exit), log: logOf(executionId) }
      }),
  },
  {
    name: "interrupt and poll of an execution never started, then its execute",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffOnce.executionId({ id })
        yield* DiffOnce.interrupt(executionId)
        yield* DiffOnce.resume(executionId)
        const before = describeResult(yield* DiffOnce.poll(executionId))
        const exit = describeExit(yield* Effect.exit(DiffOnce.execute({ id })))
        return { before, exit, log: logOf(executionId) }
      }),
  },
  {
    name: "the same execution id executed with another payload joins the first",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const first = describeExit(yield* Effect.exit(DiffRetry.execute({ id, failures: 1 })))
        const second = describeExit(yield* Effect.exit(DiffRetry.execute({ id, failures: 0 })))
        return { first, second, log: logOf(yield* DiffRetry.executionId({ id, failures: 0 })) }
      }),
  },
  {
    name: "a durable clock on the alarm between two activities",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffAlarm.execute({ id }, { discard: true })
        yield* harness.until(DiffAlarm, executionId, "Complete")
        return { poll: describeResult(yield* DiffAlarm.poll(executionId)), log: logOf(executionId) }
      }),
  },
  {
    name: "interruptUnsafe of an execution sleeping on a durable clock",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffNap.execute({ id }, { discard: true })
        yield* harness.until(DiffNap, executionId, "Suspended")
        yield* Effect.flatMap(WorkflowEngine.WorkflowEngine, (engine) =>
          engine.interruptUnsafe(DiffNap, executionId),
        )
        yield* harness.until(DiffNap, executionId, "Complete")
        return { poll: describeResult(yield* DiffNap.poll(executionId)), log: logOf(executionId) }
      }),
  },
  {
    name: "a child started with discard outlives its completed parent",
    run: (harness, id) =>
      Effect.gen(function* () {
        const exit = describeExit(yield* Effect.exit(DiffFire.execute({ id })))
        const childId = yield* DiffHold.executionId(heldPayload(id))
        yield* harness.until(DiffHold, childId, "Suspended")
        const childParked = describeResult(yield* DiffHold.poll(childId))
        const token = DurableDeferred.tokenFromExecutionId(DiffSignal, {
          workflow: DiffHold,
          executionId: childId,
        })
        yield* DurableDeferred.succeed(DiffSignal, { token, value: "late" })
        yield* harness.until(DiffHold, childId, "Complete")
        return {
          exit,
          childParked,
          child: describeResult(yield* DiffHold.poll(childId)),
          log: logOf(yield* DiffFire.executionId({ id })),
          childLog: logOf(childId),
        }
      }),
  },
  {
    name: "a child suspended by SuspendOnFailure, resumed: its parent completes",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffAdopt.execute({ id }, { discard: true })
        const childId = yield* DiffResumable.executionId({ id: `adopted-by-${id}` })
        yield* harness.until(DiffResumable, childId, "Suspended")
        yield* harness.until(DiffAdopt, executionId, "Suspended")
        const parentParked = describeResult(yield* DiffAdopt.poll(executionId))
        yield* DiffResumable.resume(childId)
        yield* harness.until(DiffAdopt, executionId, "Complete")
        return {
          parentParked,
          poll: describeResult(yield* DiffAdopt.poll(executionId)),
          child: describeResult(yield* DiffResumable.poll(childId)),
          childLog: logOf(childId),
        }
      }),
    differs: {
      documented:
        "docs/workflows.md, Suspended executions: a parent waiting on a suspended child answers `Suspended` without a cause",
      memory: {
        parentParked: {
          suspended: {
            failed: false,
            cause: { failures: [], defects: ['"first run fails"'], interrupted: false },
          },
        },
      },
      threads: { parentParked: { suspended: { failed: false, cause: undefined } } },
    },
  },
  {
    name: "an activity cut short by a timeout in the workflow's code, with a workflow finalizer",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = describeExit(yield* Effect.exit(DiffTimeout.execute({ id })))
        return { exit, log: logOf(yield* DiffTimeout.executionId({ id })) }
      }),
  },
  {
    name: "SuspendOnFailure with a compensation: parked on a deferred, suspended by an activity, resumed",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffCareful.execute({ id }, { discard: true })
        yield* harness.until(DiffCareful, executionId, "Suspended")
        const parked = describeResult(yield* DiffCareful.poll(executionId))
        const token = DurableDeferred.tokenFromExecutionId(DiffSignal, { workflow: DiffCareful, executionId })
        yield* DurableDeferred.succeed(DiffSignal, { token, value: "go" })
        yield* harness.until(DiffCareful, executionId, "Suspended")
        // The run goes on from the park to the activity's failure: wait for that suspension.
        for (let round = 0; round < 200; round++) {
          const polledNow = yield* DiffCareful.poll(executionId)
          if (
            Option.isSome(polledNow) &&
            polledNow.value._tag === "Suspended" &&
            polledNow.value.failed === true
          )
            break
          yield* harness.until(DiffCareful, executionId, "Suspended")
          yield* Effect.sleep(10)
        }
        const suspended = describeResult(yield* DiffCareful.poll(executionId))
        yield* DiffCareful.resume(executionId)
        yield* harness.until(DiffCareful, executionId, "Complete")
        return {
          parked,
          suspended,
          poll: describeResult(yield* DiffCareful.poll(executionId)),
          log: logOf(executionId),
        }
      }),
  },
  {
    name: "values whose JSON form differs from their type (Date, Option, BigInt)",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const payload = { id, at: new Date(Date.UTC(2026, 0, 2)) }
        const exit = describeExit(yield* Effect.exit(DiffValues.execute(payload)))
        const executionId = yield* DiffValues.executionId(payload)
        return { exit, poll: describeResult(yield* DiffValues.poll(executionId)), log: logOf(executionId) }
      }),
  },
  {
    name: "a defect that is not an Error",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const exit = describeExit(yield* Effect.exit(DiffOddDefect.execute({ id })))
        return { exit, log: logOf(yield* DiffOddDefect.executionId({ id })) }
      }),
  },
]

const memoryEngine = Layer.provideMerge(diffHandlers, WorkflowEngine.layerMemory)

describe("ThreadWorkflowEngine against the in-memory engine", () => {
  for (const program of programs) {
    it.live(program.name, () =>
      Effect.gen(function* () {
        const reference = yield* program
          .run(memory, uniqueId("memory"))
          .pipe(Effect.provide(memoryEngine), Effect.orDie)
        const ours = yield* program
          .run(threads, uniqueId("thread"))
          .pipe(Effect.provide(clientEngine), Effect.orDie)
        if (program.differs === undefined) {
          expect(ours).toEqual(reference)
        } else {
          // The rest is the same; the named keys differ as documented.
          expect(ours).toEqual({ ...reference, ...program.differs.threads })
          expect(reference).toMatchObject(program.differs.memory)
        }
      }),
    )
  }
})
