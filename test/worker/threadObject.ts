/**
 * A `ThreadObject` for the entry-point suites: small agents, and failpoints a test installs
 * per Object id (a switchboard in the test isolate, so it survives `abortAllDurableObjects`).
 */
import { Duration, Effect, Option, Schema, Scheduler } from "effect"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { AgentFailure, define, type AgentDefinition } from "../../src/core/AgentRegistration.ts"
import * as Testing from "../../src/Testing.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"
import { Unauthorized } from "../../src/ThreadClient.ts"
import { ObjectScheduler } from "../../src/internal/turns.ts"
import { ratioAgent, replayWaitAgent } from "./edgeAgents.ts"

/** How many times each agent effect ran, by Object id and effect name. */
export const effectRuns = new Map<string, number>()
const ran = (key: string) => Effect.sync(() => effectRuns.set(key, (effectRuns.get(key) ?? 0) + 1))

/** Echoes its text after one journaled step. */
export const echoAgent = define({
  id: "echo",
  version: "1",
  input: Schema.Struct({ text: Schema.String, fail: Schema.optionalKey(Schema.Boolean) }),
  output: Schema.String,
  program: ({ text, fail }, ctx) =>
    Effect.gen(function* () {
      const echoed = yield* ctx.step("echo", Effect.as(ran(`${ctx.submissionId}:echo`), `echo: ${text}`))
      if (fail === true) return yield* new AgentFailure({ message: `refused ${text}` })
      return echoed
    }),
})

/** Charges once, in an uncertain step (never run twice), and reports the charge. */
export const chargeAgent = define({
  id: "charge",
  version: "1",
  input: Schema.Struct({ amount: Schema.Int }),
  output: Schema.String,
  program: ({ amount }, ctx) =>
    ctx.uncertainStep("charge", Effect.as(ran(`${ctx.submissionId}:charge`), `charged ${amount}`)),
})

/** Charges once, in an uncertain step whose result (the amount charged) its Schema checks. */
export const strictChargeAgent = define({
  id: "strict-charge",
  version: "1",
  input: Schema.Struct({ amount: Schema.Int }),
  output: Schema.Int,
  program: ({ amount }, ctx) =>
    ctx.uncertainStep("charge", Effect.as(ran(`${ctx.submissionId}:charge`), amount), {
      result: Schema.Int,
    }),
})

/** Waits for an approval, then reports the reviewer's note. */
export const reviewAgent = define({
  id: "review",
  version: "1",
  input: Schema.Struct({ draft: Schema.String }),
  output: Schema.String,
  program: ({ draft }, ctx) =>
    Effect.gen(function* () {
      const decision = yield* ctx.requestApproval({ draft })
      return `${draft} approved (${decision.note ?? "no note"})`
    }),
})

/** Asks a manager, then finance, to approve; reports both notes. */
export const twoApprovalsAgent = define({
  id: "two-approvals",
  version: "1",
  input: Schema.Struct({ draft: Schema.String }),
  output: Schema.String,
  program: ({ draft }, ctx) =>
    Effect.gen(function* () {
      const manager = yield* ctx.requestApproval({ draft, by: "manager" })
      const finance = yield* ctx.requestApproval({ draft, by: "finance" })
      return `${draft}: ${manager.note ?? "-"}, ${finance.note ?? "-"}`
    }),
})

/** Sleeps `millis` durably, then echoes its text. */
export const napAgent = define({
  id: "nap",
  version: "1",
  input: Schema.Struct({ text: Schema.String, millis: Schema.Int }),
  output: Schema.String,
  program: ({ text, millis }, ctx) => Effect.as(ctx.sleep("nap", millis), `rested: ${text}`),
})

/** Sleeps forever, which a durable sleep refuses (no alarm holds it). */
export const foreverAgent = define({
  id: "forever",
  version: "1",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  program: ({ text }, ctx) => Effect.as(ctx.sleep("forever", Duration.infinity), text),
})

/** Checks a claim in another Object and answers whether it is genuine. */
export const verifierAgent = define({
  id: "verifier",
  version: "1",
  input: Schema.Struct({ claim: Schema.String }),
  output: Schema.Struct({ genuine: Schema.Boolean }),
  program: ({ claim }, ctx) =>
    Effect.map(
      ctx.step(
        "verify",
        Effect.sync(() => !claim.includes("fake")),
      ),
      (genuine) => ({ genuine }),
    ),
})

/** Delegates each claim to a verifier in the Object `input.verifierObject`, then reports. */
export const delegatorAgent = define({
  id: "delegator",
  version: "1",
  input: Schema.Struct({ claims: Schema.Array(Schema.String), verifierObject: Schema.String }),
  output: Schema.Array(Schema.String),
  program: ({ claims, verifierObject }, ctx) =>
    Effect.gen(function* () {
      const handles = yield* Effect.forEach(claims, (claim, index) =>
        ctx.startChild({
          agent: verifierAgent,
          input: { claim },
          thread: { objectName: verifierObject, threadId: `verify-${index}` },
        }),
      )
      return yield* Effect.forEach(handles, (handle) =>
        Effect.map(ctx.awaitChild(handle), (settled) =>
          settled.outcome === "completed" ? String(settled.output.genuine) : settled.outcome,
        ),
      )
    }),
})

/** Has its claim checked by a verifier started under a key of its own choosing, then reports. */
export const keyedDelegatorAgent = define({
  id: "keyed-delegator",
  version: "1",
  input: Schema.Struct({ claim: Schema.String, childKey: Schema.String, verifierObject: Schema.String }),
  output: Schema.String,
  program: ({ claim, childKey, verifierObject }, ctx) =>
    Effect.gen(function* () {
      const handle = yield* ctx.startChild({
        agent: verifierAgent,
        input: { claim },
        thread: { objectName: verifierObject, threadId: "verify-keyed" },
        idempotencyKey: childKey,
      })
      const settled = yield* ctx.awaitChild(handle)
      return settled.outcome === "completed" ? String(settled.output.genuine) : settled.outcome
    }),
})

/** Waits for an approval, then adds the joined inputs to its own. */
export const tallyAgent = define({
  id: "tally",
  version: "1",
  input: Schema.Struct({ n: Schema.Int }),
  output: Schema.Int,
  acceptsJoinedInput: true,
  program: ({ n }, ctx) =>
    Effect.gen(function* () {
      yield* ctx.requestApproval({ n })
      const joined = yield* ctx.receiveJoined
      return joined.reduce((total, input) => total + input.n, n)
    }),
})

/** Asks a reviewer in the Object `reviewerObject` of the other namespace, and reports its answer. */
export const escalatorAgent = define({
  id: "escalator",
  version: "1",
  input: Schema.Struct({ draft: Schema.String, reviewerObject: Schema.String }),
  output: Schema.String,
  program: ({ draft, reviewerObject }, ctx) =>
    Effect.gen(function* () {
      const review = yield* ctx.startChild({
        agent: reviewAgent,
        input: { draft },
        thread: { namespace: "THREADS_OTHER", objectName: reviewerObject, threadId: "reviews" },
      })
      const settled = yield* ctx.awaitChild(review)
      return settled.outcome === "completed" ? settled.output : settled.outcome
    }),
})

/** A parcel's shipment, declared by the courier: its payload is decoded when it is sent. */
export const Shipped = AgentEvent.make("shipped", Schema.Struct({ tracking: Schema.String }))

/**
 * Waits for an approval, then for `shipped` (or, with `wait: "first"`, for `shipped` at once),
 * and answers with the tracking number.
 */
export const courierAgent = define({
  id: "courier",
  version: "1",
  input: Schema.Struct({ wait: Schema.Literals(["after-approval", "first"]) }),
  output: Schema.String,
  events: [Shipped],
  program: ({ wait }, ctx) =>
    Effect.gen(function* () {
      if (wait === "after-approval") yield* ctx.requestApproval({ ready: true })
      return (yield* ctx.waitForEvent(Shipped)).tracking
    }),
})

/** Asks for an approval that times out after `timeoutMillis`, and answers how the request ended. */
export const deadlineAgent = define({
  id: "deadline",
  version: "1",
  input: Schema.Struct({ timeoutMillis: Schema.Int }),
  output: Schema.String,
  program: ({ timeoutMillis }, ctx) =>
    ctx.requestApproval({ deadline: true }, { timeoutMillis }).pipe(
      Effect.map((decision) => `approved (${decision.note ?? "no note"})`),
      Effect.catchTag("ApprovalTimeout", (timeout) => Effect.succeed(`timed out at call ${timeout.step}`)),
    ),
})

/** Takes `count` `tick` events (numbers, decoded at the wait) and answers them in the order taken. */
export const tickerAgent = define({
  id: "ticker",
  version: "1",
  input: Schema.Struct({ count: Schema.Int }),
  output: Schema.Array(Schema.Number),
  program: ({ count }, ctx) =>
    Effect.forEach(Array.from({ length: count }), () =>
      ctx
        .waitForEvent("tick", Schema.Number)
        .pipe(Effect.mapError((invalid) => new AgentFailure({ message: invalid.message }))),
    ),
})

/** Sleeps for a duration a program computed badly (`NaN`, or a string that is no duration). */
export const badSleepAgent = define({
  id: "bad-sleep",
  version: "1",
  input: Schema.Struct({ mode: Schema.Literals(["nan", "unparsable"]) }),
  output: Schema.String,
  program: ({ mode }, ctx) =>
    Effect.as(ctx.sleep(mode, mode === "nan" ? Number.NaN : ("soon" as Duration.Input)), mode),
})

/** Answers whether its step ran on the Object's own scheduler. */
export const schedulerAgent = define({
  id: "scheduler",
  version: "1",
  input: Schema.Struct({}),
  output: Schema.Boolean,
  program: (_input, ctx) =>
    ctx.step(
      "scheduler",
      Effect.withFiber((fiber) =>
        Effect.succeed(fiber.getRef(Scheduler.Scheduler) instanceof ObjectScheduler),
      ),
    ),
})

/** Registered nowhere: a child of it is refused by every Thread. */
export const ghostAgent = define({
  id: "ghost",
  version: "1",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  program: ({ text }) => Effect.succeed(text),
})

/** Dies (a defect, not a typed failure) in its program. */
export const dierAgent = define({
  id: "dier",
  version: "1",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  program: ({ text }) => Effect.die(new Error(`died on ${text}`)),
})

/** Answers `n` characters: an output far larger than its input. */
export const inflateAgent = define({
  id: "inflate",
  version: "1",
  input: Schema.Struct({ n: Schema.Int }),
  output: Schema.String,
  program: ({ n }) => Effect.succeed("x".repeat(n)),
})

/** Runs `steps` steps, each answering `size` characters: a Submission of many large records. */
export const bulkyAgent = define({
  id: "bulky",
  version: "1",
  input: Schema.Struct({ steps: Schema.Int, size: Schema.Int }),
  output: Schema.Int,
  program: ({ steps, size }, ctx) =>
    Effect.as(
      Effect.forEach(
        Array.from({ length: steps }, (_, i) => i),
        (i) => ctx.step(`bulk-${i}`, Effect.succeed("x".repeat(size))),
      ),
      steps,
    ),
})

/** A child `spawnerAgent` may start, by agent id. */
const SpawnSpec = Schema.Struct({
  agentId: Schema.String,
  input: Schema.Json,
  /** Replaces `input` with `{ text }` of this many characters: an input larger than the parent's. */
  textLength: Schema.optionalKey(Schema.Int),
  objectName: Schema.String,
  threadId: Schema.String,
  namespace: Schema.optionalKey(Schema.String),
  idempotencyKey: Schema.optionalKey(Schema.String),
})

const spawnable = (agentId: string): AgentDefinition<unknown, unknown> =>
  (
    ({
      echo: echoAgent,
      review: reviewAgent,
      verifier: verifierAgent,
      nap: napAgent,
      ghost: ghostAgent,
      dier: dierAgent,
      spawner: spawnerAgent,
      tally: tallyAgent,
      inflate: inflateAgent,
    }) as Record<string, AgentDefinition<any, any>>
  )[agentId] as AgentDefinition<unknown, unknown>

/**
 * Starts every child of `children`, awaits each (unless `await` is false), and reports each
 * settlement as `outcome:detail[:refused]`; `fail` fails it after that.
 */
export const spawnerAgent: AgentDefinition<
  {
    readonly children: ReadonlyArray<typeof SpawnSpec.Type>
    readonly await?: boolean
    readonly fail?: boolean
    readonly repeat?: number
    readonly awaitTimeoutMillis?: number
  },
  ReadonlyArray<string>
> = define({
  id: "spawner",
  version: "1",
  input: Schema.Struct({
    children: Schema.Array(SpawnSpec),
    await: Schema.optionalKey(Schema.Boolean),
    fail: Schema.optionalKey(Schema.Boolean),
    repeat: Schema.optionalKey(Schema.Int),
    awaitTimeoutMillis: Schema.optionalKey(Schema.Int),
  }),
  output: Schema.Array(Schema.String),
  program: ({ children: specs, await: awaits, fail, repeat, awaitTimeoutMillis }, ctx) =>
    Effect.gen(function* () {
      // `repeat` starts the first child that many times, in Threads `<threadId><index>`.
      const children =
        repeat === undefined
          ? specs
          : Array.from({ length: repeat }, (_, index) => ({
              ...specs[0]!,
              threadId: `${specs[0]!.threadId}${index}`,
            }))
      const handles = yield* Effect.forEach(children, (child) =>
        ctx.startChild({
          agent: spawnable(child.agentId),
          input: child.textLength === undefined ? child.input : { text: "x".repeat(child.textLength) },
          thread: {
            objectName: child.objectName,
            threadId: child.threadId,
            ...(child.namespace === undefined ? {} : { namespace: child.namespace }),
          },
          ...(child.idempotencyKey === undefined ? {} : { idempotencyKey: child.idempotencyKey }),
        }),
      )
      const reports =
        awaits === false
          ? handles.map(() => "started")
          : yield* Effect.forEach(handles, (handle) =>
              Effect.map(
                awaitTimeoutMillis === undefined
                  ? Effect.map(ctx.awaitChild(handle), Option.some)
                  : Effect.timeoutOption(ctx.awaitChild(handle), awaitTimeoutMillis),
                (waited): string => {
                  if (Option.isNone(waited)) return "timed-out"
                  const settled = waited.value
                  return settled.outcome === "completed"
                    ? `completed:${JSON.stringify(settled.output)}`
                    : settled.outcome === "failed"
                      ? `failed:${settled.error}${settled.refused === undefined ? "" : `:${settled.refused}`}`
                      : "aborted"
                },
              ),
            )
      if (fail === true) {
        yield* ran(`${ctx.submissionId}:fail`)
        return yield* new AgentFailure({ message: `failed after ${reports.join(",")}` })
      }
      return reports
    }),
})

/**
 * Runs one step that takes `millis` of real time (an uncertain one with `uncertain`), counting
 * its start and its end, then a short step (none when `last`).
 */
export const slowAgent = define({
  id: "slow",
  version: "1",
  input: Schema.Struct({
    millis: Schema.Int,
    uncertain: Schema.optionalKey(Schema.Boolean),
    last: Schema.optionalKey(Schema.Boolean),
  }),
  output: Schema.String,
  program: ({ millis, uncertain, last }, ctx) =>
    Effect.gen(function* () {
      const work = ran(`${ctx.submissionId}:slow-start`).pipe(
        Effect.andThen(Effect.sleep(millis)),
        Effect.andThen(ran(`${ctx.submissionId}:slow-end`)),
        Effect.as("slept"),
      )
      const result =
        uncertain === true ? yield* ctx.uncertainStep("slow", work) : yield* ctx.step("slow", work)
      if (last !== true) yield* ctx.step("after", Effect.as(ran(`${ctx.submissionId}:after`), "after"))
      return result
    }),
})

/** Waits for an approval, reads its joined inputs, waits for a second approval, then sums them. */
export const gatherAgent = define({
  id: "gather",
  version: "1",
  input: Schema.Struct({ n: Schema.Int }),
  output: Schema.Int,
  acceptsJoinedInput: true,
  program: ({ n }, ctx) =>
    Effect.gen(function* () {
      yield* ctx.requestApproval({ n, stage: "open" })
      const joined = yield* ctx.receiveJoined
      yield* ctx.requestApproval({ n, stage: "close" })
      return joined.reduce((total, input) => total + input.n, n)
    }),
})

/** Failpoints a test installs on one Object by its id. */
export const switchboard = Testing.makeSwitchboard()

export class TestThreadObject extends ThreadObject.make(
  ThreadObject.layer([
    echoAgent,
    chargeAgent,
    strictChargeAgent,
    reviewAgent,
    twoApprovalsAgent,
    verifierAgent,
    delegatorAgent,
    keyedDelegatorAgent,
    tallyAgent,
    escalatorAgent,
    napAgent,
    foreverAgent,
    courierAgent,
    replayWaitAgent,
    deadlineAgent,
    tickerAgent,
    badSleepAgent,
    schedulerAgent,
    spawnerAgent,
    dierAgent,
    inflateAgent,
    ratioAgent,
    slowAgent,
    gatherAgent,
  ]),
  {
    namespaceBinding: "THREADS_TEST",
    // A head whose Attempts kill the Object 3 times in a row is set aside (sharedObjectPoison.test.ts).
    config: { limits: { maxInputBytes: 4_096, maxQueueDepthPerLane: 3 }, maxObjectKillsPerHead: 3 },
    failpoints: switchboard,
  },
) {}

/** The operator's token of `AuthorizedThreadObject`. */
export const operatorToken = "operator-token-for-tests"

/** Every check `AuthorizedThreadObject` ran, in order: the call, its kind, the Thread and who asked. */
export const authorizationLog: Array<{
  readonly entryPoint: string
  readonly kind: ThreadObject.CallKind
  readonly threadId: string
  readonly subject: string | undefined
}> = []

const refuse = (entryPoint: string, message: string) => Effect.fail(new Unauthorized({ entryPoint, message }))

/**
 * The same agents behind a policy over every call: operator actions need the bearer token, and a
 * Thread named `tenant:<subject>:…` is its tenant's alone (an operator may read it too), and the
 * Object-wide calls (reads of every Thread, the Object's schedules) are the operator's.
 */
export class AuthorizedThreadObject extends ThreadObject.make(ThreadObject.layer([echoAgent, reviewAgent]), {
  authorization: ({ caller, entryPoint, kind, threadId, objectWide }) => {
    authorizationLog.push({ entryPoint, kind, threadId, subject: caller?.subject })
    const operator = caller?.credential === operatorToken
    // The Object-wide calls see (or change) every tenant's, whichever Thread the caller named;
    // the wake hint changes nothing but when a pass runs.
    if (objectWide && entryPoint !== "wake" && !operator)
      return refuse(entryPoint, "the whole Object's calls are the operator's")
    if (kind === "operate") {
      if (operator) return Effect.void
      return refuse(
        entryPoint,
        caller === undefined ? "no caller identity" : `${caller.subject} may not ${entryPoint}`,
      )
    }
    const tenant = /^tenant:([^:]+):/.exec(threadId)?.[1]
    if (tenant === undefined || operator || caller?.subject === tenant) return Effect.void
    return refuse(entryPoint, `${threadId} belongs to another tenant`)
  },
}) {}

/** A `ThreadObject` class of another namespace binding, hosting reviewers for the first one. */
export class OtherThreadObject extends ThreadObject.make(ThreadObject.layer([reviewAgent]), {
  namespaceBinding: "THREADS_OTHER",
}) {}

/**
 * The delegating agents with a one-second retention: what a parent and its children in other
 * Objects of the namespace store under a steady load.
 */
export class RetainedThreadObject extends ThreadObject.make(
  ThreadObject.layer([echoAgent, verifierAgent, delegatorAgent]),
  {
    namespaceBinding: "THREADS_RETAINED",
    config: { retention: { settledForMillis: 1_000, windowMillis: 1_000 } },
  },
) {}

/** A `ThreadObject` whose `namespaceBinding` names no binding of the Worker: it cannot start. */
export class MisnamedThreadObject extends ThreadObject.make(ThreadObject.layer([echoAgent]), {
  namespaceBinding: "THREADS",
}) {}
