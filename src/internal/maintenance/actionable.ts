/**
 * The actionable path of a pass: recovery strictly before the one head Attempt of this event,
 * the durable lane cursor, binding-wait bookkeeping, retirement of auxiliary work, then the
 * residual classification and the finish commit.
 */
import { Clock, DateTime, Effect, Option, Random, Stream } from "effect"
import type { DurableBindingFailure } from "../../core/AgentRegistration.ts"
import type { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionLedger } from "../../core/SubmissionLedger.ts"
import type { Auxiliary } from "./auxiliary.ts"
import { backoffDelay } from "./backoff.ts"
import { eligibleLanes, hasAutonomousWork, indexReports, laneHeads } from "./classify.ts"
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

    const recovered = yield* runtime.runRecovery
    const reports = indexReports(recovered)
    const heads = laneHeads(yield* Stream.runCollect(ledger.scanNonterminal))
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

    const remaining = yield* Stream.runCollect(ledger.scanNonterminal)
    const autonomous = hasAutonomousWork(remaining, reports)
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
      remaining,
    })
    return {
      recovered: recovered.length,
      settled: Option.isSome(settlement) ? 1 : 0,
      nonterminal: remaining.length,
      alarm,
    } satisfies ActionableResult
  })
