/**
 * Differential rows about what an execution answers: results, typed failures, defects, retries,
 * compensations, children, repeats of an execution id.
 */
import { Effect } from "effect"
import { DurableDeferred } from "effect/workflow"
import {
  childPayload,
  DiffChild,
  DiffCompensate,
  DiffDefect,
  DiffHold,
  DiffOddDefect,
  DiffOnce,
  DiffParent,
  DiffRetry,
  DiffShortNap,
  DiffSignal,
  DiffTimeout,
  DiffTyped,
  DiffValues,
} from "../worker/workflowDiff.ts"
import { describeExit, describeResult, logOf, type Program } from "./diffSupport.ts"

/** The rows whose caller waits for the result: values, errors, retries, compensations, children. */
export const outcomePrograms: ReadonlyArray<Program> = [
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
    name: "the same execution id executed with another payload joins the first",
    run: (_harness, id) =>
      Effect.gen(function* () {
        const first = describeExit(yield* Effect.exit(DiffRetry.execute({ id, failures: 1 })))
        const second = describeExit(yield* Effect.exit(DiffRetry.execute({ id, failures: 0 })))
        return { first, second, log: logOf(yield* DiffRetry.executionId({ id, failures: 0 })) }
      }),
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
