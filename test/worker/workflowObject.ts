/**
 * A `ThreadObject` hosting `effect/workflow` workflows beside an agent: the scenarios of
 * Effect's own engine tests, with counters of live activity runs kept in the test isolate.
 */
import { Effect, Layer, Schema } from "effect"
import { Activity, DurableClock, DurableDeferred, Workflow } from "effect/workflow"
import * as ThreadObject from "../../src/ThreadObject.ts"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"
import { echoAgent } from "./threadObject.ts"
import { diffAgents, diffHandlers } from "./workflowDiffHandlers.ts"
import { edgeAgents, edgeHandlers } from "./workflowEdgeCases.ts"

/** How many times each activity ran live, by execution id and activity name. */
export const activityRuns = new Map<string, number>()
const runs = (executionId: string, name: string) => activityRuns.get(`${executionId}/${name}`) ?? 0
/** Counts a live run of `name` and answers its 1-based number. */
const ranNow = (executionId: string, name: string) =>
  Effect.sync(() => {
    const count = runs(executionId, name) + 1
    activityRuns.set(`${executionId}/${name}`, count)
    return count
  })

/** A refusal the order workflow declares. */
export class OrderRefused extends Schema.TaggedError<OrderRefused>()("OrderRefused", {
  reason: Schema.String,
}) {}

/** Two activities, then a result built from both; `refuse` fails it with its typed error. */
export const OrderWorkflow = Workflow.make("Order", {
  payload: { id: Schema.String, refuse: Schema.optionalKey(Schema.Boolean) },
  success: Schema.Struct({ charged: Schema.Number, shipped: Schema.String }),
  error: OrderRefused,
  idempotencyKey: ({ id }) => id,
})

/** An activity that fails `failures` times with a typed error, retried with `Activity.retry`. */
export const FlakyWorkflow = Workflow.make("Flaky", {
  payload: { id: Schema.String, failures: Schema.Number },
  success: Schema.Number,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** An activity retried by the step retry policy (`ActivityRetry`): 3 attempts, durable backoffs. */
export const PatientWorkflow = Workflow.make("Patient", {
  payload: { id: Schema.String, failures: Schema.Number },
  success: Schema.Number,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** A durable clock between two activities. */
export const NapWorkflow = Workflow.make("Nap", {
  payload: { id: Schema.String, millis: Schema.Number },
  success: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** The deferred an approver completes from outside. */
export const Approval = DurableDeferred.make("approval", { success: Schema.String, error: Schema.String })

/** Waits for `Approval`, then records the decision in an activity. */
export const ApprovalWorkflow = Workflow.make("Approval", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** Suspends when an activity fails (`SuspendOnFailure`) until it is resumed. */
export const ResumableWorkflow = Workflow.make("Resumable", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
}).annotate(Workflow.SuspendOnFailure, true)

/** Runs `OrderWorkflow` as a child and reports its result. */
export const ParentWorkflow = Workflow.make("Parent", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: OrderRefused,
  idempotencyKey: ({ id }) => id,
})

/** Starts `OrderWorkflow` as a child with `discard: true`, then executes it again to await it. */
export const FireThenJoinWorkflow = Workflow.make("FireThenJoin", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: OrderRefused,
  idempotencyKey: ({ id }) => id,
})

/** Runs `ApprovalWorkflow` as a child and waits for it. */
export const GuardianWorkflow = Workflow.make("Guardian", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** Completes `Approval` of the `ApprovalWorkflow` execution of `{ id: target }` from inside its run. */
export const NotifierWorkflow = Workflow.make("Notifier", {
  payload: { id: Schema.String, target: Schema.String },
  success: Schema.String,
  idempotencyKey: ({ id }) => id,
})

/** Registered as an agent, but no handler is registered with the engine. */
export const UnhandledWorkflow = Workflow.make("Unhandled", {
  payload: { id: Schema.String },
  idempotencyKey: ({ id }) => id,
})

const handlers = Layer.mergeAll(
  OrderWorkflow.toLayer(({ id, refuse }, executionId) =>
    Effect.gen(function* () {
      const charged = yield* Activity.make({
        name: "charge",
        success: Schema.Number,
        execute: Effect.as(ranNow(executionId, "charge"), 42),
      })
      if (refuse === true) return yield* new OrderRefused({ reason: `order ${id} refused` })
      const shipped = yield* Activity.make({
        name: "ship",
        success: Schema.String,
        execute: Effect.as(ranNow(executionId, "ship"), `parcel-${id}`),
      })
      return { charged, shipped }
    }),
  ),
  FlakyWorkflow.toLayer(({ failures }, executionId) =>
    Activity.make({
      name: "flaky",
      success: Schema.Number,
      error: Schema.String,
      execute: Effect.gen(function* () {
        const attempt = yield* Activity.CurrentAttempt
        yield* ranNow(executionId, "flaky")
        if (attempt <= failures) return yield* Effect.fail(`attempt ${attempt} failed`)
        return attempt
      }),
    }).pipe(Activity.retry({ times: 5 })),
  ),
  PatientWorkflow.toLayer(({ failures }, executionId) =>
    Activity.make({
      name: "patient",
      success: Schema.Number,
      error: Schema.String,
      execute: Effect.flatMap(ranNow(executionId, "patient"), (count) =>
        count <= failures ? Effect.fail(`run ${count} failed`) : Effect.succeed(count),
      ),
    }).annotate(ThreadWorkflowEngine.ActivityRetry, { attempts: 3, backoff: { baseMillis: 50, jitter: 0 } }),
  ),
  NapWorkflow.toLayer(({ millis }, executionId) =>
    Effect.gen(function* () {
      yield* Activity.make({ name: "before", execute: Effect.asVoid(ranNow(executionId, "before")) })
      // A threshold of 0 puts even a short clock on the Object's alarm.
      yield* DurableClock.sleep({ name: "nap", duration: millis, inMemoryThreshold: 0 })
      yield* Activity.make({ name: "after", execute: Effect.asVoid(ranNow(executionId, "after")) })
      return "rested"
    }),
  ),
  ApprovalWorkflow.toLayer((_payload, executionId) =>
    Effect.gen(function* () {
      const decision = yield* DurableDeferred.await(Approval)
      yield* Activity.make({ name: "record", execute: Effect.asVoid(ranNow(executionId, "record")) })
      return `decided: ${decision}`
    }),
  ),
  ResumableWorkflow.toLayer((_payload, executionId) =>
    Activity.make({
      name: "fragile",
      success: Schema.String,
      error: Schema.String,
      execute: Effect.flatMap(ranNow(executionId, "fragile"), (count) =>
        count === 1 ? Effect.fail("first run fails") : Effect.succeed(`ran ${count} times`),
      ),
    }),
  ),
  ParentWorkflow.toLayer(({ id }) =>
    Effect.map(OrderWorkflow.execute({ id: `child-of-${id}` }), (order) => `child shipped ${order.shipped}`),
  ),
  GuardianWorkflow.toLayer(({ id }) => ApprovalWorkflow.execute({ id: `guarded-${id}` })),
  NotifierWorkflow.toLayer(({ target }) =>
    Effect.gen(function* () {
      const token = yield* DurableDeferred.tokenFromPayload(Approval, {
        workflow: ApprovalWorkflow,
        payload: { id: target },
      })
      yield* DurableDeferred.succeed(Approval, { token, value: "from a notifier" })
      return "notified"
    }),
  ),
  FireThenJoinWorkflow.toLayer(({ id }) =>
    Effect.gen(function* () {
      yield* OrderWorkflow.execute({ id: `fired-${id}` }, { discard: true })
      const order = yield* OrderWorkflow.execute({ id: `fired-${id}` })
      return `joined ${order.shipped}`
    }),
  ),
)

/** The workflows' agents, registered with the Object's other agents. */
export const workflowAgents = [
  OrderWorkflow,
  FlakyWorkflow,
  PatientWorkflow,
  NapWorkflow,
  ApprovalWorkflow,
  ResumableWorkflow,
  ParentWorkflow,
  GuardianWorkflow,
  FireThenJoinWorkflow,
  NotifierWorkflow,
  UnhandledWorkflow,
].map((workflow) => ThreadWorkflowEngine.agent(workflow))

export class WorkflowThreadObject extends ThreadObject.make(
  Layer.mergeAll(
    ThreadObject.layer([echoAgent, ...workflowAgents, ...edgeAgents, ...diffAgents]),
    Layer.mergeAll(handlers, edgeHandlers, diffHandlers).pipe(Layer.provideMerge(ThreadWorkflowEngine.layer)),
  ),
  { namespaceBinding: "THREADS_WORKFLOW" },
) {}
