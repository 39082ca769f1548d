/**
 * Agents and a local delivery loop for the subagent and join suites. Parent and child Threads
 * live in one Object here, so the loop plays the host: it reads the Object's own outbox and
 * hands each message to the same runtime, then records the reply, as the delivery driver does
 * across Objects.
 */
import { Clock, Effect, Schema } from "effect"
import type { ChildSettlement } from "../../src/core/AgentContext.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import type { RuntimeFailpointHandler } from "../../src/core/RuntimeFailpoint.ts"
import { ran, type Runs } from "./runtimeAgents.ts"
import { type Incarnation, outboxOf, runtimeOf } from "./runtimeHarness.ts"

/** The address of the Object the suites run in. */
export const self = { namespace: "THREADS", objectId: "f".repeat(64) } as const

const Input = Schema.Struct({ n: Schema.Int })

/** A child that doubles its input after one step; a negative input makes it fail. */
export const doubler = (runs: Runs) =>
  define({
    id: "doubler",
    version: "1",
    input: Input,
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const doubled = yield* ctx.step("double", Effect.as(ran(runs, `double-${n}`), n * 2))
        if (n < 0) return yield* new AgentFailure({ message: `cannot double ${n}` })
        return doubled
      }),
  })

/** A child that waits for an approval before it answers. */
export const approvingChild = define({
  id: "approving-child",
  version: "1",
  input: Input,
  output: Schema.Int,
  program: ({ n }, ctx) => Effect.as(ctx.requestApproval({ n }), n),
})

/** A registered-nowhere child contract: its admission is refused. */
export const unregisteredChild = define({
  id: "unregistered",
  version: "1",
  input: Input,
  output: Schema.Int,
  program: ({ n }) => Effect.succeed(n),
})

type Child = ReturnType<typeof doubler> | typeof approvingChild | typeof unregisteredChild

/** What `parentOf` answers by default: the child's output, or its outcome and refusal. */
const summary = (settled: ChildSettlement<number>) =>
  settled.outcome === "completed"
    ? `child said ${settled.output}`
    : `child ${settled.outcome}${settled.outcome === "failed" && settled.refused !== undefined ? ` (${settled.refused})` : ""}`

/** Starts a child of `agent` in `lane`, awaits it, and answers what it saw (`report`). */
export const parentOf = (
  id: string,
  child: Child,
  lane: string,
  report: (settled: ChildSettlement<number>) => string = summary,
) =>
  define({
    id,
    version: "1",
    input: Input,
    output: Schema.String,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const handle = yield* ctx.startChild({
          agent: child,
          input: { n },
          thread: { objectName: "local", threadId: lane },
        })
        return report(yield* ctx.awaitChild(handle))
      }),
  })

/** A parent that answers its child's settlement as JSON. */
export const reporter = (id: string, child: Child, lane: string) => parentOf(id, child, lane, JSON.stringify)

/** Two children at once in two lanes, awaited in reverse order. */
export const fanOut = (runs: Runs) =>
  define({
    id: "fan-out",
    version: "1",
    input: Input,
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const child = doubler(runs)
        const first = yield* ctx.startChild({
          agent: child,
          input: { n },
          thread: { objectName: "local", threadId: "x" },
        })
        const second = yield* ctx.startChild({
          agent: child,
          input: { n: n + 1 },
          thread: { objectName: "local", threadId: "y" },
        })
        const b = yield* ctx.awaitChild(second)
        const a = yield* ctx.awaitChild(first)
        if (a.outcome !== "completed" || b.outcome !== "completed")
          return yield* new AgentFailure({ message: "a child did not complete" })
        return a.output + b.output
      }),
  })

/**
 * A conversation agent that takes joined input: it asks for an approval, then reads what joined
 * meanwhile and adds it up.
 */
export const conversation = (runs: Runs) =>
  define({
    id: "conversation",
    version: "1",
    input: Input,
    output: Schema.Int,
    acceptsJoinedInput: true,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        yield* ctx.step("greet", Effect.as(ran(runs, "greet"), n))
        yield* ctx.requestApproval({ n })
        const joined = yield* ctx.receiveJoined
        return yield* ctx.step(
          "sum",
          Effect.as(
            ran(runs, "sum"),
            joined.reduce((total, input) => total + input.n, n),
          ),
        )
      }),
  })

/**
 * Delivers every due message of the Object to itself until none is left; `hit` is the host's
 * failpoint between a reply and its record.
 */
export const deliverLocally = (incarnation: Incarnation, hit?: RuntimeFailpointHandler) =>
  Effect.gen(function* () {
    const runtime = runtimeOf(incarnation)
    const outbox = outboxOf(incarnation)
    let delivered = 0
    for (let round = 0; round < 20; round++) {
      const now = yield* Clock.currentTimeMillis
      const due = yield* outbox.due(now, 100)
      if (due.length === 0) return delivered
      for (const row of due) {
        const reply = yield* runtime.receive(row.message, row.messageId)
        if (hit !== undefined) yield* hit("delivery:after-reply")
        yield* runtime.recordDelivery(row, { _tag: "Replied", reply })
        delivered++
      }
    }
    return delivered
  })
