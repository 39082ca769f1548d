import { describe, expect, it } from "@effect/vitest"
import { type RecoveryDecision, RecoveryReport } from "../../src/core/DurableAgentRuntime.ts"
import { SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import type { SubmissionState } from "../../src/core/SubmissionLedger.ts"
import {
  hasAutonomousWork,
  indexReports,
  isStableExternalWait,
} from "../../src/internal/maintenance/classify.ts"

const row = (threadId: string, submissionId: string, state: SubmissionState) => ({
  threadId: ThreadId.make(threadId),
  submissionId: SubmissionId.make(submissionId),
  state,
})

const report = (submissionId: string, decision: RecoveryDecision) =>
  RecoveryReport.make({
    submissionId: SubmissionId.make(submissionId),
    threadId: ThreadId.make("any"),
    decision,
    disposition: "deferred",
  })

const none = indexReports([])

describe("stable external waits", () => {
  it("are approval suspensions and Unknown Outcomes awaiting resolution", () => {
    expect(isStableExternalWait(row("t", "s", "suspended"), none)).toBe(true)
    for (const decision of [
      { _tag: "AwaitUnknownResolution", step: 1 },
      { _tag: "MarkUnknown", step: 1 },
    ] as const) {
      expect(isStableExternalWait(row("t", "s", "unknown"), indexReports([report("s", decision)]))).toBe(true)
    }
    // Recovery does not report a wait nothing resolved: unreported, an Unknown Outcome waits.
    expect(isStableExternalWait(row("t", "s", "unknown"), none)).toBe(true)
    expect(
      isStableExternalWait(
        row("t", "s", "unknown"),
        indexReports([report("s", { _tag: "ApplyUnknownResolutions" })]),
      ),
    ).toBe(false)
  })

  it("include joins waiting for their host", () => {
    expect(isStableExternalWait(row("t", "s", "joined"), none)).toBe(true)
    const waitsForHost = indexReports([report("s", { _tag: "AwaitHostSettlement" })])
    expect(isStableExternalWait(row("t", "s", "joining"), waitsForHost)).toBe(true)
    expect(
      isStableExternalWait(row("t", "s", "joining"), indexReports([report("s", { _tag: "RevertJoining" })])),
    ).toBe(false)
    // A follower behind a join-waiting head is dormant plain input.
    const rows = [row("a", "a1", "joining"), row("a", "a2", "ready")]
    const reports = indexReports([
      report("a1", { _tag: "AwaitHostSettlement" }),
      report("a2", { _tag: "ApplyInput" }),
    ])
    expect(hasAutonomousWork(rows, reports)).toBe(false)
  })

  it("never include an accepted abort or autonomous states", () => {
    const aborted = indexReports([report("s", { _tag: "SettleAborted" })])
    expect(isStableExternalWait(row("t", "s", "suspended"), aborted)).toBe(false)
    expect(isStableExternalWait(row("t", "s", "joined"), aborted)).toBe(false)
    for (const state of ["admitted", "ready", "running", "terminalizing", "settled", "joining"] as const) {
      expect(isStableExternalWait(row("t", "s", state), none)).toBe(false)
    }
  })
})

describe("autonomous work", () => {
  const applyInput = (submissionId: string) => report(submissionId, { _tag: "ApplyInput" })

  it("is absent behind a stable wait whose followers are plain queued input", () => {
    const rows = [row("a", "a1", "suspended"), row("a", "a2", "ready"), row("a", "a3", "ready")]
    expect(hasAutonomousWork(rows, indexReports([applyInput("a2"), applyInput("a3")]))).toBe(false)
    expect(hasAutonomousWork([], none)).toBe(false)
  })

  it("remains for repairs and aborts behind a stable wait, and for any ready head", () => {
    const waiting = row("a", "a1", "suspended")
    expect(hasAutonomousWork([waiting, row("a", "a2", "ready")], none)).toBe(true)
    expect(
      hasAutonomousWork(
        [waiting, row("a", "a2", "ready")],
        indexReports([report("a2", { _tag: "SettleAborted" })]),
      ),
    ).toBe(true)
    expect(hasAutonomousWork([waiting, row("a", "a2", "admitted")], indexReports([applyInput("a2")]))).toBe(
      true,
    )
    // A follower that is itself a stable wait is not autonomous.
    expect(hasAutonomousWork([waiting, row("a", "a2", "suspended")], none)).toBe(false)
    expect(hasAutonomousWork([waiting, row("b", "b1", "ready")], indexReports([applyInput("b1")]))).toBe(true)
  })
})
