/**
 * A kill (or a typed failure) at every failpoint hit of a journey through subagents and joined
 * input, one at a time, then convergence through fresh incarnations: every Submission settles
 * exactly once with the outcome its story implies, no call is journaled twice, and each
 * started child's settlement is applied to its parent at most once.
 *
 * The journey, in one Object (the test delivers its outbox to itself, as the host's driver
 * does across Objects): a family parent starts a child that runs and one whose admission is
 * refused, awaits both, waits for an approval while a follow-up joins it, reads the join and
 * finishes; an abandoning parent is aborted while it waits for a child that waits for an
 * approval, so the abort reaches the child; a silent host settles without reading its join,
 * which then runs as an ordinary Submission.
 */
import { expect } from "@effect/vitest"
import { env } from "cloudflare:test"
import { Effect, Option, Schema, Stream } from "effect"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import { AgentId, IdempotencyKey, type SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import {
  RUNTIME_FAILPOINT_LOCATIONS,
  type RuntimeFailpointHandler,
  type RuntimeFailpointLocation,
} from "../../src/core/RuntimeFailpoint.ts"
import type { SubmissionSnapshot } from "../../src/core/SubmissionLedger.ts"
import {
  childOrJoin,
  type CrashingOps,
  crashMatrix,
  ignoreNotPending,
  type Run,
  untilDone,
} from "../support/crashMatrix.ts"
import { approvingChild, deliverLocally, doubler, self, unregisteredChild } from "./childrenFixtures.ts"
import { ran, type Runs } from "./runtimeAgents.ts"
import { entriesOf, noYield } from "./runtimeFixtures.ts"
import { type Incarnation, ledgerOf, runtimeOf } from "./runtimeHarness.ts"

const Input = Schema.Struct({ n: Schema.Int })

const family = (runs: Runs) =>
  define({
    id: "family",
    version: "1",
    input: Input,
    output: Schema.Int,
    acceptsJoinedInput: true,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const a = yield* ctx.step("a", Effect.as(ran(runs, "a"), n))
        const kid = yield* ctx.startChild({
          agent: doubler(runs),
          input: { n: a },
          thread: { objectName: "local", threadId: "kids" },
        })
        const nobody = yield* ctx.startChild({
          agent: unregisteredChild,
          input: { n },
          thread: { objectName: "local", threadId: "nobody" },
        })
        const doubled = yield* ctx.awaitChild(kid)
        const refused = yield* ctx.awaitChild(nobody)
        if (doubled.outcome !== "completed" || refused.outcome !== "failed")
          return yield* new AgentFailure({ message: `unexpected ${doubled.outcome}/${refused.outcome}` })
        yield* ctx.requestApproval({ doubled: doubled.output })
        const joined = yield* ctx.receiveJoined
        return yield* ctx.step(
          "sum",
          Effect.as(
            ran(runs, "sum"),
            joined.reduce((total, input) => total + input.n, doubled.output),
          ),
        )
      }),
  })

const abandoner = define({
  id: "abandoner",
  version: "1",
  input: Input,
  output: Schema.Int,
  program: ({ n }, ctx) =>
    Effect.gen(function* () {
      const held = yield* ctx.startChild({
        agent: approvingChild,
        input: { n },
        thread: { objectName: "local", threadId: "held" },
      })
      const settled = yield* ctx.awaitChild(held)
      return settled.outcome === "completed" ? settled.output : -1
    }),
})

const silent = define({
  id: "silent",
  version: "1",
  input: Input,
  output: Schema.Int,
  acceptsJoinedInput: true,
  program: ({ n }, ctx) => Effect.as(ctx.requestApproval({ n }), n),
})

const lanes = ["p", "q", "s", "kids", "nobody", "held"] as const

const drive = (ops: CrashingOps, failpoint: RuntimeFailpointHandler | undefined) =>
  Effect.gen(function* () {
    const { op } = ops
    const submit = (lane: string, agent: string, key: string, n: number, mode?: "join") =>
      untilDone(op, (incarnation) =>
        runtimeOf(incarnation).submit({
          threadId: ThreadId.make(lane),
          agentId: AgentId.make(agent),
          idempotencyKey: IdempotencyKey.make(key),
          input: { n },
          ...(mode === undefined ? {} : { mode }),
        }),
      )
    const row = (submissionId: SubmissionId) =>
      Effect.map(ledgerOf(ops.current).lookup(submissionId), Option.getOrThrow)
    const awaitsApproval = (snapshot: SubmissionSnapshot) =>
      Effect.map(
        entriesOf(ops.current, snapshot.submissionId),
        (entries) =>
          snapshot.state === "suspended" &&
          entries.some((entry) => entry._tag === "ApprovalRequested") &&
          !entries.some((entry) => entry._tag === "ApprovalResolved"),
      )

    const p = yield* submit("p", "family", "p", 4)
    const q = yield* submit("q", "abandoner", "q", 3)
    const s = yield* submit("s", "silent", "s", 9)
    let follow: SubmissionId | undefined
    let unread: SubmissionId | undefined
    let aborted = false

    for (let round = 0; round < 30; round++) {
      yield* op((incarnation) => runtimeOf(incarnation).runRecovery)
      yield* op((incarnation) => deliverLocally(incarnation, failpoint))
      const rows = yield* Stream.runCollect(ledgerOf(ops.current).scanNonterminal)
      if (rows.length === 0) break
      const pRow = yield* row(p.submissionId)
      if (follow === undefined && (yield* awaitsApproval(pRow)))
        follow = (yield* submit("p", "family", "follow", 100, "join")).submissionId
      const sRow = yield* row(s.submissionId)
      if (unread === undefined && (yield* awaitsApproval(sRow)))
        unread = (yield* submit("s", "silent", "unread", 50, "join")).submissionId
      if (!aborted && (yield* row(q.submissionId)).state === "suspended") {
        aborted = Option.isSome(yield* op((incarnation) => runtimeOf(incarnation).abort(q.submissionId)))
      }
      for (const lane of lanes) {
        const head = Option.getOrUndefined(yield* ledgerOf(ops.current).head(ThreadId.make(lane)))
        if (head === undefined) continue
        if (yield* awaitsApproval(head)) {
          // The held child waits for its abort; every other approval is granted once its join is in.
          const ready = (lane !== "p" || follow !== undefined) && (lane !== "s" || unread !== undefined)
          if (lane !== "held" && ready)
            yield* op((incarnation) =>
              ignoreNotPending(runtimeOf(incarnation).resolveApproval(head.submissionId, { approved: true })),
            )
          continue
        }
        const options = yield* noYield
        yield* op((incarnation) => runtimeOf(incarnation).processThreadHead(ThreadId.make(lane), options))
      }
    }

    const current: Incarnation = ops.current
    const all = [...(yield* ledgerOf(current).scanNonterminal.pipe(Stream.runCollect))]
    const ids = { p, q, s, follow, unread }
    const settlements: Record<string, SubmissionSnapshot["settlement"]> = {}
    const journal: Record<string, ReadonlyArray<string>> = {}
    for (const [name, receipt] of Object.entries(ids)) {
      if (receipt === undefined) continue
      const id = typeof receipt === "string" ? receipt : receipt.submissionId
      settlements[name] = (yield* row(id)).settlement
      journal[name] = (yield* entriesOf(current, id)).map((entry) =>
        "step" in entry ? `${entry._tag}@${entry.step}` : entry._tag,
      )
    }
    return { remaining: all, settlements, journal }
  })

const count = (entries: ReadonlyArray<string>, entry: string) => entries.filter((e) => e === entry).length

/** What every run must end with, whatever was injected. */
const expectStory = (result: Run<Effect.Success<ReturnType<typeof drive>>>, label: string) => {
  expect(result.remaining, label).toEqual([])
  expect(result.settlements["p"], label).toMatchObject({ outcome: "completed", output: 8 + 100 })
  expect(result.settlements["follow"], label).toMatchObject({ outcome: "completed", output: 108 })
  expect(result.settlements["q"]?.outcome, label).toBe("aborted")
  expect(result.settlements["s"], label).toMatchObject({ outcome: "completed", output: 9 })
  // The unread join ran on its own after its host settled.
  expect(result.settlements["unread"], label).toMatchObject({ outcome: "completed", output: 50 })
  expect(result.settlements["unread"]?.host, label).toBeUndefined()
  for (const [name, entries] of Object.entries(result.journal)) {
    expect(count(entries, "SubmissionSettled"), `${label}: ${name} settled once`).toBe(1)
    // No call position is journaled twice, and each child's settlement is applied at most once.
    const positions = entries.filter((entry) => entry.includes("@") && !entry.startsWith("ChildSettled"))
    expect(new Set(positions).size, `${label}: ${name} journal`).toBe(positions.length)
    const settledChildren = entries.filter((entry) => entry.startsWith("ChildSettled"))
    expect(new Set(settledChildren).size, `${label}: ${name} child settlements`).toBe(settledChildren.length)
  }
  expect(count(result.journal["p"] ?? [], "ChildSettled@1"), label).toBe(1)
  expect(count(result.journal["p"] ?? [], "ChildSettled@2"), label).toBe(1)
}

/**
 * The hits each matrix injects at. In memory: every hit. On SQLite (slow: one Object per fault):
 * the first hit of every location and every tenth, unless `CRASH_MATRIX=full` (the soak).
 */
const sample = (
  harness: { readonly label: string },
  hits: ReadonlyArray<RuntimeFailpointLocation>,
): ReadonlyArray<readonly [number, RuntimeFailpointLocation]> => {
  const full = harness.label === "in memory" || env.CRASH_MATRIX === "full"
  const seen = new Set<string>()
  return [...hits.entries()].filter(([offset, location]) => {
    const first = !seen.has(location)
    seen.add(location)
    return full || first || offset % 10 === 0
  })
}

crashMatrix({
  name: "DurableAgentRuntime subagent and join crash matrix",
  incarnation: (runs) => ({
    agents: [family(runs), doubler(runs), abandoner, approvingChild, silent],
    self,
  }),
  drive,
  coverage: {
    test: "hits every subagent and join failpoint location on the journey",
    check: (hits, result) => {
      expect(new Set(hits.filter(childOrJoin))).toEqual(
        new Set(RUNTIME_FAILPOINT_LOCATIONS.filter(childOrJoin)),
      )
      expectStory(result, "no fault")
      expect(result.runs).toEqual({ a: 1, "double-4": 1, sum: 1 })
    },
  },
  choose: sample,
  check: expectStory,
  timeout: 240_000,
})
