/**
 * The actionable path of a pass: recovery strictly before the first head Attempt of this
 * event, the head Attempts (one by default), binding-wait bookkeeping, retirement of auxiliary
 * work, then the residual classification and the finish commit, which writes the lane cursor.
 *
 * The pass never reads a queue: recovery looks only at rows that can need it, lanes are
 * known by their heads (one indexed row each) and visited in round-robin order only until the
 * answer is known, and counts come from the ledger without a scan. Plain queued input
 * (`ready`, never claimed, no abort) is classified by its state, `ApplyInput`, exactly as
 * recovery would report it.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, type DateTime, Effect, Option, Random, Ref, Stream } from "effect"
import type { DurableBindingFailure } from "../../core/AgentRegistration.ts"
import type { RunJournalError } from "../../core/DurableAgentRuntime.ts"
import {
  type DurableAgentRuntime,
  type HeadAttempt,
  type HeadAttemptOptions,
  RecoveryWorklist,
} from "../../core/DurableAgentRuntime.ts"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import type { SubmissionLedger, SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import { ProgressHub } from "../../core/ProgressHub.ts"
import { tookWaiters } from "../../core/internal/progress/hub.ts"
import { commitTurn, endTurn } from "../turns.ts"
import type { Auxiliary } from "./auxiliary.ts"
import { backoffDelay } from "./backoff.ts"
import { hasAutonomousWork, indexReports, type ReportIndex } from "./classify.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import type { AlarmDisposition } from "./alarmPolicy.ts"
import { finishActionable } from "./finish.ts"
import { makeDueSource } from "./dueSource.ts"
import { readTimers } from "./timers.ts"
import type { Phase } from "./observation.ts"
import {
  isEligibleHead,
  pendingBindingWait,
  recordBindingOutcome,
  selectMaintenanceLane,
  visitLanes,
} from "./select.ts"
import type { BindingRetry } from "./state.ts"
import { makeSuspectNotes } from "./suspect.ts"

/** @internal */
export interface ActionableServices {
  readonly runtime: DurableAgentRuntime["Service"]
  readonly ledger: SubmissionLedger["Service"]
}

/** @internal */
export interface ActionableStart {
  readonly generation: bigint
  /** When the event's begin transaction ran. */
  readonly beganAt: number
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
  ).pipe(withSpanFast("ThreadMaintenance.rearmDelay"))

/** @internal One head this event served (a lane head, or a due row), and how its Attempt ended. */
export interface ServedHead {
  readonly head: SubmissionSnapshot
  /** Whether its lane or the due path served it. */
  readonly source: "lane" | "due"
  readonly settled: boolean
  /**
   * The Attempt moved its Submission durably forward: it settled, parked it in a stable wait
   * (an approval request, an Unknown Outcome) or journaled records before it yielded.
   */
  readonly progressed: boolean
  /** No compatible binding (or a replay the code contradicts): the head now waits (its wait is committed). */
  readonly bindingFailure: boolean
}

/** @internal What the native phase of an event did, for the rest of the event. */
export interface NativeOutcome {
  readonly reports: ReportIndex
  /** Recovery reports produced before any Attempt. */
  readonly recovered: number
  /** The heads served, in order. */
  readonly served: ReadonlyArray<ServedHead>
  /** The lane of the last head Attempt, which becomes the durable cursor. */
  readonly lane: ThreadId | undefined
  /** Every binding wait stored when the first lane was selected. */
  readonly storedAtStart: ReadonlyArray<BindingRetry>
  /** Every binding wait stored after the last binding commit. */
  readonly stored: ReadonlyArray<BindingRetry>
}

/** @internal Progress: a served head moved forward, or recovery repaired something. */
export const hasProgressed = (native: NativeOutcome): boolean =>
  native.served.some((served) => served.progressed) ||
  [...native.reports.values()].some((report) => report.disposition === "repaired")

/** @internal How many heads an event serves, and until when. */
export interface HeadBudget {
  /** `maxHeadsPerEvent`: lane heads. */
  readonly maxHeads: number
  /** `maxTimersPerEvent`: due rows. */
  readonly maxTimers: number
  /** No further head Attempt starts at or after this instant (epoch ms). */
  readonly furtherUntil: number
  /** Every Attempt is asked to yield between committed turns after this. */
  readonly yieldAfter: DateTime.Utc
}

const progressOf = (attempt: HeadAttempt): boolean =>
  attempt._tag === "Settled" || attempt._tag === "Parked" || (attempt._tag === "Yielded" && attempt.journaled)

/** One head Attempt (by its lane, or by the due path) and its binding bookkeeping. */
const serveHead = (
  env: MaintenanceEnv,
  runtime: DurableAgentRuntime["Service"],
  head: SubmissionSnapshot,
  stored: ReadonlyArray<BindingRetry>,
  yieldAfter: DateTime.Utc,
  source: "lane" | "due",
  setAside?: HeadAttemptOptions["setAside"],
) =>
  Effect.gen(function* () {
    const options = setAside === undefined ? { yieldAfter } : { yieldAfter, setAside }
    const run =
      source === "lane"
        ? runtime.attemptThreadHead(head.threadId, options)
        : runtime.attemptDueHead(head.submissionId, options)
    const attempt = yield* run.pipe(
      Effect.map((outcome) => ({ outcome, failure: undefined })),
      // A replay the running code contradicts waits for compatible code like a missing binding:
      // another Attempt of the same code would contradict it again.
      Effect.catchTag(
        ["BindingUnavailable", "BindingDigestMismatch", "RunJournalError"],
        (failure: DurableBindingFailure | RunJournalError) => Effect.succeed({ outcome: undefined, failure }),
      ),
      // The Attempt lost its Claim while it ran (an operator's `retry` revoked it, or a newer
      // owner took it over): its writes were fenced out and the row is another Attempt's now,
      // so this event goes on; the revocation woke the lane for the next one.
      Effect.catchTag(["OwnershipLost", "FenceRejected"], () =>
        Effect.succeed({ outcome: { _tag: "Yielded", journaled: false } as const, failure: undefined }),
      ),
    )
    const after = yield* recordBindingOutcome(env, head, stored, attempt.failure)
    const served: ServedHead = {
      head,
      source,
      settled: attempt.outcome?._tag === "Settled",
      progressed: attempt.outcome !== undefined && progressOf(attempt.outcome),
      bindingFailure: attempt.failure !== undefined,
    }
    // A caller this Attempt's writes woke answers once the turn's writes commit: end the turn
    // now rather than after the rest of the event.
    if (tookWaiters(yield* ProgressHub)) yield* endTurn
    return { served, stored: after }
  })

/**
 * @internal The native phase: recovery strictly before the first head Attempt of this event,
 * then head Attempts in round-robin lane order, each followed by its binding-wait bookkeeping
 * (committed before auxiliary work is joined, so an auxiliary failure cannot lose it). One head
 * by default; with `maxHeads` above 1 further runnable heads are served while the budget
 * allows, each Submission at most once: a head in a stable wait or a binding wait is passed
 * over like in any selection, so it never holds back another lane.
 *
 * Each step (recovery, a lane selection, a head Attempt with its bookkeeping) runs as the phase
 * `phase(lane)` makes for the lane of the last head Attempt started before it, so a failure
 * carries that lane to the failure rearm. `cursorCovered` says whether the durable cursor
 * already names the lane of every earlier Attempt of this incarnation; when it may not, the
 * first selection writes its lane before the Attempt.
 */
export const runNative = (
  env: MaintenanceEnv,
  services: ActionableServices,
  started: ActionableStart,
  budget: HeadBudget,
  cursorCovered: Ref.Ref<boolean>,
  observedPhase: (lane: ThreadId | undefined) => Phase,
) =>
  Effect.gen(function* () {
    const { runtime, ledger } = services
    const suspects = makeSuspectNotes(env, ledger)
    // A failed event did not kill the Object: the failure rearm commits the cleared note.
    const phase =
      (lane: ThreadId | undefined): Phase =>
      (effect) =>
        observedPhase(lane)(Effect.onError(effect, () => Effect.ignore(suspects.clear)))
    const recovered = yield* phase(undefined)(
      runtime.runRecovery.pipe(Effect.provideService(RecoveryWorklist, "candidates")),
    )
    const reports = indexReports(recovered)
    // Due occurrences of schedules join their lanes before any lane is selected: the same
    // event serves them like any queued Submission.
    yield* phase(undefined)(runtime.admitDueOccurrences(budget.maxTimers))
    const served: Array<ServedHead> = []
    const attempted = new Set<SubmissionId>()
    // An event that began without a durable cursor (an incarnation's first, or one after a failed
    // event) may follow an Attempt that killed the Object. Until it has served each runnable lane
    // once, it commits what it served before each further Attempt: workerd commits a turn's
    // writes only when the turn ends, so a head that kills the Object again would take the heads
    // served before it in its turn along, and their steps would run again at every event it
    // kills. One round bounds the extra commits by the lanes, and every incarnation still serves
    // each other lane's head once before it reaches the killing one.
    let careful = !(yield* Ref.get(cursorCovered))
    const carefulAtStart = careful
    const lanesServed = new Set<ThreadId>()
    // Each careful Attempt is noted in that commit, so a head that keeps killing the Object is
    // set aside (suspect.ts); the note of the last one is cleared before any ordinary Attempt,
    // and an ordinary Attempt of a head the note counts ends its count when it returns.
    const commitServed = (head: SubmissionSnapshot) =>
      Effect.suspend(() =>
        careful
          ? suspects.enabled
            ? Effect.tap(suspects.note(head), () => commitTurn)
            : Effect.as(served.length > 0 ? commitTurn : Effect.void, undefined)
          : Effect.as(
              Effect.andThen(
                suspects.pending() ? Effect.andThen(suspects.clear, commitTurn) : Effect.void,
                suspects.watch(head),
              ),
              undefined,
            ),
      )
    let lane: ThreadId | undefined
    let storedAtStart: ReadonlyArray<BindingRetry> | undefined
    let stored = started.bindingRetries
    let lanes = 0
    let lanesDone = false
    let dueServed = 0
    const due = makeDueSource(ledger, budget.maxTimers)
    // The two sources alternate while both have work, a due row first: timers due together
    // are not held back by a lane with abundant work, nor the lanes by many timers.
    let turn: "due" | "lane" = "due"
    while (true) {
      if (served.length > 0 && (yield* Clock.currentTimeMillis) >= budget.furtherUntil) break
      const dueOpen = dueServed < budget.maxTimers && !due.exhausted()
      const laneOpen = lanes < budget.maxHeads && !lanesDone
      if (!dueOpen && !laneOpen) break
      if (turn === "due" || !laneOpen) {
        turn = "lane"
        if (!dueOpen) continue
        const now = yield* Clock.currentTimeMillis
        const row = yield* phase(lane)(
          due.next(
            now,
            (candidate) =>
              attempted.has(candidate.submissionId) ||
              pendingBindingWait(candidate, stored, now) !== undefined,
          ),
        )
        if (row === undefined) continue
        attempted.add(row.submissionId)
        dueServed++
        const setAside = yield* phase(lane)(commitServed(row))
        // A due row does not move the lane cursor: an event that only resumes timers writes no key.
        const result = yield* phase(lane)(
          serveHead(env, runtime, row, stored, budget.yieldAfter, "due", setAside).pipe(
            Effect.onExit(() => suspects.returned),
          ),
        )
        stored = result.stored
        served.push(result.served)
        continue
      }
      turn = "due"
      const persist = lanes === 0 && !(yield* Ref.get(cursorCovered))
      const selection = yield* phase(lane)(
        selectMaintenanceLane(
          env,
          ledger,
          reports,
          { cursor: lane ?? started.cursor, bindingRetries: stored },
          { persist, attempted },
        ),
      )
      storedAtStart ??= selection.stored
      stored = selection.stored
      const head = selection.selected
      if (head === undefined) {
        lanesDone = true
        continue
      }
      // Until the finish or a failure rearm commits, the cursor does not name this lane.
      if (!persist) yield* Ref.set(cursorCovered, false)
      lane = head.threadId
      lanes++
      attempted.add(head.submissionId)
      if (lanesServed.has(lane)) careful = false
      lanesServed.add(lane)
      const setAside = yield* phase(lane)(commitServed(head))
      const result = yield* phase(lane)(
        serveHead(env, runtime, head, stored, budget.yieldAfter, "lane", setAside).pipe(
          Effect.onExit(() => suspects.returned),
        ),
      )
      stored = result.stored
      served.push(result.served)
    }
    // Commits with the finish.
    yield* phase(lane)(suspects.clear)
    // A careful event that served nothing counts and prunes a note left by an event that died.
    if (carefulAtStart) yield* phase(lane)(suspects.tidy)
    return {
      reports,
      recovered: recovered.length,
      served,
      lane,
      storedAtStart: storedAtStart ?? started.bindingRetries,
      stored,
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
    const last = native.served.filter((served) => served.source === "lane").at(-1)
    const residual = yield* classifyResidual(ledger, native.reports, {
      served: last?.head,
      servedRunnable: last !== undefined && !last.bindingFailure,
      waits: native.stored,
      now,
    })
    // The first rows of the due order place the next alarm; one servable now (this event's
    // budget ran out) is work for the next event, at the ordinary pacing.
    const occurrence = yield* ledger.nextOccurrenceAt
    const timers = readTimers(
      yield* ledger.earliestDue(env.config.maxTimersPerEvent),
      native.stored,
      now,
      env.config.timerCoalesceMillis,
      occurrence === undefined ? [] : [occurrence],
    )
    const autonomous = residual.autonomous || timers.servableNow
    const { live } = residual
    const nonterminal = yield* ledger.countAllNonterminal
    // Binding waits stay while their Submission is nonterminal (the finish drops the others).
    for (const wait of [...native.storedAtStart, ...native.stored]) {
      if (live.has(wait.submissionId)) continue
      const row = yield* ledger.lookup(wait.submissionId)
      if (Option.isSome(row) && row.value.state !== "settled") live.add(wait.submissionId)
    }
    const progressed = hasProgressed(native)
    // After progress the next event is paced from this one's start, so the time an event
    // takes is not added to every following one; a backoff counts from now.
    const ordinaryDelayMillis = autonomous ? yield* rearmDelay(env, progressed, started.stalls) : 0
    const dueAt = Math.max(
      (progressed ? started.beganAt : now) + ordinaryDelayMillis,
      now + residual.bindingDelayMillis,
    )

    const alarm = yield* finishActionable(env, {
      generation: started.generation,
      stalls: started.stalls,
      activeAtStart: started.activeAtStart,
      autonomous,
      progressed,
      now,
      dueAt,
      nonterminal,
      live,
      cursor: native.lane,
      timers,
      servedDue: native.served.some((served) => served.source === "due"),
    })
    return {
      recovered: native.recovered,
      settled: native.served.filter((served) => served.settled).length,
      nonterminal,
      alarm,
    } satisfies ActionableResult
  })
