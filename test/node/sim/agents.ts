/**
 * The agents of the simulation and the external world they act on. Plain steps take virtual
 * time; the uncertain charge is an external effect that must never run twice; the reviewer
 * waits for an approval. Each completed output is a pure function of the input and the
 * recorded resolutions, so the end of a run can check every settlement against it.
 */
import { Context, Effect, Schema } from "effect"
import type { AgentContext } from "../../../src/core/AgentContext.ts"
import {
  AgentFailure,
  type AnyAgentDefinition,
  define,
  withDigest,
} from "../../../src/core/AgentRegistration.ts"
import type { HistoryEntry } from "../../../src/core/ThreadHistory.ts"

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

/** The agent kinds a lane can be given. */
export type AgentKind = "stepper" | "charger" | "reviewer"

/** A deployment: which code the next incarnation runs. */
export type Deployment = "full" | "without-reviewer" | "charger-changed"

const registered: Record<Deployment, ReadonlyArray<AnyAgentDefinition>> = {
  full: [stepper, charger, reviewer],
  "without-reviewer": [stepper, charger],
  "charger-changed": [stepper, withDigest(charger, "changed-charger-digest"), reviewer],
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
  input: AgentInput,
  entries: ReadonlyArray<HistoryEntry>,
): { readonly outcome: "completed"; readonly output: unknown } | { readonly outcome: "failed" } => {
  const denied = entries.some((entry) => entry._tag === "ApprovalResolved" && !entry.approved)
  const approval = entries.find((entry) => entry._tag === "ApprovalResolved")
  const resolution = entries.find((entry) => entry._tag === "UnknownOutcomeResolved")
  switch (agentId) {
    case "stepper": {
      if (input.fail) return { outcome: "failed" }
      let total = 0
      for (let index = 0; index < input.steps; index++) total += input.n + index
      return { outcome: "completed", output: total }
    }
    case "charger": {
      if (resolution?.resolution._tag === "Failed") return { outcome: "failed" }
      const charge =
        resolution?.resolution._tag === "Succeeded" ? resolution.resolution.value : `charged-${input.n}`
      return { outcome: "completed", output: { charge } }
    }
    default: {
      if (denied) return { outcome: "failed" }
      const note = approval?._tag === "ApprovalResolved" ? approval.note : undefined
      return { outcome: "completed", output: `draft-${input.n}:${note ?? "approved"}` }
    }
  }
}
