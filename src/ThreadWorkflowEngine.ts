/**
 * Effect's `effect/workflow` running durably on Threads.
 *
 * Inside a `ThreadObject`, `layer` provides the `WorkflowEngine` that `Workflow.toLayer`
 * registers handlers with, and `agent(workflow)` is the agent whose Submissions run its
 * executions: register it with the Object's other agents. An execution is one Submission in the
 * Thread `workflow` of the Object named by its execution id, admitted under the execution id as
 * its idempotency key. Its activities are journaled steps, `DurableClock.sleep` a durable timer
 * on the Object's alarm, a `DurableDeferred` an event, a child workflow a child Submission in the
 * child's own Object; a suspended execution parks and costs nothing until what it waits for
 * arrives. A workflow's calls are journaled by position: it runs them one at a time.
 *
 * In a Worker, `layerClient` provides a `WorkflowEngine` over the Objects' namespace, so
 * `MyWorkflow.execute`, `poll`, `interrupt`, `resume` and `DurableDeferred.done` reach the
 * execution's Object.
 */
import { Effect, Layer, Option } from "effect"
import { type Workflow, WorkflowEngine } from "effect/workflow"
import { ThreadObjectNamespace } from "./CloudflareBindings.ts"
import type { AgentDefinition } from "./core/AgentRegistration.ts"
import { ActivityRetry as ActivityRetryReference } from "./internal/workflow/activityRetry.ts"
import { WORKFLOW_THREAD_ID } from "./internal/workflow/codec.ts"
import { clientEncoded, makeClientEngine } from "./internal/workflow/clientEngine.ts"
import { executionAgent } from "./internal/workflow/execution.ts"
import { makeRegistryEngine } from "./internal/workflow/registry.ts"
import type { ExecutionInput } from "./internal/workflow/runEngine.ts"
import * as ThreadClient from "./ThreadClient.ts"

export type { ExecutionInput } from "./internal/workflow/runEngine.ts"

/**
 * An activity annotation: retry its typed failures with the step retry policy of
 * `AgentContext.step` (`{ attempts, backoff? }` or `{ schedule }`), each failed attempt journaled
 * and each backoff a durable timer. `activity.annotate(ActivityRetry, { attempts: 3 })`; the
 * last failure is the activity's. Without it an activity runs once per `Activity.retry` attempt.
 */
export const ActivityRetry = ActivityRetryReference

/** The Thread that hosts every execution, in the Object named by its execution id. */
export const THREAD_ID = WORKFLOW_THREAD_ID

/**
 * The agent that runs `workflow`'s executions; register it with `ThreadObject.layer`. Its
 * digest covers the payload, success and error Schemas and `version`: raise the version when
 * the workflow's code changes so that executions admitted under the old code wait for it.
 */
export const agent = <W extends Workflow.Any>(
  workflow: W,
  options: { readonly version?: string } = {},
): AgentDefinition<ExecutionInput, unknown> =>
  executionAgent(workflow, options.version ?? "1") as AgentDefinition<ExecutionInput, unknown>

/**
 * Completes another execution's deferred from inside a workflow, through the Object's own
 * namespace (`ThreadObject.make`'s `namespaceBinding`), as a Worker's engine does; sent with no
 * caller identity.
 */
const sendFromObject: WorkflowEngine.Encoded["deferredDone"] = (options) =>
  Effect.gen(function* () {
    const namespace = yield* Effect.serviceOption(ThreadObjectNamespace)
    if (Option.isNone(namespace)) {
      return yield* Effect.die(
        new Error(
          "DurableDeferred.done of another execution inside a workflow needs ThreadObject.make's namespaceBinding",
        ),
      )
    }
    const ns = namespace.value.namespace as unknown as ThreadClient.ThreadNamespace
    yield* clientEncoded((executionId) => executionClient(ns, executionId)).deferredDone(options)
  })

/**
 * The `WorkflowEngine` of a `ThreadObject`: `Workflow.toLayer` registers handlers with it. A
 * workflow's `DurableDeferred.done` of another execution is a step that sends it through the
 * Object's `namespaceBinding`, as a Worker's engine does.
 */
export const layer: Layer.Layer<WorkflowEngine.WorkflowEngine> = Layer.sync(WorkflowEngine.WorkflowEngine)(
  () => makeRegistryEngine(sendFromObject),
)

/** The client of the Thread that hosts `executionId`. */
export const executionClient = (
  namespace: ThreadClient.ThreadNamespace,
  executionId: string,
  options: { readonly caller?: { readonly subject: string; readonly credential?: string } } = {},
): ThreadClient.ThreadClient =>
  ThreadClient.make(namespace, WORKFLOW_THREAD_ID, { ...options, objectName: executionId })

/**
 * The `WorkflowEngine` of a Worker, over the namespace of the `ThreadObject` class that hosts
 * the workflows; `caller` is sent with every call for the Object's authorization check.
 */
export const layerClient = (
  namespace: ThreadClient.ThreadNamespace,
  options: { readonly caller?: { readonly subject: string; readonly credential?: string } } = {},
): Layer.Layer<WorkflowEngine.WorkflowEngine> =>
  Layer.sync(WorkflowEngine.WorkflowEngine)(() =>
    makeClientEngine((executionId) => executionClient(namespace, executionId, options)),
  )
