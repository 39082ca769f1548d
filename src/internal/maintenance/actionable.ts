/**
 * The actionable path of a pass: recovery strictly before the one head Attempt of this event,
 * the durable lane cursor, binding-wait bookkeeping, retirement of auxiliary work, then the
 * residual classification and the finish commit.
 *
 * The pass never reads a queue: recovery looks only at rows that can need it, lanes are
 * known by their heads (one indexed row each), and counts come from the ledger without a
 * scan. Plain queued input (`ready`, never claimed, no abort) is classified by its state,
 * `ApplyInput`, exactly as recovery would report it.
 */
import { Clock, DateTime, Effect, Option, Random, Stream } from "effect"
import type { DurableBindingFailure } from "../../core/AgentRegistration.ts"
import { type DurableAgentRuntime, RecoveryWorklist } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionId } from "../../core/Identifiers.ts"
import type { SubmissionLedger, SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import type { Auxiliary } from "./auxiliary.ts"
import { backoffDelay } from "./backoff.ts"
import { eligibleLanes, hasAutonomousWork, indexReports, laneHeads, type ReportIndex } from "./classify.ts"
import type { MaintenanceEnv } from "./env.ts"
import { type AlarmDisposition, finishActionable } from "./finish.ts"
import { recordBindingOutcome, selectMaintenanceLane } from "./select.ts"
import type { MaintenanceObservation } from "./state.ts"

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

/**
 * The rows the residual autonomy check must see, in scan order: every lane head, every
 * recovery candidate, and every row recovery reported on at pass start that is still
 * nonterminal. What is left out is plain queued input behind its head: not a stable wait,
 * and dormant exactly when its head is one, so it never decides the answer.
 */
const residualRows = (ledger: SubmissionLedger["Service"], reports: ReportIndex) =>
  Effect.gen(function* () {
    const heads = yield* ledger.laneHeads
    const candidates = yield* Stream.runCollect(ledger.scanRecoveryCandidates)
    const rows = new Map<SubmissionId, SubmissionSnapshot>()
    for (const row of [...heads, ...candidates]) rows.set(row.submissionId, row)
    for (const submissionId of reports.keys()) {
      if (rows.has(submissionId)) continue
      const row = yield* ledger.lookup(submissionId)
      if (Option.isSome(row) && row.value.state !== "settled") rows.set(submissionId, row.value)
    }
    return [...rows.values()].sort(laneOrder)
  })

const rearmDelay = (env: MaintenanceEnv, progressed: boolean, stalls: number) =>
  (progressed
    ? Effect.succeed(env.config.alarmBackoffBase)
    : Effect.map(Random.next, (jitter) => backoffDelay(env.config, stalls, jitter))
  ).pipe(Effect.withSpan("ThreadMaintenance.rearmDelay"))

/** @internal */
export const runActionable = (
  env: MaintenanceEnv,
  services: ActionableServices,
  options: {
    readonly started: ActionableStart
    readonly observed: MaintenanceObservation
    readonly auxiliary: Auxiliary
    readonly yieldAfter: DateTime.Utc
  },
) =>
  Effect.gen(function* () {
    const { runtime, ledger } = services
    const { started, observed } = options
    observed.nativeOnly = true

    // One decision per nonterminal Submission: recovery reports the candidates, the rest are
    // plain queued input (ApplyInput), classified by state.
    const atStart = yield* ledger.countAllNonterminal
    const recovered = yield* runtime.runRecovery.pipe(Effect.provideService(RecoveryWorklist, "candidates"))
    const reports = indexReports(recovered)
    const heads = laneHeads(yield* ledger.laneHeads)
    const eligible = eligibleLanes(heads, reports)
    const selection = yield* selectMaintenanceLane(env, heads, eligible)
    const selected = selection.selected === undefined ? undefined : heads.get(selection.selected)

    // One FIFO head per event; followers of a lane belong to later events.
    let bindingFailure: DurableBindingFailure | undefined
    const settlement =
      selected === undefined
        ? Option.none()
        : yield* runtime.processThreadHead(selected.threadId, { yieldAfter: options.yieldAfter }).pipe(
            Effect.catchTag(["BindingUnavailable", "BindingDigestMismatch"], (failure) =>
              Effect.sync(() => {
                bindingFailure = failure
                return Option.none()
              }),
            ),
          )
    const waits =
      selected === undefined
        ? selection.waits
        : yield* recordBindingOutcome(env, selected, selection.waits, bindingFailure)

    observed.nativeOnly = false
    yield* options.auxiliary.finish

    const residual = yield* residualRows(ledger, reports)
    const autonomous = hasAutonomousWork(residual, reports)
    const nonterminal = yield* ledger.countAllNonterminal
    // Binding waits stay while their Submission is nonterminal (the finish drops the others).
    const live = new Set(residual.map((row) => row.submissionId))
    for (const wait of [...selection.stored, ...waits]) {
      if (live.has(wait.submissionId)) continue
      const row = yield* ledger.lookup(wait.submissionId)
      if (Option.isSome(row) && row.value.state !== "settled") live.add(wait.submissionId)
    }
    const progressed =
      Option.isSome(settlement) || recovered.some((report) => report.disposition === "repaired")
    const now = yield* Clock.currentTimeMillis
    const ordinaryDelay = autonomous ? yield* rearmDelay(env, progressed, started.stalls) : 0
    // A lane without a binding wait (or whose wait is due) makes the binding delay zero.
    const nextEligible = eligible.map(
      (threadId) =>
        waits.find((wait) => wait.submissionId === heads.get(threadId)?.submissionId)?.notBefore ?? now,
    )
    const bindingDelay = nextEligible.length === 0 ? 0 : Math.max(0, Math.min(...nextEligible) - now)

    const alarm = yield* finishActionable(env, {
      generation: started.generation,
      stalls: started.stalls,
      activeAtStart: started.activeAtStart,
      autonomous,
      progressed,
      now,
      delay: Math.max(ordinaryDelay, bindingDelay),
      nonterminal,
      live,
    })
    return {
      recovered: atStart,
      settled: Option.isSome(settlement) ? 1 : 0,
      nonterminal,
      alarm,
    } satisfies ActionableResult
  })
