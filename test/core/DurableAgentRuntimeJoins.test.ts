/**
 * Joined input: a follow-up Submission admitted into its lane's running head, read by the
 * head's program at a step boundary and settled with it, or reverted to ordinary queued input
 * when the head ends first; refused by name when the head cannot take it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { define } from "../../src/core/AgentRegistration.ts"
import { AgentId, IdempotencyKey, ThreadId } from "../../src/core/Identifiers.ts"
import { conversation } from "./childrenFixtures.ts"
import { makeRuns, reviewed, runsOf } from "./runtimeAgents.ts"
import { entriesOf, processHead, recover, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import {
  ledgerOf,
  runtimeHarnesses,
  runtimeOf,
  type Incarnation,
  type RuntimeWorld,
} from "./runtimeHarness.ts"

const join = (
  incarnation: Incarnation,
  key: string,
  n: number,
  mode: "join" | "join-or-queue" = "join",
  agent = "conversation",
) =>
  runtimeOf(incarnation).submit({
    threadId: ThreadId.make("chat"),
    agentId: AgentId.make(agent),
    idempotencyKey: IdempotencyKey.make(key),
    input: { n },
    mode,
  })

/** A conversation that joins may reach: its host parked on its approval. */
const parkedHost = (world: RuntimeWorld) =>
  Effect.gen(function* () {
    const runs = yield* makeRuns
    const inc = yield* world.incarnation({ agents: [conversation(runs)] })
    const host = yield* submitTo(inc, "chat", "conversation", "h", { n: 1 })
    yield* processHead(inc, "chat")
    return { runs, inc, host }
  })

/** Takes joined input but never reads it: it waits for an approval and answers its own input. */
const silent = define({
  id: "silent",
  version: "1",
  input: Schema.Struct({ n: Schema.Int }),
  output: Schema.Int,
  acceptsJoinedInput: true,
  program: ({ n }, ctx) => Effect.as(ctx.requestApproval({ n }), n),
})

/** Reads joined input twice, each time after an approval. */
const twoRounds = define({
  id: "two-rounds",
  version: "1",
  input: Schema.Struct({ n: Schema.Int }),
  output: Schema.Int,
  acceptsJoinedInput: true,
  program: ({ n }, ctx) =>
    Effect.gen(function* () {
      let total = n
      for (const round of [1, 2]) {
        yield* ctx.requestApproval({ round })
        for (const input of yield* ctx.receiveJoined) total += input.n
      }
      return total
    }),
})

for (const harness of runtimeHarnesses) {
  describe(`DurableAgentRuntime joined input (${harness.label})`, () => {
    it.effect("replays a join whose key was admitted, and its host settled, after it was prepared", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { inc, host } = yield* parkedHost(world)
          const request = {
            threadId: ThreadId.make("chat"),
            agentId: AgentId.make("conversation"),
            idempotencyKey: IdempotencyKey.make("j"),
            input: { n: 10 },
            mode: "join" as const,
          }
          // One caller checks its join; another with the same key is admitted, and the host
          // settles both before the first admits what it checked.
          const prepared = yield* runtimeOf(inc).prepare(request)
          const first = yield* runtimeOf(inc).submit(request)
          yield* runtimeOf(inc).resolveApproval(host.submissionId, { approved: true })
          yield* processHead(inc, "chat")
          expect((yield* rowOf(inc, first.submissionId)).state).toBe("settled")
          expect(yield* runtimeOf(inc).admit(prepared)).toEqual({ ...first, replayed: true })
        }),
      ),
    )

    it.effect("folds a follow-up into the running head, which settles both", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const inc = yield* world.incarnation({ agents: [conversation(runs)] })
          const host = yield* submitTo(inc, "chat", "conversation", "h", { n: 1 })
          yield* processHead(inc, "chat")
          expect((yield* rowOf(inc, host.submissionId)).state).toBe("suspended")
          const first = yield* join(inc, "j1", 10)
          const second = yield* join(inc, "j2", 100)
          expect(first.host).toBe(host.submissionId)
          expect((yield* rowOf(inc, first.submissionId)).state).toBe("joining")
          // A join waits for its host; it is not ordinary queued input.
          expect((yield* recover(inc))[first.submissionId]).toEqual(["AwaitHostSettlement", "none"])
          expect((yield* entriesOf(inc, first.submissionId))[0]).toMatchObject({
            _tag: "SubmissionAccepted",
            host: host.submissionId,
          })
          // The same key replays its receipt.
          expect(yield* join(inc, "j1", 10)).toEqual({ ...first, replayed: true })
          yield* runtimeOf(inc).resolveApproval(host.submissionId, { approved: true })
          const settled = yield* processHead(inc, "chat")
          expect(Option.getOrThrow(settled).output).toBe(111)
          const read = (yield* entriesOf(inc, host.submissionId)).find(
            (entry) => entry._tag === "InputJoined",
          )
          expect(read).toEqual({
            _tag: "InputJoined",
            step: 2,
            joined: [
              { submissionId: first.submissionId, input: { n: 10 } },
              { submissionId: second.submissionId, input: { n: 100 } },
            ],
          })
          for (const joined of [first, second]) {
            const row = yield* rowOf(inc, joined.submissionId)
            expect(row.state).toBe("settled")
            expect(row.settlement).toMatchObject({
              outcome: "completed",
              output: 111,
              host: host.submissionId,
            })
            expect(yield* tagsOf(inc, joined.submissionId)).toEqual([
              "SubmissionAccepted",
              "SubmissionSettled",
            ])
          }
          expect(yield* ledgerOf(inc).countAllNonterminal).toBe(0)
          expect(yield* runsOf(runs)).toEqual({ greet: 1, sum: 1 })
        }),
      ),
    )

    it.effect("reverts a join its host never read: it runs as an ordinary Submission", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { inc, host } = yield* parkedHost(world)
          const late = yield* join(inc, "late", 7)
          yield* runtimeOf(inc).resolveApproval(host.submissionId, { approved: false })
          // The denial settled the host directly; recovery reverts its unread join.
          expect((yield* recover(inc))[late.submissionId]).toEqual(["RevertJoining", "repaired"])
          const reverted = yield* rowOf(inc, late.submissionId)
          expect([reverted.state, reverted.host]).toEqual(["ready", undefined])
          yield* processHead(inc, "chat")
          expect((yield* rowOf(inc, late.submissionId)).state).toBe("suspended")
          yield* runtimeOf(inc).resolveApproval(late.submissionId, { approved: true })
          yield* processHead(inc, "chat")
          expect((yield* rowOf(inc, late.submissionId)).settlement?.output).toBe(7)
        }),
      ),
    )

    it.effect("reverts the joins a host never read when it settles by itself", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const inc = yield* world.incarnation({ agents: [silent] })
          const host = yield* submitTo(inc, "chat", "silent", "h", { n: 1 })
          yield* processHead(inc, "chat")
          const unread = yield* join(inc, "j", 5, "join", "silent")
          expect(unread.host).toBe(host.submissionId)
          yield* runtimeOf(inc).resolveApproval(host.submissionId, { approved: true })
          // The host settles without reading it: the join goes back to the lane as ordinary input.
          expect(Option.getOrThrow(yield* processHead(inc, "chat")).output).toBe(1)
          const reverted = yield* rowOf(inc, unread.submissionId)
          expect([reverted.state, reverted.host]).toEqual(["ready", undefined])
          yield* processHead(inc, "chat")
          expect((yield* rowOf(inc, unread.submissionId)).state).toBe("suspended")
        }),
      ),
    )

    it.effect("settles a read join aborted with its aborted host, and reverts the unread one", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const inc = yield* world.incarnation({ agents: [twoRounds] })
          const host = yield* submitTo(inc, "chat", "two-rounds", "h", { n: 1 })
          yield* processHead(inc, "chat")
          const read = yield* join(inc, "read", 10, "join", "two-rounds")
          yield* runtimeOf(inc).resolveApproval(host.submissionId, { approved: true })
          // The host reads the first join and parks again; a second join arrives meanwhile.
          expect(yield* processHead(inc, "chat")).toEqual(Option.none())
          expect((yield* rowOf(inc, read.submissionId)).state).toBe("joined")
          const unread = yield* join(inc, "unread", 100, "join", "two-rounds")
          yield* runtimeOf(inc).abort(host.submissionId)
          const reports = yield* recover(inc)
          expect(reports[host.submissionId]).toEqual(["SettleAborted", "repaired"])
          expect(reports[read.submissionId]).toEqual(["SettleJoinedWithHost", "repaired"])
          expect(reports[unread.submissionId]).toEqual(["RevertJoining", "repaired"])
          expect((yield* rowOf(inc, read.submissionId)).settlement).toMatchObject({
            outcome: "aborted",
            host: host.submissionId,
          })
          // The input the aborted host never read is not lost: it runs on its own.
          const reverted = yield* rowOf(inc, unread.submissionId)
          expect([reverted.state, reverted.host]).toEqual(["ready", undefined])
          yield* processHead(inc, "chat")
          yield* runtimeOf(inc).resolveApproval(unread.submissionId, { approved: true })
          yield* processHead(inc, "chat")
          yield* runtimeOf(inc).resolveApproval(unread.submissionId, { approved: true })
          expect(Option.getOrThrow(yield* processHead(inc, "chat")).output).toBe(100)
        }),
      ),
    )

    it.effect("settles an aborted follow-up by itself; its host never reads it", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { inc, host } = yield* parkedHost(world)
          const dropped = yield* join(inc, "dropped", 50)
          yield* runtimeOf(inc).abort(dropped.submissionId)
          expect((yield* recover(inc))[dropped.submissionId]).toEqual(["SettleAborted", "repaired"])
          const settled = yield* rowOf(inc, dropped.submissionId)
          expect([settled.settlement?.outcome, settled.settlement?.host]).toEqual(["aborted", undefined])
          yield* runtimeOf(inc).resolveApproval(host.submissionId, { approved: true })
          expect(Option.getOrThrow(yield* processHead(inc, "chat")).output).toBe(1)
          expect(yield* ledgerOf(inc).countAllNonterminal).toBe(0)
        }),
      ),
    )

    it.effect("refuses a join by name when the head cannot take it, and queues it when asked to", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const inc = yield* world.incarnation({ agents: [conversation(runs), reviewed(runs)] })
          const empty = yield* Effect.flip(join(inc, "nothing", 1))
          expect(empty).toMatchObject({ _tag: "JoinRefused", reason: "no-running-head" })
          const other = yield* submitTo(inc, "chat", "reviewed", "r", { n: 1 })
          expect(yield* Effect.flip(join(inc, "other", 1))).toMatchObject({
            _tag: "JoinRefused",
            reason: "other-agent",
          })
          expect(yield* Effect.flip(join(inc, "plain", 1, "join", "reviewed"))).toMatchObject({
            _tag: "JoinRefused",
            reason: "not-joinable",
          })
          yield* runtimeOf(inc).abort(other.submissionId)
          expect(yield* Effect.flip(join(inc, "aborting", 1, "join", "reviewed"))).toMatchObject({
            _tag: "JoinRefused",
          })
          // A refused join wrote nothing; the fallback queues an ordinary Submission.
          expect(yield* ledgerOf(inc).countNonterminal(ThreadId.make("chat"))).toBe(1)
          const queued = yield* join(inc, "queued", 2, "join-or-queue")
          expect(queued.host).toBeUndefined()
          expect((yield* rowOf(inc, queued.submissionId)).state).toBe("ready")
        }),
      ),
    )

    it.effect("fails the read of joined input in an agent that takes none", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const reader = define({
            id: "reader",
            version: "1",
            input: Schema.Struct({ n: Schema.Int }),
            output: Schema.Int,
            program: (_input, ctx) => Effect.map(ctx.receiveJoined, (joined) => joined.length),
          })
          const inc = yield* world.incarnation({ agents: [reader, conversation(runs)] })
          yield* submitTo(inc, "chat", "reader", "r", { n: 1 })
          const settled = Option.getOrThrow(yield* processHead(inc, "chat"))
          expect(settled).toMatchObject({ outcome: "failed", error: "agent reader takes no joined input" })
        }),
      ),
    )
  })
}
