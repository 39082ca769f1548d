/**
 * The workflows an Object's engine has registered (`Workflow.toLayer` calls `register`): the
 * engine provided by `ThreadWorkflowEngine.layer` keeps their handlers, and the program of an
 * execution finds its handler through that engine in the Object's context.
 */
import { Effect } from "effect"
import type { Workflow } from "effect/workflow"
import { WorkflowEngine } from "effect/workflow"

/** A registered handler, its services already merged in by `makeUnsafe`. @internal */
export type Handler = (
  payload: object,
  executionId: string,
) => Effect.Effect<unknown, unknown, WorkflowEngine.WorkflowInstance | WorkflowEngine.WorkflowEngine>

/**
 * How an execution completes another execution's deferred: sends it from the Object as a Worker
 * would (the public module builds it over the Object's namespace). @internal
 */
export type DeferredSender = WorkflowEngine.Encoded["deferredDone"]

const handlersOf = new WeakMap<object, Map<string, Handler>>()
const sendersOf = new WeakMap<object, DeferredSender>()

/** The sender registered with `engine`, if any. @internal */
export const registeredSender = (
  engine: WorkflowEngine.WorkflowEngine["Service"],
): DeferredSender | undefined => sendersOf.get(engine)

/** The handler registered for `workflowName` with `engine`, if any. @internal */
export const registeredHandler = (
  engine: WorkflowEngine.WorkflowEngine["Service"],
  workflowName: string,
): Handler | undefined => handlersOf.get(engine)?.get(workflowName)

const outside = (operation: string) =>
  Effect.die(
    new Error(
      `WorkflowEngine.${operation} runs in a workflow, or from a Worker with ThreadWorkflowEngine.layerClient`,
    ),
  )

/** The engine of an Object: it registers handlers; executions get an engine of their own. @internal */
export const makeRegistryEngine = (sender?: DeferredSender): WorkflowEngine.WorkflowEngine["Service"] => {
  const handlers = new Map<string, Handler>()
  const encoded: WorkflowEngine.Encoded = {
    register: (workflow: Workflow.Any, execute) =>
      Effect.sync(() => {
        handlers.set(workflow._tag, execute)
      }),
    execute: () => outside("execute"),
    poll: () => outside("poll"),
    interrupt: () => outside("interrupt"),
    interruptUnsafe: () => outside("interruptUnsafe"),
    resume: () => outside("resume"),
    activityExecute: () => outside("activityExecute"),
    deferredResult: () => outside("deferredResult"),
    deferredDone: () => outside("deferredDone"),
    scheduleClock: () => outside("scheduleClock"),
  }
  const engine = WorkflowEngine.makeUnsafe(encoded)
  handlersOf.set(engine, handlers)
  if (sender !== undefined) sendersOf.set(engine, sender)
  return engine
}
