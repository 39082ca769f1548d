/**
 * The agents of the simulation and the external world they act on. Plain steps take virtual
 * time; the uncertain charge is an external effect that must never run twice; the reviewer
 * waits for an approval. Each completed output is a pure function of the input and the
 * recorded resolutions, so the end of a run can check every settlement against it.
 */
import { Clock, Context, Effect, Schema } from "effect"
import type { AgentContext } from "../../../src/core/AgentContext.ts"
import {
  AgentFailure,
  type AgentDefinition,
  type AnyAgentDefinition,
  define,
  withDigest,
} from "../../../src/core/AgentRegistration.ts"
import type { HistoryEntry } from "../../../src/core/ThreadHistory.ts"
import * as AgentEvent from "../../../src/core/AgentEvent.ts"

/** What a submitted input asks for. */
export const AgentInput = Schema.Struct({
  n: Schema.Int,
  steps: Schema.Int,
  sleep: Schema.Int,
  fail: Schema.Boolean,
})
export type AgentInput = typeof AgentInput.Type

/** External effects: runs per `submissionId:step`, and a guard that a dead incarnation acts no more. */
export interface ExternalWorld {
  readonly perform: (key: string, uncertain: boolean) => Effect.Effect<void>
}

/**
 * The external world of the running simulation, read by the agents at run time, so that their
 * definitions (and contract digests, which are costly) are built once per process.
 */
export const SimExternalWorld = Context.Reference<ExternalWorld>(
  "@effect-agent/platform-cloudflare/test/sim/ExternalWorld",
  {
    defaultValue: () => ({ perform: () => Effect.void }),
  },
)

const perform = (key: string, uncertain: boolean) =>
  Effect.gen(function* () {
    const world = yield* SimExternalWorld
    yield* world.perform(key, uncertain)
  })

const plain = (ctx: AgentContext, name: string) => perform(`${ctx.submissionId}:${name}`, false)

const stepper = define({
  id: "stepper",
  version: "1",
  input: AgentInput,
  output: Schema.Int,
  program: (input, ctx) =>
    Effect.gen(function* () {
      let total = 0
      for (let index = 0; index < input.steps; index++) {
        total += yield* ctx.step(
          `s${index}`,
          plain(ctx, `s${index}`).pipe(Effect.andThen(Effect.sleep(input.sleep)), Effect.as(input.n + index)),
        )
      }
      if (input.fail) return yield* new AgentFailure({ message: "the input asks the stepper to fail" })
      return total
    }),
})

const charger = define({
  id: "charger",
  version: "1",
  input: AgentInput,
  output: Schema.Struct({ charge: Schema.String }),
  program: (input, ctx) =>
    Effect.gen(function* () {
      yield* ctx.step("prepare", plain(ctx, "prepare").pipe(Effect.as(input.n)))
      const charge = yield* ctx.uncertainStep(
        "charge",
        perform(`${ctx.submissionId}:charge`, true).pipe(
          Effect.andThen(Effect.sleep(input.sleep)),
          Effect.as(`charged-${input.n}`),
        ),
        { result: Schema.String },
      )
      yield* ctx.step("after", plain(ctx, "after").pipe(Effect.as(charge.length)))
      return { charge }
    }),
})

const reviewer = define({
  id: "reviewer",
  version: "1",
  input: AgentInput,
  output: Schema.String,
  program: (input, ctx) =>
    Effect.gen(function* () {
      const draft = yield* ctx.step("draft", plain(ctx, "draft").pipe(Effect.as(`draft-${input.n}`)))
      const decision = yield* ctx.requestApproval({ draft })
      return yield* ctx.step(
        "publish",
        plain(ctx, "publish").pipe(Effect.as(`${draft}:${decision.note ?? "approved"}`)),
      )
    }),
})

/** A conversation: it asks for an approval, then adds up the follow-ups that joined it. */
const chat = define({
  id: "chat",
  version: "1",
  input: AgentInput,
  output: Schema.Int,
  acceptsJoinedInput: true,
  program: (input, ctx) =>
    Effect.gen(function* () {
      yield* ctx.step("hello", plain(ctx, "hello").pipe(Effect.as(input.n)))
      yield* ctx.requestApproval({ n: input.n })
      const joined = yield* ctx.receiveJoined
      return joined.reduce((total, item) => total + item.n, input.n)
    }),
})

/** A parcel for the waiter; sent by the driver with ids drawn from a small pool. */
export const Parcel = AgentEvent.make("parcel", Schema.Struct({ n: Schema.Int }))

/**
 * After a step, waits for `steps` parcels and lists what each carried: stable waits, or with
 * `sleep` above 0 waits that time out after `sleep` × 10 ms (-1 in the list).
 */
const waiter = define({
  id: "waiter",
  version: "1",
  input: AgentInput,
  output: Schema.Array(Schema.Int),
  events: [Parcel],
  program: (input, ctx) =>
    Effect.gen(function* () {
      yield* ctx.step("ready", plain(ctx, "ready").pipe(Effect.as(input.n)))
      const got: Array<number> = []
      for (let index = 0; index < input.steps; index++) {
        got.push(
          input.sleep === 0
            ? (yield* ctx.waitForEvent(Parcel)).n
            : yield* ctx.waitForEvent(Parcel, { timeoutMillis: input.sleep * 10 }).pipe(
                Effect.map((parcel) => parcel.n),
                Effect.catchTag("EventTimeout", () => Effect.succeed(-1)),
              ),
        )
      }
      return got
    }),
})

/** A step, a durable sleep of `sleep` × 10 ms (up to 12 s), and a step after it. */
const napper = define({
  id: "napper",
  version: "1",
  input: AgentInput,
  output: Schema.Int,
  program: (input, ctx) =>
    Effect.gen(function* () {
      const before = yield* ctx.step("before", plain(ctx, "before").pipe(Effect.as(input.n)))
      yield* ctx.sleep("nap", input.sleep * 10)
      return yield* ctx.step("after", plain(ctx, "after").pipe(Effect.as(before + input.steps)))
    }),
})

/**
 * A step retried after durable backoffs: an attempt fails unless the virtual clock and the
 * input agree (so a run may succeed early, late or never); it gives up after three attempts.
 */
const retrier = define({
  id: "retrier",
  version: "1",
  input: AgentInput,
  output: Schema.String,
  program: (input, ctx) =>
    ctx
      .step(
        "flaky",
        Effect.gen(function* () {
          yield* plain(ctx, "flaky")
          const now = yield* Clock.currentTimeMillis
          if (input.fail || (now + input.n) % 3 !== 0)
            return yield* new AgentFailure({ message: "the service is down" })
          return `ok-${input.n}`
        }),
        { retry: { attempts: 3, backoff: { baseMillis: 200, jitter: 0.5 } } },
      )
      .pipe(Effect.catchTag("AgentFailure", () => Effect.succeed("gave-up"))),
})

/** What a delegator asks of its child. */
export const DelegateInput = Schema.Struct({
  n: Schema.Int,
  child: Schema.Literals(["stepper", "charger", "reviewer"]),
  object: Schema.String,
  lane: Schema.String,
  sleep: Schema.Int,
})
export type DelegateInput = typeof DelegateInput.Type

const childAgents = { stepper, charger, reviewer } as const

/** How a delegator reports its child's settlement. */
export const childReport = (settled: {
  readonly outcome: string
  readonly output?: unknown
  readonly refused?: string
}): string =>
  settled.outcome === "completed"
    ? `completed:${JSON.stringify(settled.output)}`
    : `${settled.outcome}${settled.refused === undefined ? "" : `(${settled.refused})`}`

/** Starts a child in the Object and lane its input names, does a step, then awaits it. */
const delegator = define({
  id: "delegator",
  version: "1",
  input: DelegateInput,
  output: Schema.String,
  program: (input, ctx) =>
    Effect.gen(function* () {
      const handle = yield* ctx.startChild({
        agent: childAgents[input.child] as AgentDefinition<AgentInput, unknown>,
        input: { n: input.n, steps: 1, sleep: input.sleep, fail: false },
        thread: { objectName: input.object, threadId: input.lane },
      })
      yield* ctx.step("meanwhile", plain(ctx, "meanwhile").pipe(Effect.as(input.n)))
      const settled = yield* ctx.awaitChild(handle)
      return childReport(
        settled.outcome === "completed" ? { outcome: "completed", output: settled.output } : settled,
      )
    }),
})

/** The agent kinds a lane can be given. */
export type AgentKind =
  "stepper" | "charger" | "reviewer" | "chat" | "delegator" | "napper" | "retrier" | "waiter"

/** A deployment: which code the next incarnation runs. */
export type Deployment = "full" | "without-reviewer" | "charger-changed"

const registered: Record<Deployment, ReadonlyArray<AnyAgentDefinition>> = {
  full: [stepper, charger, reviewer, chat, delegator, napper, retrier, waiter],
  "without-reviewer": [stepper, charger, chat, delegator, napper, retrier, waiter],
  "charger-changed": [
    stepper,
    withDigest(charger, "changed-charger-digest"),
    reviewer,
    chat,
    delegator,
    napper,
    retrier,
    waiter,
  ],
}

/** The agents a deployment registers. */
export const deploymentAgents = (deployment: Deployment): ReadonlyArray<AnyAgentDefinition> =>
  registered[deployment]

/** Whether `deployment` admits new work for `kind` under the digest every deployment shares. */
export const admitsSharedDigest = (deployment: Deployment, kind: AgentKind): boolean =>
  !(deployment === "charger-changed" && kind === "charger") &&
  !(deployment === "without-reviewer" && kind === "reviewer")

/** The settlement a Submission must reach, given its input and its recorded resolutions. */
export const expectedOutcome = (
  agentId: string,
  input: unknown,
  entries: ReadonlyArray<HistoryEntry>,
): { readonly outcome: "completed"; readonly output: unknown } | { readonly outcome: "failed" } => {
  const denied = entries.some((entry) => entry._tag === "ApprovalResolved" && !entry.approved)
  const approval = entries.find((entry) => entry._tag === "ApprovalResolved")
  const resolution = entries.find((entry) => entry._tag === "UnknownOutcomeResolved")
  if (agentId === "delegator") {
    const settled = entries.find((entry) => entry._tag === "ChildSettled")
    return settled === undefined
      ? { outcome: "failed" }
      : { outcome: "completed", output: childReport(settled) }
  }
  if (agentId === "waiter") {
    // The parcels its waits took (-1 for a wait that timed out), in the order of the waits.
    const payloads = new Map<string, unknown>()
    for (const entry of entries)
      if (entry._tag === "EventReceived") payloads.set(entry.eventId, entry.payload)
    const ended = entries.flatMap((entry) =>
      entry._tag === "EventConsumed"
        ? [[entry.step, (payloads.get(entry.eventId) as { readonly n: number }).n] as const]
        : entry._tag === "EventWaitTimedOut"
          ? [[entry.step, -1] as const]
          : [],
    )
    return {
      outcome: "completed",
      output: ended.toSorted((a, b) => a[0] - b[0]).map(([, n]) => n),
    }
  }
  if (agentId === "napper") {
    const { n, steps } = input as AgentInput
    return { outcome: "completed", output: n + steps }
  }
  if (agentId === "retrier") {
    // The step's own record says whether an attempt succeeded.
    const done = entries.find((entry) => entry._tag === "StepCompleted" && entry.step === 0)
    return { outcome: "completed", output: done?._tag === "StepCompleted" ? done.result : "gave-up" }
  }
  if (agentId === "chat") {
    if (denied) return { outcome: "failed" }
    const joined = entries.find((entry) => entry._tag === "InputJoined")
    const extra =
      joined?._tag === "InputJoined" ? joined.joined.map((item) => (item.input as AgentInput).n) : []
    return { outcome: "completed", output: extra.reduce((total, n) => total + n, (input as AgentInput).n) }
  }
  return expectedOf(agentId, input as AgentInput, { denied, approval, resolution })
}

const expectedOf = (
  agentId: string,
  input: AgentInput,
  recorded: {
    readonly denied: boolean
    readonly approval: HistoryEntry | undefined
    readonly resolution: HistoryEntry | undefined
  },
): { readonly outcome: "completed"; readonly output: unknown } | { readonly outcome: "failed" } => {
  const { denied, approval, resolution } = recorded
  switch (agentId) {
    case "stepper": {
      if (input.fail) return { outcome: "failed" }
      let total = 0
      for (let index = 0; index < input.steps; index++) total += input.n + index
      return { outcome: "completed", output: total }
    }
    case "charger": {
      const resolved = resolution?._tag === "UnknownOutcomeResolved" ? resolution.resolution : undefined
      if (resolved?._tag === "Failed") return { outcome: "failed" }
      const charge = resolved?._tag === "Succeeded" ? resolved.value : `charged-${input.n}`
      return { outcome: "completed", output: { charge } }
    }
    default: {
      if (denied) return { outcome: "failed" }
      const note = approval?._tag === "ApprovalResolved" ? approval.note : undefined
      return { outcome: "completed", output: `draft-${input.n}:${note ?? "approved"}` }
    }
  }
}
