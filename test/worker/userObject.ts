/**
 * The agents a new user writes from the README alone, in an Object of their own: a parcel
 * courier (retried step, durable sleep, event wait), a poller a schedule runs, and a parent whose
 * child waits for a person in another Object.
 */
import { Effect, Layer, Schema } from "effect"
import { Activity, DurableClock, DurableDeferred, Workflow } from "effect/workflow"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"

/** How many times each counted effect ran, by `<submissionId>:<name>`. */
export const userRuns = new Map<string, number>()
const count = (key: string) =>
  Effect.sync(() => {
    const next = (userRuns.get(key) ?? 0) + 1
    userRuns.set(key, next)
    return next
  })

export const Delivered = AgentEvent.make("delivered", Schema.Struct({ signedBy: Schema.String }))

/** The README's courier: a label printer that fails `failures` times, a nap, then a delivery. */
export const parcelAgent = define({
  id: "parcel",
  version: "1",
  input: Schema.Struct({ parcel: Schema.String, failures: Schema.Int, napMillis: Schema.Int }),
  output: Schema.String,
  events: [Delivered],
  program: ({ parcel, failures, napMillis }, ctx) =>
    Effect.gen(function* () {
      const label = yield* ctx.step(
        "print label",
        Effect.flatMap(count(`${ctx.submissionId}:print`), (n) =>
          n <= failures
            ? Effect.fail(new AgentFailure({ message: `jammed ${n}` }))
            : Effect.succeed(`label-${parcel}`),
        ),
        { retry: { attempts: 5, backoff: { baseMillis: 50 } } },
      )
      yield* ctx.sleep("hand-over", napMillis)
      const { signedBy } = yield* ctx
        .waitForEvent(Delivered, { timeoutMillis: 60_000 })
        .pipe(
          Effect.catchTag("EventTimeout", () => Effect.fail(new AgentFailure({ message: "not delivered" }))),
        )
      yield* count(`${ctx.submissionId}:done`)
      return `${label} signed by ${signedBy}`
    }),
})

/** A poll that waits for a person before it settles, so an occurrence can outlast its interval. */
export const pollAgent = define({
  id: "poll",
  version: "1",
  input: Schema.Struct({ source: Schema.String }),
  output: Schema.String,
  program: ({ source }, ctx) =>
    Effect.gen(function* () {
      yield* count(`poll:${source}`)
      yield* ctx.requestApproval({ source })
      return `polled ${source}`
    }),
})

/** Waits for a person, then pays once. */
export const payoutAgent = define({
  id: "payout",
  version: "1",
  input: Schema.Struct({ amount: Schema.Int }),
  output: Schema.String,
  program: ({ amount }, ctx) =>
    Effect.gen(function* () {
      yield* ctx.requestApproval({ amount })
      return yield* ctx.uncertainStep("pay", Effect.as(count(`${ctx.submissionId}:pay`), `paid ${amount}`))
    }),
})

/** Starts a payout in the Object `payoutObject` and waits for it. */
export const managerAgent = define({
  id: "manager",
  version: "1",
  input: Schema.Struct({ amount: Schema.Int, payoutObject: Schema.String }),
  output: Schema.String,
  program: ({ amount, payoutObject }, ctx) =>
    Effect.gen(function* () {
      const child = yield* ctx.startChild({
        agent: payoutAgent,
        input: { amount },
        thread: { objectName: payoutObject, threadId: "payouts" },
      })
      const settled = yield* ctx.awaitChild(child)
      yield* count(`${ctx.submissionId}:after-child`)
      return settled.outcome
    }),
})

/** Waits for a person, then reads the follow-ups that joined it and answers their total size. */
export const collectorAgent = define({
  id: "collector",
  version: "1",
  input: Schema.Struct({ blob: Schema.String }),
  output: Schema.Int,
  acceptsJoinedInput: true,
  program: ({ blob }, ctx) =>
    Effect.gen(function* () {
      yield* ctx.requestApproval({ size: blob.length })
      const joined = yield* ctx.receiveJoined
      return joined.reduce((total, input) => total + input.blob.length, blob.length)
    }),
})

/** Starts a poll with a `size`-character source in the Object `childObject` and reports it. */
export const bigParentAgent = define({
  id: "big-parent",
  version: "1",
  input: Schema.Struct({ size: Schema.Int, childObject: Schema.String }),
  output: Schema.String,
  program: ({ size, childObject }, ctx) =>
    Effect.gen(function* () {
      const child = yield* ctx.startChild({
        agent: pollAgent,
        input: { source: "s".repeat(size) },
        thread: { objectName: childObject, threadId: "polls" },
      })
      const settled = yield* ctx.awaitChild(child)
      return settled.outcome === "failed" ? `failed:${settled.refused ?? settled.error}` : settled.outcome
    }),
})

/** Asks for an approval whose payload carries `size` characters (a draft to review). */
export const draftReviewAgent = define({
  id: "draft-review",
  version: "1",
  input: Schema.Struct({ size: Schema.Int }),
  output: Schema.String,
  program: ({ size }, ctx) => Effect.as(ctx.requestApproval({ draft: "d".repeat(size) }), "reviewed"),
})

/** Fails with a message of `size` characters (a provider's error body), as a failure or a defect. */
export const loudFailureAgent = define({
  id: "loud-failure",
  version: "1",
  input: Schema.Struct({ size: Schema.Int, defect: Schema.Boolean }),
  output: Schema.String,
  program: ({ size, defect }) =>
    defect
      ? Effect.die(new Error("e".repeat(size)))
      : Effect.fail(new AgentFailure({ message: "e".repeat(size) })),
})

/** Counts one tick of its source and settles at once. */
export const tickAgent = define({
  id: "tick",
  version: "1",
  input: Schema.Struct({ source: Schema.String }),
  output: Schema.Int,
  program: ({ source }) => count(`tick:${source}`),
})

/**
 * Makes one call named by `size` characters (or by `name`): a step, a sleep, an uncertain step or
 * an event wait.
 */
export const longNameAgent = define({
  id: "long-name",
  version: "1",
  input: Schema.Struct({
    size: Schema.Int,
    call: Schema.Literals(["step", "sleep", "uncertain", "wait"]),
    name: Schema.optionalKey(Schema.String),
  }),
  output: Schema.String,
  program: ({ size, call, name: given }, ctx) => {
    const name = given ?? "n".repeat(size)
    switch (call) {
      case "step":
        return ctx.step(name, Effect.succeed("stepped"))
      case "sleep":
        return Effect.as(ctx.sleep(name, 10), "slept")
      case "uncertain":
        return ctx.uncertainStep(name, Effect.succeed("done"))
      case "wait":
        return Effect.as(
          Effect.catch(ctx.waitForEvent(name, Schema.String, { timeoutMillis: 10 }), () => Effect.void),
          "waited",
        )
    }
  },
})

/** The signature a courier sends from outside. */
export const Signed = DurableDeferred.make("signed", { success: Schema.String })

/** Packs (a flaky activity, retried), waits on a durable clock, then for the signature. */
export const ShipmentWorkflow = Workflow.make("Shipment", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  idempotencyKey: ({ id }) => id,
})

const shipmentHandler = ShipmentWorkflow.toLayer((_payload, executionId) =>
  Effect.gen(function* () {
    const packed = yield* Activity.make({
      name: "pack",
      success: Schema.String,
      error: Schema.String,
      execute: Effect.flatMap(count(`${executionId}:pack`), (n) =>
        n === 1 ? Effect.fail("jammed") : Effect.succeed(`packed-${n}`),
      ),
    }).pipe(Activity.retry({ times: 3 }))
    yield* DurableClock.sleep({ name: "cool-down", duration: 300, inMemoryThreshold: 0 })
    const signedBy = yield* DurableDeferred.await(Signed)
    yield* Activity.make({ name: "close", execute: Effect.asVoid(count(`${executionId}:close`)) })
    return `${packed} signed by ${signedBy}`
  }),
)

export class UserThreadObject extends ThreadObject.make(
  Layer.mergeAll(
    ThreadObject.layer([
      ThreadWorkflowEngine.agent(ShipmentWorkflow),
      parcelAgent,
      pollAgent,
      payoutAgent,
      managerAgent,
      collectorAgent,
      bigParentAgent,
      draftReviewAgent,
      loudFailureAgent,
      tickAgent,
      longNameAgent,
    ]),
    shipmentHandler.pipe(Layer.provideMerge(ThreadWorkflowEngine.layer)),
  ),
  {
    namespaceBinding: "THREADS_USER",
    config: { retention: { settledForMillis: 1_000, windowMillis: 1_000 } },
  },
) {}
