import { describe, expect, it } from "@effect/vitest"
import type { RecoveryDecision } from "../../src/core/DurableAgentRuntime.ts"
import { AgentId, AttemptId, OwnershipToken } from "../../src/core/Identifiers.ts"
import {
  classifyRecovery,
  dispositionOf,
  recoveryNeedsHistory,
} from "../../src/core/internal/runtime/recovery/recoveryClassify.ts"
import { EMPTY_JOURNAL, readJournal } from "../../src/core/internal/runtime/shared/journal.ts"
import { Ownership, type SubmissionState } from "../../src/core/SubmissionLedger.ts"
import type { HistoryEntry } from "../../src/core/ThreadHistory.ts"

const now = 10_000

const row = (
  state: SubmissionState,
  options: { readonly epoch?: number; readonly leaseExpiresAt?: number; readonly abort?: boolean } = {},
) => ({
  state,
  producerEpoch: options.epoch ?? 1,
  abortRequested: options.abort ?? false,
  ...(options.leaseExpiresAt === undefined
    ? {}
    : {
        ownership: new Ownership({
          attemptId: AttemptId.make("attempt"),
          ownershipToken: OwnershipToken.make("token"),
          leaseExpiresAt: options.leaseExpiresAt,
        }),
      }),
})

const accepted: HistoryEntry = {
  _tag: "SubmissionAccepted",
  agentId: AgentId.make("agent"),
  agentDigest: "digest",
  input: null,
}
const started: ReadonlyArray<HistoryEntry> = [
  accepted,
  { _tag: "InputApplied" },
  { _tag: "StepCompleted", step: 0, name: "prepare", result: 1 },
  { _tag: "UncertainStepStarted", step: 1, name: "charge" },
]
const requested: ReadonlyArray<HistoryEntry> = [
  accepted,
  { _tag: "InputApplied" },
  { _tag: "ApprovalRequested", step: 0, payload: { draft: "x" } },
]

const classify = (
  snapshot: ReturnType<typeof row>,
  entries: ReadonlyArray<HistoryEntry> = [],
): RecoveryDecision => classifyRecovery(snapshot, now, readJournal(entries))

describe("Recovery classification", () => {
  it("completes the materialization of a row admitted without its acceptance record", () => {
    expect(classify(row("admitted", { epoch: 0 }))).toEqual({ _tag: "CompleteMaterialization" })
  })

  it("repairs the readiness of an admitted row whose acceptance is recorded", () => {
    expect(classify(row("admitted", { epoch: 0 }), [accepted])).toEqual({ _tag: "RepairReadiness" })
  })

  it("defers a never-claimed ready row as ApplyInput and a claimed one as ResumeFromTurnBoundary", () => {
    expect(classify(row("ready", { epoch: 0 }))).toEqual({ _tag: "ApplyInput" })
    expect(classify(row("ready", { epoch: 3 }))).toEqual({ _tag: "ResumeFromTurnBoundary" })
  })

  it("leaves a live owner alone, even with an accepted abort", () => {
    expect(classify(row("running", { leaseExpiresAt: now + 1 }))).toEqual({ _tag: "NoAction" })
    expect(classify(row("running", { leaseExpiresAt: now + 1, abort: true }))).toEqual({ _tag: "NoAction" })
  })

  it("releases an expired lease, or marks unknown when an uncertain step was in flight", () => {
    expect(classify(row("running", { leaseExpiresAt: now }), started.slice(0, 3))).toEqual({
      _tag: "ReleaseExpiredLease",
    })
    expect(classify(row("running", { leaseExpiresAt: now }), started)).toEqual({
      _tag: "MarkUnknown",
      step: 1,
    })
  })

  it("treats an uncertain step with a result or a resolution as finished", () => {
    const finished: ReadonlyArray<HistoryEntry> = [
      ...started,
      { _tag: "StepCompleted", step: 1, name: "charge", result: "ok" },
    ]
    expect(classify(row("running", { leaseExpiresAt: now - 1 }), finished)).toEqual({
      _tag: "ReleaseExpiredLease",
    })
    const resolved: ReadonlyArray<HistoryEntry> = [
      ...started,
      { _tag: "UnknownOutcomeRecorded", step: 1, name: "charge" },
      { _tag: "UnknownOutcomeResolved", step: 1, resolution: { _tag: "Failed", message: "no" } },
    ]
    expect(classify(row("unknown"), resolved)).toEqual({ _tag: "ApplyUnknownResolutions" })
  })

  it("awaits the resolution of a recorded Unknown Outcome and records a missing one", () => {
    const recorded: ReadonlyArray<HistoryEntry> = [
      ...started,
      { _tag: "UnknownOutcomeRecorded", step: 1, name: "charge" },
    ]
    expect(classify(row("unknown"), recorded)).toEqual({ _tag: "AwaitUnknownResolution", step: 1 })
    expect(classify(row("unknown"), started)).toEqual({ _tag: "MarkUnknown", step: 1 })
  })

  it("awaits an approval decision, and resumes once the decision is recorded", () => {
    expect(classify(row("suspended"), requested)).toEqual({ _tag: "AwaitApprovalDecision" })
    expect(
      classify(row("suspended"), [...requested, { _tag: "ApprovalResolved", step: 0, approved: true }]),
    ).toEqual({ _tag: "ResumeSuspended" })
  })

  it("appends a reserved settlement, or finalizes the ledger when the history holds it", () => {
    expect(classify(row("terminalizing"), requested)).toEqual({ _tag: "AppendReservedSettlement" })
    expect(
      classify(row("terminalizing", { abort: true }), [
        ...requested,
        { _tag: "SubmissionSettled", outcome: "aborted" },
      ]),
    ).toEqual({ _tag: "FinalizeLedgerFromHistory" })
  })

  it("settles an accepted abort in every other nonterminal state", () => {
    for (const snapshot of [
      row("admitted", { abort: true, epoch: 0 }),
      row("ready", { abort: true }),
      row("running", { abort: true, leaseExpiresAt: now }),
      row("suspended", { abort: true }),
      row("unknown", { abort: true }),
    ]) {
      expect(classify(snapshot, started), snapshot.state).toEqual({ _tag: "SettleAborted" })
    }
  })

  it("reads history only for the states whose decision depends on it", () => {
    expect(recoveryNeedsHistory(row("ready"), now)).toBe(false)
    expect(recoveryNeedsHistory(row("running", { leaseExpiresAt: now + 1 }), now)).toBe(false)
    expect(recoveryNeedsHistory(row("suspended", { abort: true }), now)).toBe(false)
    expect(recoveryNeedsHistory(row("running", { leaseExpiresAt: now }), now)).toBe(true)
    for (const state of ["admitted", "suspended", "unknown", "terminalizing"] as const) {
      expect(recoveryNeedsHistory(row(state), now), state).toBe(true)
    }
    // Without a history read the classification of those rows must not depend on one.
    expect(classifyRecovery(row("ready"), now, EMPTY_JOURNAL)).toEqual({ _tag: "ResumeFromTurnBoundary" })
  })

  it("maps each decision to the disposition the maintenance pass reads", () => {
    const cases: ReadonlyArray<readonly [RecoveryDecision, string]> = [
      [{ _tag: "CompleteMaterialization" }, "repaired"],
      [{ _tag: "RepairReadiness" }, "repaired"],
      [{ _tag: "ReleaseExpiredLease" }, "repaired"],
      [{ _tag: "AppendReservedSettlement" }, "repaired"],
      [{ _tag: "FinalizeLedgerFromHistory" }, "repaired"],
      [{ _tag: "SettleAborted" }, "repaired"],
      [{ _tag: "ApplyUnknownResolutions" }, "repaired"],
      [{ _tag: "ResumeSuspended" }, "repaired"],
      [{ _tag: "ApplyInput" }, "deferred"],
      [{ _tag: "ResumeFromTurnBoundary" }, "deferred"],
      [{ _tag: "MarkUnknown", step: 1 }, "unknown"],
      [{ _tag: "AwaitUnknownResolution", step: 1 }, "unknown"],
      [{ _tag: "AwaitApprovalDecision" }, "none"],
      [{ _tag: "ResumeWaitingParent" }, "repaired"],
      [{ _tag: "RevertJoining" }, "repaired"],
      [{ _tag: "RepairJoinMarker" }, "repaired"],
      [{ _tag: "SettleJoinedWithHost" }, "repaired"],
      [{ _tag: "AwaitChildSettlement", child: 1 }, "none"],
      [{ _tag: "AwaitHostSettlement" }, "none"],
      [{ _tag: "NoAction" }, "none"],
    ]
    for (const [decision, disposition] of cases)
      expect(dispositionOf(decision), decision._tag).toBe(disposition)
  })

  const childStarted: HistoryEntry = {
    _tag: "ChildStarted",
    step: 1,
    target: { namespace: "THREADS", objectName: "o" },
    threadId: "kids" as never,
    agentId: AgentId.make("kid"),
    agentDigest: "d",
    idempotencyKey: "parent:parent:1" as never,
    input: null,
  }
  const waiting: ReadonlyArray<HistoryEntry> = [
    accepted,
    { _tag: "InputApplied" },
    childStarted,
    { _tag: "ChildAwaited", step: 2, child: 1 },
  ]
  const childSettled: HistoryEntry = { _tag: "ChildSettled", step: 1, outcome: "completed", output: 2 }

  it("waits for a child's settlement, and resumes the parent once it is recorded", () => {
    expect(classify(row("suspended"), waiting)).toEqual({ _tag: "AwaitChildSettlement", child: 1 })
    // A settlement resumes its parent in the transaction that records it; a row that shows it
    // recorded but still suspended (a damaged one, or a release that did not) is resumed.
    expect(classify(row("suspended"), [...waiting, childSettled])).toEqual({ _tag: "ResumeWaitingParent" })
    // The latest wait decides: an approval requested after the child's answer.
    expect(
      classify(row("suspended"), [
        ...waiting,
        childSettled,
        { _tag: "ApprovalRequested", step: 3, payload: null },
      ]),
    ).toEqual({ _tag: "AwaitApprovalDecision" })
  })

  it("waits, repairs, reverts or settles a join by what its host did", () => {
    const decide = (state: "joining" | "joined", host?: { state: SubmissionState; readsThis: boolean }) =>
      classifyRecovery(row(state), now, EMPTY_JOURNAL, host === undefined ? {} : { host })
    expect(decide("joining", { state: "running", readsThis: false })).toEqual({ _tag: "AwaitHostSettlement" })
    expect(decide("joining", { state: "suspended", readsThis: true })).toEqual({ _tag: "RepairJoinMarker" })
    expect(decide("joining", { state: "settled", readsThis: true })).toEqual({ _tag: "RepairJoinMarker" })
    for (const ended of ["terminalizing", "settled"] as const)
      expect(decide("joining", { state: ended, readsThis: false })).toEqual({ _tag: "RevertJoining" })
    expect(decide("joining")).toEqual({ _tag: "RevertJoining" })
    expect(decide("joined", { state: "running", readsThis: true })).toEqual({ _tag: "AwaitHostSettlement" })
    expect(decide("joined", { state: "settled", readsThis: true })).toEqual({ _tag: "SettleJoinedWithHost" })
    // An accepted abort settles a join like any other Submission.
    expect(classifyRecovery(row("joined", { abort: true }), now, EMPTY_JOURNAL)).toEqual({
      _tag: "SettleAborted",
    })
    for (const state of ["joining", "joined"] as const)
      expect(recoveryNeedsHistory(row(state), now)).toBe(false)
  })
})
