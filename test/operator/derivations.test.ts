/**
 * The operator derivations as pure functions of stored values: `explain` picks the most
 * decisive reason, `obligations` derives the implied alarm with the constructor gate's rule and
 * flags a disagreement, `verify` names each broken invariant with its rows.
 */
import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import {
  OpenApproval,
  OpenUncertainStep,
  ReconcileState,
  RecoveryReport,
  SubmissionInspection,
  type RecoveryDecision,
} from "../../src/core/DurableAgentRuntime.ts"
import {
  AgentId,
  AttemptId,
  IdempotencyKey,
  OwnershipToken,
  ReceiptId,
  SubmissionId,
  ThreadId,
} from "../../src/core/Identifiers.ts"
import { Settlement, SubmissionSnapshot, type SubmissionState } from "../../src/core/SubmissionLedger.ts"
import { HistoryRecord, type HistoryEntry } from "../../src/core/ThreadHistory.ts"
import {
  BindingRetry,
  MaintenanceRetry,
  ThreadMaintenanceState,
} from "../../src/internal/maintenance/state.ts"
import { type MaintenanceView, reasonFor } from "../../src/internal/operator/explain.ts"
import { deriveObligations } from "../../src/internal/operator/obligations.ts"
import { verifyStorage } from "../../src/internal/operator/verify.ts"
import { readJournal } from "../../src/core/internal/runtime/shared/journal.ts"
import { waitingKindOf } from "../../src/internal/object/pageViews.ts"

const now = 1_000_000
const TIMING = { minimumAlarmDelayMillis: 50, wakeScanIntervalMillis: 1_000 }

const row = (id: string, sequence: number, state: SubmissionState, extra: Partial<SubmissionSnapshot> = {}) =>
  SubmissionSnapshot.make({
    submissionId: SubmissionId.make(id),
    threadId: ThreadId.make("t"),
    queueSequence: sequence,
    idempotencyKey: IdempotencyKey.make(id),
    agentId: AgentId.make("agent"),
    agentDigest: "digest",
    inputPayload: "{}",
    inputDigest: "input",
    receiptId: ReceiptId.make(`r-${id}`),
    state,
    producerEpoch: state === "ready" ? 0 : 1,
    abortRequested: false,
    createdAt: 1,
    ...extra,
  })

const settlement = (id: string, outcome: "completed" | "failed" = "completed") =>
  Settlement.make({
    submissionId: SubmissionId.make(id),
    threadId: ThreadId.make("t"),
    outcome,
    settledAt: 5,
  })

const inspection = (
  snapshot: SubmissionSnapshot,
  decision: RecoveryDecision,
  extra: Partial<SubmissionInspection> = {},
) => SubmissionInspection.make({ row: snapshot, decision, lastSequence: 1, ...extra })

const record = (extra: Partial<ThreadMaintenanceState> = {}) =>
  ThreadMaintenanceState.make({ schemaVersion: 1, dirty: 3n, processed: 3n, nonterminal: 1, ...extra })

const view = (state: ThreadMaintenanceState | undefined, alarm: number | null = null): MaintenanceView => ({
  state,
  damage: undefined,
  alarm,
})

const report = (snapshot: SubmissionSnapshot, decision: RecoveryDecision) =>
  RecoveryReport.make({
    submissionId: snapshot.submissionId,
    threadId: snapshot.threadId,
    decision,
    disposition: "none",
  })

const reconcile = (status: "none" | "due" | "backoff" | "exhausted") =>
  ReconcileState.make({ status, allowed: status === "none" ? 0 : 5, started: 1 })

describe("explain", () => {
  const head = row("h", 1, "running", {
    ownership: {
      attemptId: AttemptId.make("a1"),
      ownershipToken: OwnershipToken.make("o"),
      leaseExpiresAt: now + 500,
    },
  })

  it("puts FIFO before the Submission's own waits, and an accepted abort before FIFO", () => {
    const follower = row("f", 2, "ready")
    const base = { head, ahead: 1, maintenance: view(record()), now }
    expect(reasonFor({ ...base, inspection: inspection(follower, { _tag: "ApplyInput" }) })).toMatchObject({
      _tag: "QueuedBehind",
      head: "h",
      headState: "running",
    })
    const aborting = row("f", 2, "ready", { abortRequested: true })
    expect(reasonFor({ ...base, inspection: inspection(aborting, { _tag: "SettleAborted" }) })).toEqual({
      _tag: "WaitingForAlarm",
      at: null,
      abortRequested: true,
    })
  })

  it("names a live Attempt, a binding wait, the Object's backoff, then the alarm", () => {
    const base = { head: undefined, ahead: 0, now }
    expect(
      reasonFor({ ...base, maintenance: view(record()), inspection: inspection(head, { _tag: "NoAction" }) }),
    ).toEqual({
      _tag: "HeldByAttempt",
      attemptId: "a1",
      leaseExpiresAt: now + 500,
    })
    const ready = row("h", 1, "ready", { producerEpoch: 2 })
    const waits = record({
      dirty: 4n,
      bindingRetries: [
        BindingRetry.make({
          threadId: ThreadId.make("t"),
          submissionId: SubmissionId.make("h"),
          attempts: 2,
          notBefore: now + 10_000,
          reportedAt: 0,
        }),
      ],
      retry: MaintenanceRetry.make({ generation: 4n, notBefore: now + 300, nativeOnly: true, stalls: 3 }),
    })
    const decision = { _tag: "ResumeFromTurnBoundary" } as const
    expect(
      reasonFor({ ...base, maintenance: view(waits), inspection: inspection(ready, decision) }),
    ).toMatchObject({
      _tag: "BindingWait",
      attempts: 2,
      nextTryAt: now + 10_000,
    })
    const backoff = record({
      dirty: 4n,
      retry: MaintenanceRetry.make({ generation: 4n, notBefore: now + 300, nativeOnly: true, stalls: 3 }),
    })
    expect(
      reasonFor({ ...base, maintenance: view(backoff), inspection: inspection(ready, decision) }),
    ).toEqual({
      _tag: "LaneBackoff",
      until: now + 300,
      stalls: 3,
    })
    // A retry of an older generation is obsolete: the alarm serves it.
    const obsolete = record({
      dirty: 5n,
      retry: MaintenanceRetry.make({ generation: 4n, notBefore: now + 300, nativeOnly: true, stalls: 3 }),
    })
    expect(
      reasonFor({ ...base, maintenance: view(obsolete, now + 50), inspection: inspection(ready, decision) }),
    ).toEqual({
      _tag: "WaitingForAlarm",
      at: now + 50,
      abortRequested: false,
    })
  })

  it("names the event a parked Submission waits for, and when an event wait or an approval times out", () => {
    const base = { head: undefined, ahead: 0, maintenance: view(record()), now }
    const stable = row("e", 1, "suspended", { wait: { _tag: "Event", step: 2, event: "shipped", since: 7 } })
    expect(
      reasonFor({ ...base, inspection: inspection(stable, { _tag: "AwaitEvent", event: "shipped" }) }),
    ).toEqual({
      _tag: "WaitingForEvent",
      step: 2,
      event: "shipped",
      since: 7,
    })
    const timed = row("e", 1, "waiting", {
      dueAt: now + 60,
      wait: { _tag: "Event", step: 2, event: "shipped", dueAt: now + 60, since: 7 },
    })
    expect(
      reasonFor({ ...base, inspection: inspection(timed, { _tag: "AwaitDue", dueAt: now + 60 }) }),
    ).toMatchObject({
      _tag: "WaitingForEvent",
      timesOutAt: now + 60,
    })
    const approval = row("a", 1, "waiting", {
      dueAt: now + 90,
      wait: { _tag: "Approval", step: 0, dueAt: now + 90, since: 3 },
    })
    const open = OpenApproval.make({ step: 0, since: 3, payload: { n: 1 } })
    expect(
      reasonFor({
        ...base,
        inspection: inspection(approval, { _tag: "AwaitDue", dueAt: now + 90 }, { openApproval: open }),
      }),
    ).toEqual({ _tag: "WaitingForApproval", step: 0, since: 3, payload: { n: 1 }, timesOutAt: now + 90 })
  })

  it("tells Unknown Outcomes waiting for a reconcile from those waiting for a person", () => {
    const unknown = row("u", 1, "unknown")
    const open = (status: "none" | "due" | "backoff" | "exhausted") =>
      OpenUncertainStep.make({ step: 2, name: "issue refund", since: 42, reconcile: reconcile(status) })
    const base = { head: undefined, ahead: 0, maintenance: view(record()), now }
    const cases = [
      ["due", { _tag: "ReconcileUnknown", step: 2 }, "reconciliation"],
      ["backoff", { _tag: "AwaitReconcileRetry", step: 2, notBefore: now + 1 }, "reconciliation"],
      ["exhausted", { _tag: "AwaitUnknownResolution", step: 2 }, "operator"],
      ["none", { _tag: "AwaitUnknownResolution", step: 2 }, "operator"],
    ] as const
    for (const [status, decision, waitingFor] of cases) {
      expect(
        reasonFor({ ...base, inspection: inspection(unknown, decision, { openUncertain: open(status) }) }),
      ).toMatchObject({
        _tag: "UnknownOutcome",
        step: 2,
        since: 42,
        waitingFor,
      })
    }
    const suspended = row("s", 1, "suspended")
    expect(
      reasonFor({
        ...base,
        inspection: inspection(
          suspended,
          { _tag: "AwaitApprovalDecision" },
          {
            openApproval: OpenApproval.make({ step: 1, payload: { amount: 3 }, since: 7 }),
          },
        ),
      }),
    ).toEqual({ _tag: "WaitingForApproval", step: 1, since: 7, payload: { amount: 3 } })
  })
})

describe("obligations", () => {
  const input = (
    state: ThreadMaintenanceState,
    alarm: number | null,
    rows: ReadonlyArray<SubmissionSnapshot>,
    decisions: ReadonlyArray<RecoveryDecision>,
  ) => ({
    maintenance: view(state, alarm),
    nonterminal: rows,
    reports: rows.map((r, i) => report(r, decisions[i] ?? { _tag: "ApplyInput" })),
    hostDeadline: Option.none<number>(),
    publicationDeadline: Option.none<number>(),
    retentionDeadline: Option.none<number>(),
    now,
    timing: TIMING,
    timerCoalesceMillis: 10,
    schedules: [],
    passRunning: false,
  })

  it("implies the constructor rule's alarm for an owed generation and flags a later or missing one", () => {
    const ready = row("a", 1, "ready")
    const owed = record({ dirty: 4n })
    expect(deriveObligations(input(owed, now + 100, [ready], [])).impliedAlarm).toBe(now + 1_000)
    expect(deriveObligations(input(owed, now + 100, [ready], [])).mismatch).toBeUndefined()
    expect(deriveObligations(input(owed, now + 5_000, [ready], [])).mismatch?.kind).toBe("late")
    expect(deriveObligations(input(owed, null, [ready], [])).mismatch?.kind).toBe("missing")
    // Inside a running pass the slot is empty until its finish: not a mismatch.
    expect(
      deriveObligations({ ...input(owed, null, [ready], []), passRunning: true }).mismatch,
    ).toBeUndefined()
    // Runnable work behind an acknowledged generation is stranded: due now.
    const stranded = deriveObligations(input(record(), null, [ready], []))
    expect(stranded).toMatchObject({ impliedAlarm: now, mismatch: { kind: "missing" } })
    expect(stranded.obligations.map((o) => o.source)).toEqual(["lane-head"])
  })

  it("owes nothing for stable waits, and calls an alarm then an extra wake", () => {
    const parked = row("s", 1, "suspended")
    const quiet = deriveObligations(input(record(), null, [parked], [{ _tag: "AwaitApprovalDecision" }]))
    expect(quiet).toMatchObject({ impliedAlarm: null, obligations: [] })
    expect(quiet.mismatch).toBeUndefined()
    expect(
      deriveObligations(input(record(), now, [parked], [{ _tag: "AwaitApprovalDecision" }])).mismatch?.kind,
    ).toBe("extra")
  })

  it("lists lease expiries, reconcile retries, binding waits and the retry with their due times", () => {
    const held = row("h", 1, "running", {
      ownership: {
        attemptId: AttemptId.make("a"),
        ownershipToken: OwnershipToken.make("o"),
        leaseExpiresAt: now + 700,
      },
    })
    const waiting = ThreadId.make("w")
    const reconciling = row("u", 1, "unknown", { threadId: waiting })
    const state = record({
      dirty: 4n,
      retry: MaintenanceRetry.make({ generation: 4n, notBefore: now + 400, nativeOnly: true, stalls: 1 }),
      bindingRetries: [
        BindingRetry.make({
          threadId: waiting,
          submissionId: SubmissionId.make("u"),
          attempts: 1,
          notBefore: now + 5_000,
          reportedAt: 0,
        }),
      ],
    })
    const derived = deriveObligations(
      input(
        state,
        now + 400,
        [held, reconciling],
        [{ _tag: "NoAction" }, { _tag: "AwaitReconcileRetry", step: 1, notBefore: now + 2_000 }],
      ),
    )
    expect(derived.obligations.map((o) => [o.source, o.dueAt - now])).toEqual([
      // Native work waits for the failed pass's retry, as the alarm does.
      ["generation-owed", 400],
      ["maintenance-retry", 400],
      ["lease-expiry", 700],
      ["reconcile-retry", 2_000],
      ["binding-wait", 5_000],
    ])
    expect(derived).toMatchObject({ impliedAlarm: now + 400, scheduledAlarm: now + 400 })
    expect(derived.mismatch).toBeUndefined()
  })
  it("shows retention as a source of its own, and its due time implies the alarm of an idle Object", () => {
    const idle = { ...input(record(), null, [], []), retentionDeadline: Option.some(now + 3_600_000) }
    const derived = deriveObligations(idle)
    expect(derived.obligations.map((o) => [o.source, o.dueAt - now])).toEqual([["retention", 3_600_000]])
    expect(derived).toMatchObject({ impliedAlarm: now + 3_600_000, mismatch: { kind: "missing" } })
    expect(
      deriveObligations({ ...idle, maintenance: view(record(), now + 3_600_000) }).mismatch,
    ).toBeUndefined()
  })
})

describe("verify", () => {
  const entry = (id: string, sequence: number, e: HistoryEntry) =>
    HistoryRecord.make({
      threadId: ThreadId.make("t"),
      sequence,
      submissionId: SubmissionId.make(id),
      recordedAt: sequence,
      entry: e,
    })
  const accepted = {
    _tag: "SubmissionAccepted",
    agentId: AgentId.make("agent"),
    agentDigest: "d",
    input: {},
  } as const
  const settled = { _tag: "SubmissionSettled", outcome: "completed" } as const

  it("finds a Submission that ran before the one ahead of it settled, a second settlement, and a stale binding wait", () => {
    const first = row("a", 1, "settled", { settlement: settlement("a") })
    const second = row("b", 2, "running")
    const records = [
      entry("a", 1, accepted),
      entry("b", 2, accepted),
      entry("b", 3, { _tag: "InputApplied" }),
      entry("a", 4, { _tag: "InputApplied" }),
      entry("a", 5, settled),
      entry("a", 6, settled),
    ]
    const state = record({
      bindingRetries: [
        BindingRetry.make({
          threadId: ThreadId.make("t"),
          submissionId: SubmissionId.make("a"),
          attempts: 1,
          notBefore: 0,
          reportedAt: 0,
        }),
      ],
    })
    const found = verifyStorage({
      maintenance: view(state, now),
      rows: [first, second],
      records,
      counted: { all: 1, lanes: new Map([[ThreadId.make("t"), 1]]) },
      reports: [],
      now,
      passRunning: false,
      timing: TIMING,
      timerCoalesceMillis: 10,
      schedules: [],
    })
    expect(found.violations.map((v) => [v.invariant, v.submissionIds])).toEqual([
      ["one-settlement", ["a"]],
      ["fifo", ["a", "b"]],
      ["binding-waits-nonterminal", ["a"]],
    ])
  })

  it("finds an event recorded twice, taken twice, and taken by a wait for another name", () => {
    const waiting = row("w", 1, "suspended")
    const received = (id: string) =>
      ({ _tag: "EventReceived", event: "shipped", eventId: id, payload: {} }) as const
    const taken = (step: number, id: string, event = "shipped") =>
      ({ _tag: "EventConsumed", step, event, eventId: id }) as const
    const records = [
      entry("w", 1, accepted),
      entry("w", 2, received("x")),
      entry("w", 3, taken(0, "x")),
      entry("w", 4, received("x")),
      entry("w", 5, taken(1, "x")),
      entry("w", 6, received("y")),
      entry("w", 7, taken(2, "y", "cancelled")),
    ]
    const found = verifyStorage({
      maintenance: view(record(), null),
      rows: [waiting],
      records,
      counted: { all: 1, lanes: new Map([[ThreadId.make("t"), 1]]) },
      reports: [],
      now,
      passRunning: false,
      timing: TIMING,
      timerCoalesceMillis: 10,
      schedules: [],
    })
    expect(found.violations.map((v) => [v.invariant, v.message])).toEqual([
      ["event-once", "event x of w is recorded twice"],
      ["event-once", "w took event x twice"],
      ["event-once", 'w took event y "shipped" in a wait for "cancelled"'],
    ])
  })

  it("finds counts that disagree with the rows and dirty below processed", () => {
    const queued = row("a", 1, "ready")
    const found = verifyStorage({
      maintenance: view(record({ dirty: 2n, processed: 3n }), null),
      rows: [queued],
      records: [entry("a", 1, accepted)],
      counted: { all: 2, lanes: new Map([[ThreadId.make("t"), 0]]) },
      reports: [report(queued, { _tag: "ApplyInput" })],
      now,
      passRunning: false,
      timing: TIMING,
      timerCoalesceMillis: 10,
      schedules: [],
    })
    expect(found.violations.map((v) => v.invariant)).toEqual([
      "nonterminal-counted",
      "nonterminal-counted",
      "dirty-at-least-processed",
      "owed-work-has-alarm",
    ])
  })
})

describe("waitingKindOf", () => {
  const head = row("head", 1, "running", {
    ownership: {
      attemptId: AttemptId.make("a"),
      ownershipToken: OwnershipToken.make("o"),
      leaseExpiresAt: now + 1_000,
    },
  })
  const journalOf = (entries: ReadonlyArray<HistoryEntry>) => readJournal(entries)

  it("says what a suspended Submission waits for from its records, and where the others stand", () => {
    const waiting = row("w", 1, "suspended")
    const approval = journalOf([{ _tag: "ApprovalRequested", step: 0, payload: { amount: 1 } }])
    const child = journalOf([
      {
        _tag: "ChildStarted",
        step: 0,
        target: { namespace: "THREADS", objectName: "desk" },
        threadId: ThreadId.make("c"),
        agentId: AgentId.make("fraud"),
        agentDigest: "d",
        idempotencyKey: IdempotencyKey.make("k"),
        input: null,
      },
      { _tag: "ChildAwaited", step: 1, child: 0 },
    ])
    expect(waitingKindOf(waiting, { head: waiting, now, journal: approval })).toBe("approval")
    expect(waitingKindOf(waiting, { head: waiting, now, journal: child })).toBe("child")
    expect(waitingKindOf(waiting, { head: waiting, now, journal: journalOf([]) })).toBe("suspended")
    expect(waitingKindOf(head, { head, now })).toBe("running")
    expect(waitingKindOf(head, { head, now: now + 2_000 })).toBe("runnable")
    expect(waitingKindOf(row("q", 2, "ready"), { head, now })).toBe("queued")
    expect(waitingKindOf(row("u", 1, "unknown"), { head: undefined, now })).toBe("unknown-outcome")
    expect(waitingKindOf(row("j", 3, "joined"), { head, now })).toBe("joined")
    expect(waitingKindOf(row("s", 1, "settled"), { head, now })).toBe("settled")
  })
})
