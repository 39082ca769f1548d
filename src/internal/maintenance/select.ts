/**
 * Lane selection and binding-wait bookkeeping of the actionable path.
 *
 * The lane cursor names the lane of the last head Attempt, so that an eviction, a failure or
 * repeated yields cannot monopolize the first lane. The finish commit and the failure rearm
 * write it, each with the record write it makes anyway; it is written on its own before an
 * Attempt only when an earlier Attempt may have ended with neither (see `LaneCursor`). A
 * binding failure (no compatible code for the admitted agent) becomes a per-Submission wait,
 * committed once before auxiliary work is joined so an auxiliary failure cannot lose it; it
 * never acknowledges a generation nor touches the alarm.
 */
import { Clock, Effect, Option } from "effect"
import type { DurableBindingFailure } from "../../core/AgentRegistration.ts"
import type { RunJournalError } from "../../core/DurableAgentRuntime.ts"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import type { LedgerError, SubmissionLedger, SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import { commitTurn } from "../turns.ts"
import { nextBindingRetry } from "./backoff.ts"
import { isStableExternalWait, type ReportIndex } from "./classify.ts"
import type { MaintenanceEnv } from "./maintenanceEnv.ts"
import type { DurableAlarmError } from "./errors.ts"
import {
  type BindingRetry,
  readMaintenanceState,
  ThreadMaintenanceState,
  writeMaintenanceState,
} from "./state.ts"

type Ledger = SubmissionLedger["Service"]

/** @internal Whether a head is not a stable external wait: it can be served. */
export const isEligibleHead = (head: SubmissionSnapshot, reports: ReportIndex): boolean =>
  !isStableExternalWait(head, reports)

/** @internal The binding wait that keeps this head from being served at `now`, if any. */
export const pendingBindingWait = (
  head: SubmissionSnapshot,
  waits: ReadonlyArray<BindingRetry>,
  now: number,
): BindingRetry | undefined =>
  waits.find(
    (wait) =>
      wait.threadId === head.threadId && wait.submissionId === head.submissionId && wait.notBefore > now,
  )

/**
 * @internal Visits lane heads in round-robin order starting at `from` (its own head first, then
 * the lanes after it, wrapping around to the lanes before it), one indexed row per lane, until
 * `visit` answers true. Without `from` it visits every lane from the first. Returns whether a
 * visit stopped it.
 */
export const visitLanes = (
  ledger: Ledger,
  from: { readonly threadId: ThreadId; readonly inclusive: boolean } | undefined,
  visit: (head: SubmissionSnapshot) => boolean,
): Effect.Effect<boolean, LedgerError> =>
  Effect.gen(function* () {
    if (from?.inclusive === true) {
      const own = yield* ledger.head(from.threadId)
      if (Option.isSome(own) && visit(own.value)) return true
    }
    let after = from?.threadId
    let wrapped = from === undefined
    while (true) {
      const next = yield* ledger.nextLaneHead(after)
      if (Option.isNone(next)) {
        if (wrapped) return false
        wrapped = true
        after = undefined
        continue
      }
      const head = next.value
      // Back at the start of the cycle: every lane was visited once.
      if (
        wrapped &&
        from !== undefined &&
        (from.inclusive ? head.threadId >= from.threadId : head.threadId > from.threadId)
      )
        return false
      if (visit(head)) return true
      after = head.threadId
    }
  })

/** @internal */
export interface LaneSelection {
  readonly selected: SubmissionSnapshot | undefined
  /** Every stored binding wait. */
  readonly stored: ReadonlyArray<BindingRetry>
}

/** @internal Where a seek starts and what it passes over. */
export interface LaneStart {
  /** The lane served last: the seek starts after it. */
  readonly cursor: ThreadId | undefined
  readonly bindingRetries: ReadonlyArray<BindingRetry>
}

/**
 * @internal The seek of `selectMaintenanceLane`: the first runnable head after `cursor`,
 * wrapping around, and the heads passed over before it (every head when none is runnable).
 * A head already `attempted` in this event is passed over: an event serves a Submission once.
 */
export const seekLane = (
  ledger: Ledger,
  reports: ReportIndex,
  start: LaneStart,
  now: number,
  attempted: ReadonlySet<SubmissionId> = new Set(),
): Effect.Effect<
  { readonly selected: SubmissionSnapshot | undefined; readonly visited: ReadonlyArray<SubmissionSnapshot> },
  LedgerError
> =>
  Effect.gen(function* () {
    const visited: Array<SubmissionSnapshot> = []
    let selected: SubmissionSnapshot | undefined
    yield* visitLanes(
      ledger,
      start.cursor === undefined ? undefined : { threadId: start.cursor, inclusive: false },
      (head) => {
        if (
          isEligibleHead(head, reports) &&
          !attempted.has(head.submissionId) &&
          pendingBindingWait(head, start.bindingRetries, now) === undefined
        ) {
          selected = head
          return true
        }
        visited.push(head)
        return false
      },
    )
    return { selected, visited }
  })

/**
 * @internal The next lane to serve: the first runnable head after the cursor in lane order,
 * wrapping around (a head is runnable when it is not a stable wait, not in a binding wait until
 * after now, and not yet attempted in this event). The seek reads lane heads one at a time and
 * stops at the first runnable one, so serving abundant work reads O(1) heads whatever the
 * number of lanes; only when no lane is runnable does it read every head.
 *
 * Every selection reads the stored binding waits in the "select maintenance lane" transaction,
 * which writes the cursor only when `persist` asks for it. The read also makes sure the
 * instance is still the Object's current one before each Attempt: storage refuses a replaced
 * instance, whose event then ends before it claims anything more.
 */
export const selectMaintenanceLane = (
  env: MaintenanceEnv,
  ledger: Ledger,
  reports: ReportIndex,
  start: LaneStart,
  options: {
    /** Write the cursor before the Attempt. */
    readonly persist: boolean
    readonly attempted: ReadonlySet<SubmissionId>
  },
): Effect.Effect<LaneSelection, DurableAlarmError | LedgerError> =>
  Effect.gen(function* () {
    const selectionTime = yield* Clock.currentTimeMillis
    const { selected } = yield* seekLane(ledger, reports, start, selectionTime, options.attempted)
    yield* env.hit("maintenance:select:before")
    let wroteCursor = false
    const selection = yield* env.transactRecord("select maintenance lane", (txn): LaneSelection => {
      const { state } = readMaintenanceState(txn)
      // An unchanged cursor is already durable: serving one lane again writes nothing.
      if (options.persist && selected !== undefined && selected.threadId !== state.lastServedThreadId) {
        writeMaintenanceState(
          txn,
          ThreadMaintenanceState.make({ ...state, lastServedThreadId: selected.threadId }),
        )
        wroteCursor = true
      }
      return { selected, stored: state.bindingRetries ?? [] }
    })
    // The persisted cursor moves the next incarnation past a head whose Attempt kills the Object
    // (a step out of memory or CPU): it must commit before that Attempt runs, and workerd commits
    // a turn's writes only once the turn ends, a turn the Attempt would otherwise share.
    if (wroteCursor) yield* commitTurn
    yield* env.hit("maintenance:select:after")
    return selection
  })

/**
 * @internal Commits the served head's binding wait: a new or longer wait after a binding
 * failure (or a replay the running code contradicts, whose message the wait keeps), otherwise
 * removal of a stale one. Returns every stored wait after the commit.
 */
export const recordBindingOutcome = (
  env: MaintenanceEnv,
  head: SubmissionSnapshot,
  stored: ReadonlyArray<BindingRetry>,
  failure: DurableBindingFailure | RunJournalError | undefined,
): Effect.Effect<ReadonlyArray<BindingRetry>, DurableAlarmError> =>
  Effect.gen(function* () {
    const previous = stored.find((wait) => wait.submissionId === head.submissionId)
    const next =
      failure === undefined
        ? undefined
        : nextBindingRetry(
            head,
            previous,
            yield* Clock.currentTimeMillis,
            failure._tag === "RunJournalError" ? failure.message : undefined,
          )
    if (next === undefined && previous === undefined) return stored
    yield* env.hit("maintenance:binding-retry:before")
    const written = yield* env.transactRecord("record submission binding retry", (txn) => {
      const { state } = readMaintenanceState(txn)
      const bindingRetries = [
        ...(state.bindingRetries ?? []).filter((wait) => wait.submissionId !== head.submissionId),
        ...(next === undefined ? [] : [next.retry]),
      ]
      writeMaintenanceState(txn, ThreadMaintenanceState.make({ ...state, bindingRetries }))
      return bindingRetries
    })
    yield* env.hit("maintenance:binding-retry:after")
    if (failure !== undefined && next !== undefined) {
      yield* next.report
        ? Effect.logError("Thread awaits a compatible binding; original work remains pending", failure)
        : Effect.logDebug("Thread binding retry remains pending", failure)
    }
    return written
  })
