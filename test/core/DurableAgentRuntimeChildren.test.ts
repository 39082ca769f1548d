/**
 * Subagents in the runtime: a parent journals a child's start with its admission message; the
 * child's Thread admits it once, linked to the parent; the child settles with its marker for
 * the parent in one write, and the marker's delivery resumes the parent in one write; a
 * parent waiting for a child is a stable wait; refusals and aborts are values the parent
 * handles.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Ref, Schema } from "effect"
import { define } from "../../src/core/AgentRegistration.ts"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { messageIds, ThreadMessage } from "../../src/core/internal/outbox/model.ts"
import {
  approvingChild,
  deliverLocally,
  doubler,
  fanOut,
  parentOf,
  reporter,
  self,
  unregisteredChild,
} from "./childrenFixtures.ts"
import { makeRuns, runsOf } from "./runtimeAgents.ts"
import { entriesOf, processHead, recover, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { ledgerOf, outboxOf, runtimeHarnesses, runtimeOf, switchableCapacity } from "./runtimeHarness.ts"

for (const harness of runtimeHarnesses) {
  describe(`DurableAgentRuntime children (${harness.label})`, () => {
    it.effect("runs a child in another Thread and hands its settlement to the waiting parent", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const child = doubler(runs)
          const inc = yield* world.incarnation({ agents: [parentOf("parent", child, "kids"), child], self })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 21 })
          // The parent journals the start with its admission message, then parks on the child.
          expect(yield* processHead(inc, "p")).toEqual(Option.none())
          expect((yield* rowOf(inc, parent.submissionId)).state).toBe("suspended")
          expect(yield* tagsOf(inc, parent.submissionId)).toEqual([
            "SubmissionAccepted",
            "InputApplied",
            "ChildStarted",
            "ChildAwaited",
          ])
          expect((yield* recover(inc))[parent.submissionId]).toEqual(["AwaitChildSettlement", "none"])
          expect(yield* deliverLocally(inc)).toBe(1)
          const childRow = Option.getOrThrow(yield* ledgerOf(inc).head(ThreadId.make("kids")))
          expect(childRow.parent).toEqual({
            address: self,
            threadId: "p",
            submissionId: parent.submissionId,
            step: 0,
          })
          expect((yield* entriesOf(inc, childRow.submissionId))[0]).toMatchObject({
            _tag: "SubmissionAccepted",
            parent: { submissionId: parent.submissionId },
          })
          // The child settles in one write with its marker in the outbox, owed until the
          // parent acknowledges it: the outbox, not recovery, holds the obligation.
          const childSettled = yield* processHead(inc, "kids")
          expect(Option.getOrThrow(childSettled).output).toBe(42)
          expect((yield* rowOf(inc, childRow.submissionId)).state).toBe("settled")
          const markerId = messageIds.childSettled(childRow.submissionId)
          expect(Option.getOrThrow(yield* outboxOf(inc).lookup(markerId)).acknowledgedAt).toBeUndefined()
          expect(Option.isSome(yield* outboxOf(inc).nextDue)).toBe(true)
          expect((yield* recover(inc))[childRow.submissionId]).toBeUndefined()
          expect(yield* deliverLocally(inc)).toBe(1)
          expect(Option.getOrThrow(yield* outboxOf(inc).lookup(markerId)).acknowledgedAt).toBeDefined()
          // The settlement made the parent runnable in the same step; it completes with the value.
          expect((yield* rowOf(inc, parent.submissionId)).state).toBe("ready")
          const settled = yield* processHead(inc, "p")
          expect(Option.getOrThrow(settled).output).toBe("child said 42")
          expect(yield* runsOf(runs)).toEqual({ "double-21": 1 })
          expect(yield* outboxOf(inc).nextDue).toEqual(Option.none())
        }),
      ),
    )

    it.effect("admits a child once however often its admission is delivered", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const child = doubler(runs)
          const inc = yield* world.incarnation({ agents: [parentOf("parent", child, "kids"), child], self })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 1 })
          yield* processHead(inc, "p")
          const row = Option.getOrThrow(
            yield* outboxOf(inc).lookup(messageIds.admitChild(parent.submissionId, 0)),
          )
          const runtime = runtimeOf(inc)
          const first = yield* runtime.receive(row.message, row.messageId)
          const second = yield* runtime.receive(row.message, "another-attempt")
          expect(first).toMatchObject({ _tag: "ChildAdmitted", replayed: false })
          expect(second).toEqual({ ...first, replayed: true })
          expect(yield* ledgerOf(inc).countNonterminal(ThreadId.make("kids"))).toBe(1)
        }),
      ),
    )

    it.effect("stops sending an admission whose reply was lost once the child's settlement arrives", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const child = doubler(runs)
          const inc = yield* world.incarnation({ agents: [parentOf("parent", child, "kids"), child], self })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 2 })
          yield* processHead(inc, "p")
          const admissionId = messageIds.admitChild(parent.submissionId, 0)
          const admission = Option.getOrThrow(yield* outboxOf(inc).lookup(admissionId))
          const runtime = runtimeOf(inc)
          // The child is admitted, but its reply never reaches the parent's outbox.
          expect(yield* runtime.receive(admission.message, admission.messageId)).toMatchObject({
            _tag: "ChildAdmitted",
          })
          const childRow = Option.getOrThrow(yield* ledgerOf(inc).head(ThreadId.make("kids")))
          yield* processHead(inc, "kids")
          const marker = Option.getOrThrow(
            yield* outboxOf(inc).lookup(messageIds.childSettled(childRow.submissionId)),
          )
          expect(Option.getOrThrow(yield* outboxOf(inc).lookup(admissionId)).acknowledgedAt).toBeUndefined()
          // The settlement proves the admission arrived: the parent sends it no more, so a child
          // removed by retention is never admitted again by a late retry.
          yield* runtime.receive(marker.message, marker.messageId)
          expect(Option.getOrThrow(yield* outboxOf(inc).lookup(admissionId)).acknowledgedAt).toBeDefined()
          expect((yield* rowOf(inc, parent.submissionId)).state).toBe("ready")
        }),
      ),
    )

    it.effect("applies a child's settlement once, and never to a parent that already settles", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const child = doubler(runs)
          const inc = yield* world.incarnation({ agents: [parentOf("parent", child, "kids"), child], self })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 3 })
          yield* processHead(inc, "p")
          const marker = {
            _tag: "ChildSettled",
            parentSubmissionId: parent.submissionId,
            step: 0,
            childSubmissionId: parent.submissionId,
            outcome: "completed",
            output: 6,
          } as const
          const runtime = runtimeOf(inc)
          expect(yield* runtime.receive(marker, "m1")).toEqual({
            _tag: "ChildSettledRecorded",
            applied: true,
          })
          expect(yield* runtime.receive(marker, "m1")).toEqual({
            _tag: "ChildSettledRecorded",
            applied: false,
          })
          expect(yield* runtime.receive({ ...marker, step: 7 }, "m2")).toEqual({
            _tag: "ChildSettledRecorded",
            applied: false,
          })
          expect(
            (yield* tagsOf(inc, parent.submissionId)).filter((tag) => tag === "ChildSettled"),
          ).toHaveLength(1)
          yield* processHead(inc, "p")
          expect((yield* rowOf(inc, parent.submissionId)).settlement?.output).toBe("child said 6")
          expect(yield* runtime.receive({ ...marker, outcome: "failed" }, "m3")).toEqual({
            _tag: "ChildSettledRecorded",
            applied: false,
          })
        }),
      ),
    )

    it.effect("records a refused admission as the child's failure, which the parent handles", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const inc = yield* world.incarnation({
            agents: [parentOf("parent", unregisteredChild, "kids")],
            self,
          })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 3 })
          yield* processHead(inc, "p")
          yield* deliverLocally(inc)
          const settled = (yield* entriesOf(inc, parent.submissionId)).find(
            (entry) => entry._tag === "ChildSettled",
          )
          expect(settled).toMatchObject({ outcome: "failed", refused: "unknown-agent" })
          expect(yield* ledgerOf(inc).countNonterminal(ThreadId.make("kids"))).toBe(0)
          yield* processHead(inc, "p")
          expect((yield* rowOf(inc, parent.submissionId)).settlement?.output).toBe(
            "child failed (unknown-agent)",
          )
        }),
      ),
    )

    it.effect("refuses a child while the host has no room for new work, and admits it once it has", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const { full, capacity } = yield* switchableCapacity
          const child = doubler(yield* makeRuns)
          const inc = yield* world.incarnation({
            agents: [parentOf("parent", child, "kids"), child],
            self,
            capacity,
          })
          const refused = yield* submitTo(inc, "p", "parent", "p1", { n: 3 })
          // The store fills up between the parent's admission and its child's.
          yield* Ref.set(full, true)
          yield* processHead(inc, "p")
          yield* deliverLocally(inc)
          expect(
            (yield* entriesOf(inc, refused.submissionId)).find((entry) => entry._tag === "ChildSettled"),
          ).toMatchObject({ outcome: "failed", refused: "database-bytes" })
          // Nothing was written in the child's Thread.
          expect(yield* ledgerOf(inc).countNonterminal(ThreadId.make("kids"))).toBe(0)
          // With room again, the next parent's child is admitted and runs.
          yield* Ref.set(full, false)
          yield* submitTo(inc, "q", "parent", "q1", { n: 4 })
          yield* processHead(inc, "q")
          yield* deliverLocally(inc)
          expect(yield* ledgerOf(inc).countNonterminal(ThreadId.make("kids"))).toBe(1)
        }),
      ),
    )

    it.effect("refuses a child in its parent's own Thread, and one whose contract differs", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const child = doubler(runs)
          const inc = yield* world.incarnation({ agents: [parentOf("parent", child, "p"), child], self })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 3 })
          yield* processHead(inc, "p")
          yield* deliverLocally(inc)
          const entries = yield* entriesOf(inc, parent.submissionId)
          expect(entries.find((entry) => entry._tag === "ChildSettled")).toMatchObject({
            refused: "same-thread",
          })
          const changed = yield* world.incarnation({ agents: [doubler(runs)], self })
          const refusal = yield* runtimeOf(changed).receive(
            {
              _tag: "AdmitChild",
              threadId: ThreadId.make("kids"),
              idempotencyKey: "k" as never,
              agentId: child.id,
              agentDigest: "another-digest",
              input: { n: 1 },
              parent: {
                address: self,
                threadId: ThreadId.make("p"),
                submissionId: parent.submissionId,
                step: 0,
              },
            },
            "admit-with-other-digest",
          )
          expect(refusal).toMatchObject({ _tag: "ChildRefused", reason: "digest-mismatch" })
        }),
      ),
    )

    it.effect("hands a child's failure and a child's own abort to its parent as values", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const failing = doubler(runs)
          const inc = yield* world.incarnation({
            agents: [
              reporter("fails", failing, "f"),
              reporter("stopped", approvingChild, "s"),
              failing,
              approvingChild,
            ],
            self,
          })
          const doomed = yield* submitTo(inc, "p1", "fails", "p1", { n: -4 })
          const waiting = yield* submitTo(inc, "p2", "stopped", "p2", { n: 4 })
          yield* processHead(inc, "p1")
          yield* processHead(inc, "p2")
          yield* deliverLocally(inc)
          // One child fails on its own; the other is aborted by a client while it waits.
          const failedChild = Option.getOrThrow(yield* ledgerOf(inc).head(ThreadId.make("f")))
          yield* processHead(inc, "f")
          yield* processHead(inc, "s")
          const stopped = Option.getOrThrow(yield* ledgerOf(inc).head(ThreadId.make("s")))
          yield* runtimeOf(inc).abort(stopped.submissionId)
          yield* recover(inc)
          expect(yield* deliverLocally(inc)).toBe(2)
          const failed = Option.getOrThrow(yield* processHead(inc, "p1"))
          const aborted = Option.getOrThrow(yield* processHead(inc, "p2"))
          // Each parent completes: what its child did is a value it handled.
          expect(failed.outcome).toBe("completed")
          expect(JSON.parse(String(failed.output))).toEqual({
            outcome: "failed",
            error: "cannot double -4",
            submissionId: failedChild.submissionId,
          })
          expect(aborted.outcome).toBe("completed")
          expect(JSON.parse(String(aborted.output))).toEqual({
            outcome: "aborted",
            submissionId: stopped.submissionId,
          })
          for (const parent of [doomed, waiting])
            expect((yield* rowOf(inc, parent.submissionId)).state).toBe("settled")
          expect(yield* ledgerOf(inc).countAllNonterminal).toBe(0)
        }),
      ),
    )

    it.effect("runs several children at once and awaits them in any order", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const inc = yield* world.incarnation({ agents: [fanOut(runs), doubler(runs)], self })
          const parent = yield* submitTo(inc, "p", "fan-out", "p1", { n: 5 })
          yield* processHead(inc, "p")
          expect(yield* deliverLocally(inc)).toBe(2)
          yield* processHead(inc, "x")
          yield* processHead(inc, "y")
          yield* deliverLocally(inc)
          // The first await parked on the second child; both settled, so it runs to the end.
          yield* processHead(inc, "p")
          expect((yield* rowOf(inc, parent.submissionId)).settlement?.output).toBe(10 + 12)
        }),
      ),
    )

    it.effect("aborts the unsettled children of an aborted parent, after their admission", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const inc = yield* world.incarnation({
            agents: [parentOf("parent", approvingChild, "kids"), approvingChild],
            self,
          })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 3 })
          yield* processHead(inc, "p")
          yield* runtimeOf(inc).abort(parent.submissionId)
          expect((yield* recover(inc))[parent.submissionId]).toEqual(["SettleAborted", "repaired"])
          // The abort waits for the admission: it is not even due yet.
          const abort = Option.getOrThrow(
            yield* outboxOf(inc).lookup(messageIds.abortChild(parent.submissionId, 0)),
          )
          expect(abort.dependsOn).toBe(messageIds.admitChild(parent.submissionId, 0))
          expect(yield* deliverLocally(inc)).toBe(2)
          const child = Option.getOrThrow(yield* ledgerOf(inc).head(ThreadId.make("kids")))
          expect(child.abortRequested).toBe(true)
          yield* processHead(inc, "kids")
          expect((yield* rowOf(inc, child.submissionId)).settlement?.outcome).toBe("aborted")
          // Its marker reaches a parent that has settled: acknowledged, not applied.
          yield* deliverLocally(inc)
          expect((yield* rowOf(inc, child.submissionId)).state).toBe("settled")
          expect(yield* tagsOf(inc, parent.submissionId)).not.toContain("ChildSettled")
          expect(
            yield* runtimeOf(inc).receive(
              {
                _tag: "AbortChild",
                threadId: ThreadId.make("kids"),
                idempotencyKey: "unknown" as never,
              },
              "abort-unknown",
            ),
          ).toEqual({ _tag: "ChildAbortRecorded", known: false })
        }),
      ),
    )

    it.effect("never aborts a Submission of the key that refused an aborted parent's admission", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          // A parent that starts its child under a key another caller already holds.
          const keyed = define({
            id: "keyed-parent",
            version: "1",
            input: Schema.Struct({ n: Schema.Int }),
            output: Schema.String,
            program: ({ n }, ctx) =>
              Effect.gen(function* () {
                const handle = yield* ctx.startChild({
                  agent: approvingChild,
                  input: { n },
                  thread: { objectName: "local", threadId: "kids" },
                  idempotencyKey: "shared",
                })
                return JSON.stringify(yield* ctx.awaitChild(handle))
              }),
          })
          const inc = yield* world.incarnation({ agents: [keyed, approvingChild], self })
          // Someone else's Submission holds the key, parked on its approval.
          const other = yield* submitTo(inc, "kids", "approving-child", "shared", { n: 1 })
          yield* processHead(inc, "kids")
          const parent = yield* submitTo(inc, "p", "keyed-parent", "p1", { n: 3 })
          yield* processHead(inc, "p")
          // The parent is aborted before its admission is answered.
          yield* runtimeOf(inc).abort(parent.submissionId)
          yield* recover(inc)
          expect((yield* rowOf(inc, parent.submissionId)).settlement?.outcome).toBe("aborted")
          // The admission is refused (the key is not this parent's child): its abort names no
          // child of this parent, and the other caller's Submission runs on.
          yield* deliverLocally(inc)
          expect((yield* rowOf(inc, other.submissionId)).abortRequested).not.toBe(true)
          yield* runtimeOf(inc).resolveApproval(other.submissionId, { approved: true })
          yield* processHead(inc, "kids")
          expect((yield* rowOf(inc, other.submissionId)).settlement?.outcome).toBe("completed")
        }),
      ),
    )

    it.effect("refuses a late duplicate of a refused admission, so a refused child never runs", () =>
      harness.run(
        (world) =>
          Effect.gen(function* () {
            const runs = yield* makeRuns
            const child = doubler(runs)
            const inc = yield* world.incarnation({ agents: [parentOf("parent", child, "kids"), child], self })
            // The child lane is full: the admission is refused and the parent told so.
            const blocker = yield* submitTo(inc, "kids", "doubler", "blocker", { n: 1 })
            const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 3 })
            yield* processHead(inc, "p")
            const row = Option.getOrThrow(
              yield* outboxOf(inc).lookup(messageIds.admitChild(parent.submissionId, 0)),
            )
            const refused = yield* runtimeOf(inc).receive(row.message, row.messageId)
            expect(refused).toMatchObject({ _tag: "ChildRefused", reason: "queue-depth" })
            // The lane drains; an attempt that outlived its timeout arrives: refused all the same.
            yield* processHead(inc, "kids")
            expect((yield* rowOf(inc, blocker.submissionId)).state).toBe("settled")
            expect(yield* runtimeOf(inc).receive(row.message, row.messageId)).toEqual(refused)
            expect(yield* ledgerOf(inc).countNonterminal(ThreadId.make("kids"))).toBe(0)
          }),
        { limits: { maxQueueDepthPerLane: 1, maxInputBytes: 4_096 } },
      ),
    )

    it.effect(
      "remembers a refusal of an earlier release's admission, which names no Attempt, under its id",
      () =>
        harness.run(
          (world) =>
            Effect.gen(function* () {
              const runs = yield* makeRuns
              const child = doubler(runs)
              const inc = yield* world.incarnation({
                agents: [parentOf("parent", child, "kids"), child],
                self,
              })
              const blocker = yield* submitTo(inc, "kids", "doubler", "blocker", { n: 1 })
              const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 3 })
              yield* processHead(inc, "p")
              const row = Option.getOrThrow(
                yield* outboxOf(inc).lookup(messageIds.admitChild(parent.submissionId, 0)),
              )
              // This release's admission names the parent's Attempt that started the child.
              expect(row.message).toMatchObject({ _tag: "AdmitChild", parentAttemptId: expect.any(String) })
              const { parentAttemptId: _, ...earlier } = row.message as Extract<
                ThreadMessage,
                { readonly _tag: "AdmitChild" }
              >
              const decoded = Schema.decodeUnknownSync(ThreadMessage)(earlier)
              const refused = yield* runtimeOf(inc).receive(decoded, row.messageId)
              expect(refused).toMatchObject({ _tag: "ChildRefused", reason: "queue-depth" })
              yield* processHead(inc, "kids")
              expect((yield* rowOf(inc, blocker.submissionId)).state).toBe("settled")
              expect(yield* runtimeOf(inc).receive(decoded, row.messageId)).toEqual(refused)
              expect(yield* ledgerOf(inc).countNonterminal(ThreadId.make("kids"))).toBe(0)
            }),
          { limits: { maxQueueDepthPerLane: 1, maxInputBytes: 4_096 } },
        ),
    )

    it.effect("fails the call of a parent whose Object has no address for its children", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const runs = yield* makeRuns
          const child = doubler(runs)
          const inc = yield* world.incarnation({ agents: [parentOf("parent", child, "kids"), child] })
          const parent = yield* submitTo(inc, "p", "parent", "p1", { n: 3 })
          const settled = yield* processHead(inc, "p")
          expect(Option.getOrThrow(settled)).toMatchObject({ outcome: "failed" })
          expect(Option.getOrThrow(settled).error).toContain("namespaceBinding")
          expect(yield* outboxOf(inc).nextDue).toEqual(Option.none())
          expect(yield* tagsOf(inc, parent.submissionId)).not.toContain("ChildStarted")
        }),
      ),
    )
  })
}
