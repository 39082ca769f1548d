/**
 * The operator derivations of timed waits: `explain` says a Submission sleeps until T, waits
 * for retry n of m at T, or starts at its `notBefore`, and still says "unknown outcome" while a
 * failed reconcile waits for its next try; `obligations` lists each timed wait as a `timer` at
 * the time it can be served and implies an alarm by then plus the coalescing window; `verify`
 * finds a due bound that misses a timed wait, a timed wait without its alarm, a waiting row
 * without a due time, and a retried step whose due times move earlier.
 */
import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import {
  OpenRetry,
  OpenUncertainStep,
  ReconcileState,
  RecoveryReport,
  type RecoveryDecision,
  SubmissionInspection,
} from "../../src/core/DurableAgentRuntime.ts"
import { AgentId, IdempotencyKey, ReceiptId, SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { SubmissionSnapshot, type SubmissionState, type WaitRecord } from "../../src/core/SubmissionLedger.ts"
import { HistoryRecord, type HistoryEntry } from "../../src/core/ThreadHistory.ts"
import { ThreadMaintenanceState } from "../../src/internal/maintenance/state.ts"
import { type MaintenanceView, reasonFor } from "../../src/internal/operator/explain.ts"
import { deriveObligations } from "../../src/internal/operator/obligations.ts"
import { verifyStorage } from "../../src/internal/operator/verify.ts"

const now = 1_000_000
const TIMING = { minimumAlarmDelayMillis: 50, wakeScanIntervalMillis: 1_000 }

const row = (id: string, state: SubmissionState, extra: Partial<SubmissionSnapshot> = {}) =>
  SubmissionSnapshot.make({
    submissionId: SubmissionId.make(id),
    threadId: ThreadId.make(`t-${id}`),
    queueSequence: 1,
    idempotencyKey: IdempotencyKey.make(id),
    agentId: AgentId.make("agent"),
    agentDigest: "digest",
    inputPayload: "{}",
    inputDigest: "input",
    receiptId: ReceiptId.make(`r-${id}`),
    state,
    producerEpoch: 1,
    abortRequested: false,
    createdAt: 1,
    ...extra,
  })

const waiting = (id: string, wait: WaitRecord, dueAt: number) => row(id, "waiting", { wait, dueAt })

const record = (extra: Partial<ThreadMaintenanceState> = {}) =>
  ThreadMaintenanceState.make({ schemaVersion: 1, dirty: 3n, processed: 3n, nonterminal: 1, ...extra })

const view = (state: ThreadMaintenanceState | undefined, alarm: number | null): MaintenanceView => ({
  state,
  damage: undefined,
  alarm,
})

const explain = (
  snapshot: SubmissionSnapshot,
  decision: RecoveryDecision,
  extra: Partial<SubmissionInspection> = {},
) =>
  reasonFor({
    inspection: SubmissionInspection.make({ row: snapshot, decision, lastSequence: 1, ...extra }),
    head: snapshot,
    ahead: 0,
    maintenance: view(record(), now + 5_000),
    now,
  })

describe("explain, for timed waits", () => {
  it("says when a sleep ends, when a retry runs next and why, and when a delayed start begins", () => {
    const sleep = { _tag: "Sleep", step: 2, name: "nap", dueAt: now + 5_000, since: now - 10 } as const
    expect(explain(waiting("s", sleep, now + 5_000), { _tag: "AwaitDue", dueAt: now + 5_000 })).toEqual({
      _tag: "Sleeping",
      step: 2,
      name: "nap",
      until: now + 5_000,
      since: now - 10,
    })
    const retry = {
      _tag: "Retry",
      step: 0,
      name: "lookup",
      attempt: 2,
      attempts: 5,
      dueAt: now + 900,
      since: now,
    } as const
    expect(
      explain(
        waiting("r", retry, now + 900),
        { _tag: "AwaitDue", dueAt: now + 900 },
        {
          openRetry: OpenRetry.make({
            step: 0,
            name: "lookup",
            failed: 2,
            attempts: 5,
            lastError: "503",
            lastFailedAt: now,
            nextAttemptAt: now + 900,
          }),
        },
      ),
    ).toEqual({
      _tag: "RetryBackoff",
      step: 0,
      name: "lookup",
      attempt: 2,
      attempts: 5,
      nextAttemptAt: now + 900,
      lastError: "503",
    })
    expect(
      explain(waiting("d", { _tag: "Delayed", notBefore: now + 60_000 }, now + 60_000), {
        _tag: "AwaitDue",
        dueAt: now + 60_000,
      }),
    ).toEqual({ _tag: "Delayed", notBefore: now + 60_000 })
    // Due and not served yet: the alarm serves it.
    expect(explain(waiting("late", sleep, now - 1), { _tag: "Due", dueAt: now - 1 })._tag).toBe(
      "WaitingForAlarm",
    )
  })

  it("keeps the Unknown Outcome as the reason while a failed reconcile waits for its next try", () => {
    const wait = { _tag: "Reconcile", step: 1, dueAt: now + 2_000, since: now } as const
    const reason = explain(
      waiting("u", wait, now + 2_000),
      { _tag: "AwaitDue", dueAt: now + 2_000 },
      {
        openUncertain: OpenUncertainStep.make({
          step: 1,
          name: "charge",
          since: now - 100,
          reconcile: ReconcileState.make({
            status: "backoff",
            allowed: 3,
            started: 1,
            notBefore: now + 2_000,
          }),
        }),
      },
    )
    expect(reason).toMatchObject({ _tag: "UnknownOutcome", waitingFor: "reconciliation" })
  })
})

describe("obligations, for timed waits", () => {
  const derive = (
    rows: ReadonlyArray<SubmissionSnapshot>,
    state: ThreadMaintenanceState,
    alarm: number | null,
  ) =>
    deriveObligations({
      maintenance: view(state, alarm),
      nonterminal: rows,
      reports: rows.map((r) =>
        RecoveryReport.make({
          submissionId: r.submissionId,
          threadId: r.threadId,
          decision: { _tag: "AwaitDue", dueAt: r.dueAt ?? now },
          disposition: "none",
        }),
      ),
      hostDeadline: Option.none(),
      publicationDeadline: Option.none(),
      retentionDeadline: Option.none(),
      now,
      timing: TIMING,
      timerCoalesceMillis: 10,
      schedules: [],
      passRunning: false,
    })

  it("lists each timed wait as a timer and implies an alarm by the earliest plus the window", () => {
    const sleep = { _tag: "Sleep", step: 0, name: "nap", dueAt: now + 4_000, since: now } as const
    const rows = [
      waiting("a", sleep, now + 4_000),
      waiting("b", { ...sleep, dueAt: now + 9_000 }, now + 9_000),
    ]
    const derived = derive(rows, record({ nextDueAt: now + 4_000 }), now + 4_000)
    expect(derived.obligations.map((o) => [o.source, o.dueAt - now, o.detail])).toEqual([
      ["timer", 4_000, 'sleep "nap" at step 0'],
      ["timer", 9_000, 'sleep "nap" at step 0'],
    ])
    expect(derived).toMatchObject({ impliedAlarm: now + 4_010, scheduledAlarm: now + 4_000 })
    expect(derived.mismatch).toBeUndefined()
    expect(derive(rows, record({ nextDueAt: now + 4_000 }), null).mismatch?.kind).toBe("missing")
    expect(derive(rows, record({ nextDueAt: now + 4_000 }), now + 9_000).mismatch?.kind).toBe("late")
  })
})

describe("verify, for timed waits", () => {
  const failedAttempt = (sequence: number, attempt: number, retryAt: number) =>
    HistoryRecord.make({
      threadId: ThreadId.make("t-r"),
      sequence,
      submissionId: SubmissionId.make("r"),
      recordedAt: sequence,
      entry: {
        _tag: "StepAttemptFailed",
        step: 0,
        name: "lookup",
        attempt,
        error: "x",
        failedAt: 0,
        retryAt,
      } satisfies HistoryEntry,
    })
  const check = (
    rows: ReadonlyArray<SubmissionSnapshot>,
    state: ThreadMaintenanceState,
    alarm: number | null,
    records: ReadonlyArray<HistoryRecord> = [],
  ) =>
    verifyStorage({
      maintenance: view(state, alarm),
      rows,
      records,
      counted: { all: rows.length, lanes: new Map(rows.map((r) => [r.threadId, 1])) },
      reports: [],
      now,
      passRunning: false,
      timing: TIMING,
      timerCoalesceMillis: 10,
      schedules: [],
    }).violations.map((violation) => violation.invariant)

  const sleep = { _tag: "Sleep", step: 0, name: "nap", dueAt: now + 4_000, since: now } as const
  const sleeping = waiting("s", sleep, now + 4_000)

  it("accepts a timed wait covered by the bound and the alarm", () => {
    expect(check([sleeping], record({ nextDueAt: now + 4_000 }), now + 4_000)).toEqual([])
  })

  it("finds a bound that misses a timed wait, a missing alarm, and a waiting row without a due time", () => {
    expect(check([sleeping], record({ nextDueAt: now + 5_000 }), now + 4_000)).toEqual(["timer-covered"])
    expect(check([sleeping], record({ nextDueAt: now + 4_000 }), null)).toEqual(["timer-has-alarm"])
    const shapeless = row("x", "waiting")
    expect(check([shapeless], record(), null)).toEqual(["timed-wait-shape"])
  })

  it("finds retry attempts out of order or due earlier than the one before", () => {
    const retried = [row("r", "running")]
    const ok = [failedAttempt(1, 1, 100), failedAttempt(2, 2, 300)]
    expect(check(retried, record(), now + 100, ok)).toEqual([])
    expect(check(retried, record(), now + 100, [failedAttempt(1, 1, 300), failedAttempt(2, 2, 100)])).toEqual(
      ["retry-monotone"],
    )
    expect(check(retried, record(), now + 100, [failedAttempt(1, 2, 100)])).toEqual(["retry-monotone"])
  })
})
