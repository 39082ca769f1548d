/**
 * The engine one run of an execution sees: the `effect/workflow` contract mapped onto the
 * `AgentContext` of the Submission that runs it. An activity is a journaled step, a durable
 * clock a durable sleep, a deferred an event wait, a child workflow a child Submission.
 *
 * The journal matches calls by position, so a run after a resume (a second pass of the
 * workflow in the same program) must not journal again what an earlier pass returned: what the
 * program learned is kept in `RunState` and answered from there, and only new calls reach the
 * journal. A replay after a crash makes the same calls in the same order, so it rebuilds the
 * same state.
 */
import { Cause, Context, Effect, Exit, Option, Schema } from "effect"
import { type Workflow, WorkflowEngine } from "effect/workflow"
import { Workflow as WorkflowModule } from "effect/workflow"
import type { AgentContext, ChildHandle, ChildSettlement, RetryPolicy } from "../../core/AgentContext.ts"
import { type AgentDefinition, AgentFailure } from "../../core/AgentRegistration.ts"
import { NOT_STARTED_BY_THIS_PARENT } from "../../core/internal/runtime/children/children.ts"
import { ActivityRetry, exitOfFailure, failedTyped, failureMessage } from "./activityRetry.ts"
import {
  ActivityRecord,
  decodeActivityExit,
  decodeDeferredExit,
  deferredEvent,
  encodeActivityExit,
  suspendedRecord,
  suspendedResult,
  WORKFLOW_THREAD_ID,
} from "./codec.ts"
import type { DeferredSender } from "./registry.ts"

/** What the passes of one program learned, by name. @internal */
export interface RunState {
  readonly activities: Map<string, Workflow.Result<unknown, unknown>>
  readonly deferreds: Map<string, Exit.Exit<unknown, unknown>>
  readonly clocks: Set<string>
  /** A child's result once awaited, else the handle of its start. */
  readonly children: Map<string, Workflow.Result<unknown, unknown> | ChildHandle<Exit.Exit<unknown, unknown>>>
  /** Other executions' deferreds this execution completed (`<execution id>/<deferred name>`). */
  readonly sent: Set<string>
}

/** @internal */
export const emptyRunState = (): RunState => ({
  activities: new Map(),
  deferreds: new Map(),
  clocks: new Set(),
  children: new Map(),
  sent: new Set(),
})

/** The input of an execution's Submission: its id and its payload. */
export interface ExecutionInput {
  readonly executionId: string
  readonly payload: object
}

/** The agent whose Submissions run a workflow's executions. @internal */
export type ExecutionAgent = AgentDefinition<ExecutionInput, Exit.Exit<unknown, unknown>>

const unsupported = (operation: string) =>
  Effect.die(new Error(`WorkflowEngine.${operation} is not supported inside a workflow on a Thread`))

/** A failed context call is a defect of the run: the engine's contract has no error channel. */
const orDie = <A>(effect: Effect.Effect<A, AgentFailure | { readonly _tag: string }>) => Effect.orDie(effect)

/**
 * A context call the runtime interrupts stops this run (a park, a yield, an abort, a cut): the
 * run is abandoned for a later replay, as `Workflow.intoResult` knows it, so its scope closes
 * without the workflow's finalizers (`Workflow.addFinalizer`, `withCompensation`): they run once,
 * in the run that completes. A run that ends otherwise was not stopped: `runExecution` clears it.
 */
const stopsRun = <A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.serviceOption(WorkflowEngine.WorkflowInstance), (instance) =>
    Option.isNone(instance)
      ? call
      : Effect.onInterrupt(call, () =>
          Effect.sync(() => {
            instance.value.abandoned = true
          }),
        ),
  )

/**
 * The fiber id of the interrupt that an aborted child's settlement stands for in its parent: a
 * parent that ends by it (its code did not handle it) was ended by its child, which tells it
 * from a run the runtime stopped or cut short. @internal
 */
export const CHILD_ABORTED_FIBER_ID = -1

/** Whether a run's failure is only the interrupt of an aborted child it awaited. @internal */
export const endedByAbortedChild = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.length > 0 &&
  cause.reasons.every(
    (reason) => Cause.isInterruptReason(reason) && reason.fiberId === CHILD_ABORTED_FIBER_ID,
  )

/** A refused start whose execution id names an execution that this parent did not start. */
const startedElsewhere = (settled: ChildSettlement<Exit.Exit<unknown, unknown>>): boolean =>
  settled.outcome === "failed" &&
  settled.refused === "idempotency-conflict" &&
  settled.error.endsWith(NOT_STARTED_BY_THIS_PARENT)

const childExit = (settled: ChildSettlement<Exit.Exit<unknown, unknown>>): Exit.Exit<unknown, unknown> => {
  switch (settled.outcome) {
    case "completed":
      return settled.output
    case "failed":
      return Exit.die(new Error(settled.error))
    case "aborted":
      return Exit.interrupt(CHILD_ABORTED_FIBER_ID)
  }
}

/**
 * An activity run as a step with a retry policy: a typed failure fails the attempt (the policy
 * retries it after a durable backoff), and the last one's exit is the activity's result.
 */
const retriedActivity = (
  ctx: AgentContext<ExecutionInput, never>,
  name: string,
  body: Effect.Effect<ActivityRecord>,
  retry: RetryPolicy,
) =>
  Effect.gen(function* () {
    const attempt = Effect.flatMap(body, (record) =>
      record._tag === "Complete" && failedTyped(record.exit)
        ? Effect.fail(new AgentFailure({ message: failureMessage(record.exit) }))
        : Effect.succeed(record),
    )
    const outcome = yield* Effect.result(
      stopsRun(
        ctx.step(name, attempt as Effect.Effect<ActivityRecord & Schema.Json, AgentFailure>, { retry }),
      ),
    )
    if (outcome._tag === "Success") return outcome.success as ActivityRecord
    const exit = exitOfFailure(outcome.failure.message)
    // Any other failure is the step's own (an invalid policy): a defect of the run.
    if (exit === undefined) return yield* Effect.die(outcome.failure)
    return { _tag: "Complete", exit } satisfies ActivityRecord
  })

/** The engine of one program run over `ctx`. @internal */
export const makeRunEngine = (
  ctx: AgentContext<ExecutionInput, never>,
  agentOf: (workflow: Workflow.Any) => ExecutionAgent,
  state: RunState,
  sender?: DeferredSender,
): WorkflowEngine.WorkflowEngine["Service"] => {
  const activityExecute: WorkflowEngine.Encoded["activityExecute"] = (activity, attempt) =>
    Effect.gen(function* () {
      const key = `${activity.name}/${attempt}`
      const known = state.activities.get(key)
      if (known !== undefined) return known
      const instance = yield* WorkflowEngine.WorkflowInstance
      const services = yield* Effect.context<never>()
      const activityInstance = WorkflowEngine.WorkflowInstance.initial(
        instance.workflow,
        instance.executionId,
      )
      activityInstance.interrupted = instance.interrupted
      const body = activity.executeEncoded.pipe(
        WorkflowModule.intoResult,
        Effect.provideService(WorkflowEngine.WorkflowInstance, activityInstance),
        Effect.updateContext((input: Context.Context<any>) => Context.merge(input, services)),
        Effect.map((result): ActivityRecord =>
          result._tag === "Complete"
            ? { _tag: "Complete", exit: encodeActivityExit(result.exit) }
            : suspendedRecord(result),
        ),
      ) as Effect.Effect<ActivityRecord>
      const retry = Context.get(activity.annotations, ActivityRetry)
      const record =
        retry === undefined
          ? yield* orDie(
              stopsRun(ctx.step(`activity/${key}`, body as Effect.Effect<ActivityRecord & Schema.Json>)),
            )
          : yield* retriedActivity(ctx, `activity/${key}`, body, retry)
      const decoded = Schema.decodeUnknownSync(ActivityRecord)(record)
      // Its cause (a failure under `SuspendOnFailure`) is the execution's, which `poll` reads.
      if (decoded._tag === "Suspended") return suspendedResult(decoded)
      const result = new WorkflowModule.Complete({ exit: decodeActivityExit(decoded.exit) })
      state.activities.set(key, result)
      return result
    })

  const deferredResult: WorkflowEngine.Encoded["deferredResult"] = (deferred) =>
    Effect.gen(function* () {
      if (state.clocks.has(deferred.name)) return Option.some(Exit.void)
      const known = state.deferreds.get(deferred.name)
      if (known !== undefined) return Option.some(known)
      // `DurableDeferred.raceAll` (and `Activity.raceAll`) would wait on a deferred nothing completes.
      if (deferred.name.startsWith("raceAll/")) {
        return yield* Effect.die(
          new Error(
            `DurableDeferred.raceAll / Activity.raceAll (${deferred.name}) is not supported inside a workflow on a Thread: run the activities one at a time`,
          ),
        )
      }
      // No completion yet parks the Submission: nothing runs until the event arrives.
      const event = yield* deferredEvent(deferred.name)
      const json = yield* orDie(stopsRun(ctx.waitForEvent(event, Schema.Json)))
      const exit = decodeDeferredExit(json)
      state.deferreds.set(deferred.name, exit)
      return Option.some(exit)
    })

  const scheduleClock: WorkflowEngine.Encoded["scheduleClock"] = (_workflow, { clock }) =>
    state.clocks.has(clock.deferred.name)
      ? Effect.void
      : Effect.map(stopsRun(ctx.sleep(`clock/${clock.name}`, clock.duration)), () => {
          state.clocks.add(clock.deferred.name)
        })

  /**
   * Another execution's deferred, completed as a step that sends it as a Worker does: the step
   * runs again only if the Object stopped before its record, and a second send is the same
   * event (its id is the deferred's name), so the completion is recorded once. The execution's
   * own deferred (`DurableDeferred.into`) would need its own journal's record, not a send.
   */
  const deferredDone: WorkflowEngine.Encoded["deferredDone"] = (options) =>
    Effect.gen(function* () {
      const instance = yield* Effect.serviceOption(WorkflowEngine.WorkflowInstance)
      if (Option.isSome(instance) && instance.value.executionId === options.executionId)
        return yield* unsupported("deferredDone of the execution's own deferred (DurableDeferred.into)")
      if (sender === undefined) return yield* unsupported("deferredDone")
      const key = `${options.executionId}/${options.deferredName}`
      if (state.sent.has(key)) return
      yield* orDie(stopsRun(ctx.step(`deferred/${key}`, Effect.as(sender(options), null))))
      state.sent.add(key)
    })

  const execute = ((workflow: Workflow.Any, options: Parameters<WorkflowEngine.Encoded["execute"]>[1]) =>
    Effect.gen(function* () {
      if (options.parent === undefined) return yield* unsupported("execute outside a parent workflow")
      if (options.detached === true) {
        return yield* Effect.die(
          new Error(
            `${workflow._tag}.execute with detached: true is not supported inside a workflow on a Thread: a child is aborted with its parent; execute it from a Worker instead`,
          ),
        )
      }
      const known = state.children.get(options.executionId)
      if (known !== undefined && WorkflowModule.isResult(known)) return options.discard ? undefined : known
      // Started once, by this call or an earlier one (with `discard`): a later execute awaits it.
      const handle =
        known ??
        (yield* orDie(
          stopsRun(
            ctx.startChild({
              agent: agentOf(workflow),
              input: { executionId: options.executionId, payload: options.payload },
              thread: { objectName: options.executionId, threadId: WORKFLOW_THREAD_ID },
              // The key a Worker's execute admits it under: both reach the same Submission. One a
              // Worker started that has settled answers its result, as a repeat execute would.
              idempotencyKey: options.executionId,
              joinSettled: true,
            }),
          ),
        ))
      state.children.set(options.executionId, handle)
      if (options.discard) return undefined
      const settled = yield* orDie(stopsRun(ctx.awaitChild(handle)))
      // An execution a Worker (or another parent) started that still runs reports its end to
      // them, not here: as in the in-memory engine, the parent is suspended, and a resume starts
      // it again (at a new call), which joins that execution once it has settled.
      if (startedElsewhere(settled)) {
        state.children.delete(options.executionId)
        return new WorkflowModule.Suspended({})
      }
      const result = new WorkflowModule.Complete({ exit: childExit(settled) })
      state.children.set(options.executionId, result)
      return result
    })) as WorkflowEngine.Encoded["execute"]

  return WorkflowEngine.makeUnsafe({
    register: () => unsupported("register"),
    execute,
    poll: () => unsupported("poll"),
    interrupt: () => unsupported("interrupt"),
    interruptUnsafe: () => unsupported("interruptUnsafe"),
    resume: () => unsupported("resume"),
    activityExecute,
    deferredResult,
    deferredDone,
    scheduleClock,
  })
}
