/**
 * Differential rows about what an execution waits for and what a caller does meanwhile: clocks,
 * deferreds, interrupts, resumes, suspensions, parents and children parked.
 */
import { Effect, Exit, Option } from "effect"
import { DurableDeferred, WorkflowEngine } from "effect/workflow"
import {
  DiffAdopt,
  DiffAlarm,
  DiffCareful,
  DiffFinal,
  DiffFire,
  DiffFirst,
  DiffGuard,
  DiffHold,
  DiffNap,
  DiffOnce,
  DiffPair,
  DiffResumable,
  DiffSecond,
  DiffSelfFail,
  DiffSignal,
  DiffTokened,
  diffTokens,
  heldPayload,
} from "../worker/workflowDiff.ts"
import { describeExit, describeResult, interruptParked, logOf, type Program } from "./diffSupport.ts"

/** The rows that drive an execution through its waits. */
export const waitPrograms: ReadonlyArray<Program> = [
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
    name: "a token the workflow computes with DurableDeferred.token completes its deferred",
    run: (harness, id) =>
      Effect.gen(function* () {
        const executionId = yield* DiffTokened.execute({ id }, { discard: true })
        yield* harness.until(DiffTokened, executionId, "Suspended")
        const published = diffTokens.get(executionId)
        if (published === undefined) return yield* Effect.die(new Error("no token was published"))
        const fromPayload = yield* DurableDeferred.tokenFromPayload(DiffSignal, {
          workflow: DiffTokened,
          payload: { id },
        })
        yield* DurableDeferred.succeed(DiffSignal, {
          token: published,
          value: "by token",
        })
        yield* harness.until(DiffTokened, executionId, "Complete")
        return {
          sameAsFromPayload: published === fromPayload,
          poll: describeResult(yield* DiffTokened.poll(executionId)),
          log: logOf(executionId),
        }
      }),
  },
]
