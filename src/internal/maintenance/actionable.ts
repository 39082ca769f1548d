/**
 * The actionable path of a pass: recovery strictly before the one head Attempt of this event,
 * the durable lane cursor, binding-wait bookkeeping, retirement of auxiliary work, then the
 * residual classification and the finish commit.
 *
 * The pass never reads a queue: recovery looks only at rows that can need it, lanes are
 * known by their heads (one indexed row each) and visited in round-robin order only until the
 * answer is known, and counts come from the ledger without a scan. Plain queued input
 * (`ready`, never claimed, no abort) is classified by its state, `ApplyInput`, exactly as
 * recovery would report it.
 */
import { Clock, DateTime, Effect, Option, Random, Stream } from "effect"
import type { DurableBindingFailure } from "../../core/AgentRegistration.ts"
import { type DurableAgentRuntime, RecoveryWorklist } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import type { SubmissionLedger, SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import type { Auxiliary } from "./auxiliary.ts"
import { backoffDelay } from "./backoff.ts"
import { hasAutonomousWork, indexReports, type ReportIndex } from "./classify.ts"
import type { MaintenanceEnv } from "./env.ts"
import type { AlarmDisposition } from "./alarmPolicy.ts"
import { finishActionable } from "./finish.ts"
import {
  isEligibleHead,
  pendingBindingWait,
  recordBindingOutcome,
  selectMaintenanceLane,
  visitLanes,
} from "./select.ts"
import type { BindingRetry } from "./state.ts"

/** @internal */
export interface ActionableServices {
  readonly runtime: DurableAgentRuntime["Service"]
  readonly ledger: SubmissionLedger["Service"]
}

/** @internal */
export interface ActionableStart {
  readonly generation: bigint
  readonly stalls: number
  readonly activeAtStart: number
  readonly cursor: ThreadId | undefined
  readonly bindingRetries: ReadonlyArray<BindingRetry>
}

/** @internal */
export interface ActionableResult {
  readonly recovered: number
  readonly settled: number
  readonly nonterminal: number
  readonly alarm: AlarmDisposition
}

const laneOrder = (a: SubmissionSnapshot, b: SubmissionSnapshot) =>
  a.threadId < b.threadId ? -1 : a.threadId > b.threadId ? 1 : a.queueSequence - b.queueSequence

/** What the residual classification found after the Attempt. */
interface Residual {
  readonly autonomous: boolean
  /** How long every eligible lane still waits for a binding (0 when one can run now). */
  readonly bindingDelayMillis: number
  /** Submissions seen nonterminal. */
  readonly live: Set<SubmissionId>
}

/**
 * The residual classification. Autonomous work is first looked for among lane heads, in
 * round-robin order from the lane just served, stopping at the first head that answers the
 * question: serving abundant work reads O(1) heads whatever the number of lanes. Only when no
 * head is eligible (every lane empty or parked in a stable wait) are all heads, the recovery
 * candidates and the rows reported at pass start that are still nonterminal classified in scan
 * order; plain queued input behind its head is left out, since it is not a stable wait and is
 * dormant exactly when its head is one, so it never decides the answer.
 *
 * `bindingDelayMillis` is 0 as soon as one eligible lane can run now. The lane served without a
 * binding failure is such a lane (its wait, if any, was just removed); otherwise the visit goes
 * on past heads in binding waits to the first runnable one, and without one the delay is the
 * earliest wait.
 */
const classifyResidual = (
  ledger: SubmissionLedger["Service"],
  reports: ReportIndex,
  options: {
    readonly served: SubmissionSnapshot | undefined
    readonly servedRunnable: boolean
    readonly waits: ReadonlyArray<BindingRetry>
    readonly now: number
  },
) =>
  Effect.gen(function* () {
    const { now, waits } = options
    const heads: Array<SubmissionSnapshot> = []
    let eligible = false
    let earliestWait = Infinity
    const stopped = yield* visitLanes(
      ledger,
      options.served === undefined ? undefined : { threadId: options.served.threadId, inclusive: true },
      (head) => {
        heads.push(head)
        if (!isEligibleHead(head, reports)) return false
        eligible = true
        if (options.servedRunnable) return true
        const wait = pendingBindingWait(head, waits, now)
        if (wait === undefined) return true
        earliestWait = Math.min(earliestWait, wait.notBefore)
        return false
      },
    )
    const live = new Set(heads.map((head) => head.submissionId))
    if (stopped || eligible) {
      const bindingDelayMillis = stopped || options.servedRunnable ? 0 : Math.max(0, earliestWait - now)
      return { autonomous: true, bindingDelayMillis, live } satisfies Residual
    }
    // Every head was visited and none is eligible.
    const rows = new Map<SubmissionId, SubmissionSnapshot>()
    const candidates = yield* Stream.runCollect(ledger.scanRecoveryCandidates)
    for (const row of [...heads, ...candidates]) rows.set(row.submissionId, row)
    for (const submissionId of reports.keys()) {
      if (rows.has(submissionId)) continue
      const row = yield* ledger.lookup(submissionId)
      if (Option.isSome(row) && row.value.state !== "settled") rows.set(submissionId, row.value)
    }
    for (const submissionId of rows.keys()) live.add(submissionId)
    const autonomous = hasAutonomousWork([...rows.values()].sort(laneOrder), reports)
    return { autonomous, bindingDelayMillis: 0, live } satisfies Residual
  })

const rearmDelay = (env: MaintenanceEnv, progressed: boolean, stalls: number) =>
  (progressed
    ? Effect.succeed(env.config.alarmBackoffBase)
    : Effect.map(Random.next, (jitter) => backoffDelay(env.config, stalls, jitter))
  ).pipe(Effect.withSpan("ThreadMaintenance.rearmDelay"))

/** @internal One lane head this event served, and how its Attempt ended. */
export interface ServedHead {
  readonly head: SubmissionSnapshot
  readonly settled: boolean
  /** No compatible binding: the head now waits (its wait is committed). */
  readonly bindingFailure: boolean
}

/** @internal What the native phase of an event did, for the rest of the event. */
export interface NativeOutcome {
  readonly reports: ReportIndex
  /** Recovery reports produced before any Attempt. */
  readonly recovered: number
  /** The heads served, in order (one per event). */
  readonly served: ReadonlyArray<ServedHead>
  /** Stored binding waits of the lanes the selection visited, after the binding commit. */
  readonly waits: ReadonlyArray<BindingRetry>
  /** Every binding wait stored when the lane was selected. */
  readonly storedWaits: ReadonlyArray<BindingRetry>
}

/** @internal Progress: a served head settled, or recovery repaired something. */
export const hasProgressed = (native: NativeOutcome): boolean =>
  native.served.some((served) => served.settled) ||
  [...native.reports.values()].some((report) => report.disposition === "repaired")

/**
 * @internal The native phase: recovery strictly before the one head Attempt of this event, the
 * durable lane cursor, and the binding-wait bookkeeping (committed before auxiliary work is
 * joined, so an auxiliary failure cannot lose it).
 */
export const runNative = (
  env: MaintenanceEnv,
  services: ActionableServices,
  started: ActionableStart,
  yieldAfter: DateTime.Utc,
) =>
  Effect.gen(function* () {
    const { runtime, ledger } = services
    const recovered = yield* runtime.runRecovery.pipe(Effect.provideService(RecoveryWorklist, "candidates"))
    const reports = indexReports(recovered)
    const selection = yield* selectMaintenanceLane(env, ledger, reports, started)
    const { selected } = selection
    if (selected === undefined) {
      return {
        reports,
        recovered: recovered.length,
        served: [],
        waits: selection.waits,
        storedWaits: selection.stored,
      } satisfies NativeOutcome
    }
    // One FIFO head per event; followers of a lane belong to later events.
    const attempt = yield* runtime.processThreadHead(selected.threadId, { yieldAfter }).pipe(
      Effect.map((settlement) => ({ settled: Option.isSome(settlement), failure: undefined })),
      Effect.catchTag(["BindingUnavailable", "BindingDigestMismatch"], (failure: DurableBindingFailure) =>
        Effect.succeed({ settled: false, failure }),
      ),
    )
    const waits = yield* recordBindingOutcome(env, selected, selection.waits, attempt.failure)
    return {
      reports,
      recovered: recovered.length,
      served: [{ head: selected, settled: attempt.settled, bindingFailure: attempt.failure !== undefined }],
      waits,
      storedWaits: selection.stored,
    } satisfies NativeOutcome
  })

/**
 * @internal The rest of an actionable event: retire auxiliary work, classify what remains,
 * and commit the finish.
 */
export const finishNative = (
  env: MaintenanceEnv,
  services: ActionableServices,
  started: ActionableStart,
  native: NativeOutcome,
  auxiliary: Auxiliary,
) =>
  Effect.gen(function* () {
    const { ledger } = services
    yield* auxiliary.finish

    const now = yield* Clock.currentTimeMillis
    const last = native.served.at(-1)
    const residual = yield* classifyResidual(ledger, native.reports, {
      served: last?.head,
      servedRunnable: last !== undefined && !last.bindingFailure,
      waits: native.waits,
      now,
    })
    const { autonomous, live } = residual
    const nonterminal = yield* ledger.countAllNonterminal
    // Binding waits stay while their Submission is nonterminal (the finish drops the others).
    for (const wait of [...native.storedWaits, ...native.waits]) {
      if (live.has(wait.submissionId)) continue
      const row = yield* ledger.lookup(wait.submissionId)
      if (Option.isSome(row) && row.value.state !== "settled") live.add(wait.submissionId)
    }
    const progressed = hasProgressed(native)
    const ordinaryDelayMillis = autonomous ? yield* rearmDelay(env, progressed, started.stalls) : 0

    const alarm = yield* finishActionable(env, {
      generation: started.generation,
      stalls: started.stalls,
      activeAtStart: started.activeAtStart,
      autonomous,
      progressed,
      now,
      delayMillis: Math.max(ordinaryDelayMillis, residual.bindingDelayMillis),
      nonterminal,
      live,
    })
    return {
      recovered: native.recovered,
      settled: native.served.filter((served) => served.settled).length,
      nonterminal,
      alarm,
    } satisfies ActionableResult
  })
