/**
 * The agent of a workflow: each execution is one Submission of it, admitted under the execution
 * id as its idempotency key. Its input is the execution id with the payload, its output the
 * workflow's exit, both encoded with the workflow's Schemas, so the agent's digest changes with
 * them and a binding wait guards an execution admitted under other Schemas.
 */
import { Cause, Effect, Exit, Option, Schema } from "effect"
import { type Workflow, WorkflowEngine } from "effect/workflow"
import { Workflow as WorkflowModule } from "effect/workflow"
import type { AgentContext } from "../../core/AgentContext.ts"
import { AgentFailure, define, type JsonCodec } from "../../core/AgentRegistration.ts"
import { RESUME_EVENT, workflowAgentId } from "./codec.ts"
import { registeredHandler, registeredSender } from "./registry.ts"
import {
  emptyRunState,
  endedByAbortedChild,
  type ExecutionAgent,
  type ExecutionInput,
  makeRunEngine,
} from "./runEngine.ts"

const agents = new WeakMap<Workflow.Any, Map<string, ExecutionAgent>>()
const latest = new WeakMap<Workflow.Any, ExecutionAgent>()

/**
 * The agent of `workflow` at `version`, one per pair; without a version, the one defined last
 * (a parent starting a child uses the child's registered agent), else version "1". @internal
 */
export const executionAgent = (workflow: Workflow.Any, version?: string): ExecutionAgent => {
  if (version === undefined) return latest.get(workflow) ?? executionAgent(workflow, "1")
  const byVersion = agents.get(workflow) ?? new Map<string, ExecutionAgent>()
  agents.set(workflow, byVersion)
  const known = byVersion.get(version)
  if (known !== undefined) return known
  const props = workflow as Workflow.AnyWithProps
  const agent = define({
    id: workflowAgentId(workflow._tag),
    name: workflow._tag,
    version,
    input: Schema.Struct({
      executionId: Schema.String,
      payload: Schema.toCodecJson(props.payloadSchema),
    }) as unknown as JsonCodec<ExecutionInput>,
    output: Schema.toCodecJson(
      Schema.Exit(props.successSchema, props.errorSchema, Schema.Defect()),
    ) as unknown as JsonCodec<Exit.Exit<unknown, unknown>>,
    program: (input, ctx) => runExecution(workflow, input, ctx),
  }) as ExecutionAgent
  byVersion.set(version, agent)
  latest.set(workflow, agent)
  return agent
}

/**
 * Runs the workflow's handler until it completes. A suspension (`Workflow.suspend`, or a
 * failure under `SuspendOnFailure`) parks the Submission until a resume arrives, then the
 * handler runs again over what the earlier passes learned.
 */
const runExecution = (
  workflow: Workflow.Any,
  input: ExecutionInput,
  ctx: AgentContext<ExecutionInput, never>,
): Effect.Effect<Exit.Exit<unknown, unknown>, AgentFailure> =>
  Effect.gen(function* () {
    const engine = yield* Effect.serviceOption(WorkflowEngine.WorkflowEngine)
    const handler = Option.isSome(engine) ? registeredHandler(engine.value, workflow._tag) : undefined
    if (handler === undefined) {
      return yield* AgentFailure.nonRetryable(
        `workflow ${workflow._tag} is not registered with this Object's ThreadWorkflowEngine.layer`,
      )
    }
    const state = emptyRunState()
    const sender = Option.isSome(engine) ? registeredSender(engine.value) : undefined
    const runEngine = makeRunEngine(ctx, (child) => executionAgent(child), state, sender)
    while (true) {
      const instance = WorkflowEngine.WorkflowInstance.initial(workflow, input.executionId)
      const run = yield* Effect.exit(
        handler(input.payload, input.executionId).pipe(
          // A run the runtime stopped ends interrupted. One that ends otherwise was not stopped,
          // even if its own code cut a call short (a timeout): its finalizers run.
          Effect.onExit((exit) =>
            Effect.sync(() => {
              if (Exit.isSuccess(exit) || !Cause.hasInterruptsOnly(exit.cause)) instance.abandoned = false
            }),
          ),
          WorkflowModule.intoResult,
          Effect.provideService(WorkflowEngine.WorkflowInstance, instance),
          Effect.provideService(WorkflowEngine.WorkflowEngine, runEngine),
        ),
      )
      // An awaited child interrupted on its own (a Worker's interrupt of it), unhandled, ends the
      // execution interrupted, as in the in-memory engine. Any other interruption is the run's
      // own (a park, a stop, a cut): the runtime decides what it means.
      if (Exit.isFailure(run) && endedByAbortedChild(run.cause)) return Exit.failCause(run.cause)
      const result = yield* run
      if (result._tag === "Complete") return result.exit
      yield* Effect.orDie(ctx.waitForEvent(RESUME_EVENT, Schema.Json))
    }
  }) as Effect.Effect<Exit.Exit<unknown, unknown>, AgentFailure>
