/**
 * The finish commits of a pass, each under the mutation gate so that a producer cannot begin
 * between the snapshot of active mutations and what the pass certifies. The alarm each one
 * leaves is `decideAlarm`'s answer; the record each one writes is decided here.
 */
import { Clock, Effect, Option, Struct } from "effect"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { type AlarmDisposition, decideAlarm, dispositionOf } from "./alarmPolicy.ts"
import { writeAlarm } from "./alarmWrite.ts"
import { STALL_CAP } from "./backoff.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import { nextBound, type TimerReading } from "./timers.ts"
import type { HookDeadlineFailure } from "./errors.ts"
import {
  MaintenanceRetry,
  readMaintenanceState,
  sameRecord,
  ThreadMaintenanceState,
  writeMaintenanceState,
} from "./state.ts"

/**
 * @internal The record after a caught-up finish: the failure retry of an already processed
 * generation is dropped once it is due, so a successful event ends that backoff and a later
 * failure starts a new one after it, never earlier. A success before the retry is due leaves
 * it standing. `undefined` when nothing changes.
 */
export const caughtUpRecord = (
  state: ThreadMaintenanceState,
  now: number,
): ThreadMaintenanceState | undefined =>
  state.retry !== undefined && state.processed >= state.retry.generation && state.retry.notBefore <= now
    ? ThreadMaintenanceState.make(Struct.omit(state, ["retry"]))
    : undefined

/** @internal The caught-up finish: no native work ran. */
export const finishCaughtUp = (env: MaintenanceEnv): Effect.Effect<AlarmDisposition, HookDeadlineFailure> =>
  Effect.gen(function* () {
    yield* env.hit("maintenance:finish:before")
    const disposition = yield* env.gate.withSnapshot((active) =>
      Effect.gen(function* () {
        // Read under the gate: a concurrent producer cannot be cleared with a stale deadline.
        const deadline = Option.getOrUndefined(yield* env.pendingDeadline)
        const now = yield* Clock.currentTimeMillis
        return yield* env.transact("finish publication pass", (txn) => {
          const { state } = readMaintenanceState(txn)
          const next = caughtUpRecord(state, now)
          if (next !== undefined) writeMaintenanceState(txn, next)
          const alarm = decideAlarm(env.timing, { commit: "caught-up", now, record: state, active, deadline })
          writeAlarm(txn, alarm)
          return dispositionOf(alarm)
        })
      }),
    )
    yield* env.hit("maintenance:finish:after")
    return disposition
  })

/** @internal What the actionable path observed, for its finish commit. */
export interface ActionableOutcome {
  /** The generation read when the pass began. */
  readonly generation: bigint
  readonly stalls: number
  readonly activeAtStart: number
  readonly autonomous: boolean
  readonly progressed: boolean
  /** Read once before the finish; the commit reuses it. */
  readonly now: number
  /** When autonomous work is next due (see the alarm policy's `actionable` facts). */
  readonly dueAt: number
  /** Nonterminal Submissions after the Attempt. */
  readonly nonterminal: number
  /** Submissions known to be nonterminal, covering every stored binding wait's. */
  readonly live: ReadonlySet<SubmissionId>
  /** The lane of the event's last head Attempt: the new lane cursor. */
  readonly cursor: ThreadId | undefined
  /** What the finish read of the timed waits. */
  readonly timers: TimerReading
  /** Whether the event served a due row. */
  readonly servedDue: boolean
}

/**
 * @internal The record after an actionable finish: it acknowledges only the generation read
 * at pass start, and only when no mutation was active at start or now and no autonomous work
 * remains; it records the nonterminal count and the lane cursor, drops the retry and the
 * binding waits of settled Submissions, backs off a pass that left autonomous work without
 * progress, and keeps the due bound (see `nextBound`).
 */
export const actionableRecord = (
  state: ThreadMaintenanceState,
  outcome: ActionableOutcome,
  busy: boolean,
): ThreadMaintenanceState => {
  const processed =
    outcome.autonomous || busy || state.processed > outcome.generation ? state.processed : outcome.generation
  const bindingRetries = (state.bindingRetries ?? []).filter((wait) => outcome.live.has(wait.submissionId))
  const next = ThreadMaintenanceState.make({
    ...Struct.omit(state, ["retry", "bindingRetries"]),
    processed,
    nonterminal: outcome.nonterminal,
    ...(outcome.cursor === undefined ? {} : { lastServedThreadId: outcome.cursor }),
    ...(bindingRetries.length > 0 ? { bindingRetries } : {}),
    ...(outcome.autonomous && !outcome.progressed
      ? {
          retry: MaintenanceRetry.make({
            generation: outcome.generation,
            notBefore: outcome.dueAt,
            nativeOnly: true,
            stalls: Math.min(STALL_CAP, outcome.stalls + 1),
          }),
        }
      : {}),
  })
  // Work the event left behind a generation it did not have to acknowledge (a due row ended the
  // wait that held its lane) is due like a timer: the next pass is actionable then.
  const stranded = outcome.autonomous && next.processed >= next.dirty ? outcome.dueAt : undefined
  const fresh =
    stranded === undefined || (outcome.timers.bound !== undefined && outcome.timers.bound < stranded)
      ? outcome.timers.bound
      : stranded
  const nextDueAt = nextBound(state.nextDueAt, fresh, {
    now: outcome.now,
    writes: !sameRecord(state, next),
    servedDue: outcome.servedDue,
  })
  return nextDueAt === state.nextDueAt
    ? next
    : ThreadMaintenanceState.make({
        ...Struct.omit(next, ["nextDueAt"]),
        ...(nextDueAt === undefined ? {} : { nextDueAt }),
      })
}

/** @internal The actionable finish. */
export const finishActionable = (
  env: MaintenanceEnv,
  outcome: ActionableOutcome,
): Effect.Effect<AlarmDisposition, HookDeadlineFailure> =>
  Effect.gen(function* () {
    const { now } = outcome
    yield* env.hit("maintenance:finish:before")
    const disposition = yield* env.gate.withSnapshot((active) =>
      Effect.gen(function* () {
        const deadline = Option.getOrUndefined(yield* env.pendingDeadline)
        return yield* env.transact("finish maintenance pass", (txn) => {
          const { state } = readMaintenanceState(txn)
          const busy = outcome.activeAtStart > 0 || active > 0
          const next = actionableRecord(state, outcome, busy)
          // An unchanged record is already durable: a pass that changes nothing writes nothing.
          if (!sameRecord(state, next)) writeMaintenanceState(txn, next)
          const alarm = decideAlarm(env.timing, {
            commit: "actionable",
            now,
            record: state,
            generation: outcome.generation,
            busy,
            autonomous: outcome.autonomous,
            dueAt: outcome.dueAt,
            deadline,
            timers: outcome.timers.later,
          })
          writeAlarm(txn, alarm)
          return dispositionOf(alarm)
        })
      }),
    )
    yield* env.hit("maintenance:finish:after")
    return disposition
  })
