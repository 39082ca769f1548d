/** Small builders shared by the runtime suites. */
import { Clock, DateTime, Effect, Option } from "effect"
import { expect } from "@effect/vitest"
import type { DurableAgentRuntime } from "../../src/core/DurableAgentRuntime.ts"
import { AgentId, IdempotencyKey, type SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import type { HistoryEntry } from "../../src/core/ThreadHistory.ts"
import { historyOf, ledgerOf, runtimeOf, type Incarnation } from "./runtimeHarness.ts"

/** A submit request for `agent` in `thread`. */
export const submitTo = (
  incarnation: Incarnation,
  thread: string,
  agent: string,
  key: string,
  input: unknown,
) =>
  runtimeOf(incarnation).submit({
    threadId: ThreadId.make(thread),
    agentId: AgentId.make(agent),
    idempotencyKey: IdempotencyKey.make(key),
    input: input as never,
  })

/** Options of `processThreadHead` that never ask for a yield during a test. */
export const noYield = Effect.map(Clock.currentTimeMillis, (now) => ({
  yieldAfter: DateTime.makeUnsafe(now + 3_600_000),
}))

/** Runs one Attempt at the head of `thread`. */
export const processHead = (incarnation: Incarnation, thread: string) =>
  Effect.flatMap(noYield, (options) =>
    runtimeOf(incarnation).processThreadHead(ThreadId.make(thread), options),
  )

/** Runs one Attempt of a due Submission, claimed in place by the due path. */
export const processDue = (incarnation: Incarnation, submissionId: SubmissionId) =>
  Effect.flatMap(noYield, (options) => runtimeOf(incarnation).attemptDueHead(submissionId, options))

/** Runs one Attempt that must settle, and returns its settlement. */
export const processToSettlement = (incarnation: Incarnation, thread: string) =>
  Effect.map(processHead(incarnation, thread), (settlement) => {
    expect(Option.isSome(settlement)).toBe(true)
    return Option.getOrThrow(settlement)
  })

/** The stored row of a Submission, which must exist. */
export const rowOf = (incarnation: Incarnation, submissionId: SubmissionId) =>
  Effect.map(ledgerOf(incarnation).lookup(submissionId), Option.getOrThrow)

/** The canonical entries of a Submission, oldest first. */
export const entriesOf = (incarnation: Incarnation, submissionId: SubmissionId) =>
  Effect.map(historyOf(incarnation).forSubmission(submissionId), (records) =>
    records.map((record) => record.entry),
  )

/** The tags of a Submission's canonical entries. */
export const tagsOf = (incarnation: Incarnation, submissionId: SubmissionId) =>
  Effect.map(entriesOf(incarnation, submissionId), (entries) =>
    entries.map((entry: HistoryEntry) => entry._tag),
  )

/** The recovery reports of one pass, by Submission: `[decision tag, disposition]`. */
export const recover = (incarnation: Incarnation) =>
  Effect.map(runtimeOf(incarnation).runRecovery, (reports) =>
    Object.fromEntries(
      reports.map((report) => [report.submissionId, [report.decision._tag, report.disposition] as const]),
    ),
  )

/** The runtime service type, for helpers that take one. */
export type Runtime = DurableAgentRuntime["Service"]
