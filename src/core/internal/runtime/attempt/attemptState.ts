/**
 * The mutable state of one Attempt and the checks it makes between steps: an accepted abort,
 * the cooperative yield deadline, and lease renewal.
 *
 * A context call that must end the Attempt records why in `stop` and interrupts the program
 * (an interruption, not a failure, so a program that catches `AgentFailure` cannot swallow
 * it); the Attempt reads `stop` once the program has returned.
 */
import { Cause, Clock, Effect, Exit, Option, Schema } from "effect"
import { type DurableWorkerFailure, RunJournalError } from "../shared/model.ts"
import {
  type Claim,
  type Fence,
  OwnershipLost,
  type ParkCheck,
  type SubmissionNotFound,
  type WaitRecord,
} from "../../ledger/model.ts"
import type { RuntimeFailpointLocation } from "../../../RuntimeFailpoint.ts"
import { utf8ByteLength } from "../../ledger/rules.ts"
import type { HistoryEntry } from "../../history/model.ts"
import { type RuntimeEnv, vanished } from "../shared/runtimeEnv.ts"

/** A timed wait the Attempt ends in: the park `parkTimed` makes, and the failpoint after it. @internal */
export interface TimedStop {
  readonly wait: WaitRecord
  readonly dueAt: number
  /** Records appended with the park (a failed attempt's, with what the Attempt staged). */
  readonly entries: ReadonlyArray<HistoryEntry>
  readonly after?: RuntimeFailpointLocation
  /** What may have arrived since the journal was read: then the row is left due at once. */
  readonly awaiting?: ParkCheck
}

/** Why an Attempt ended before its program returned. @internal */
export type AttemptStop =
  | { readonly _tag: "Yield" }
  | { readonly _tag: "Suspend"; readonly awaiting?: ParkCheck; readonly wait?: WaitRecord }
  | { readonly _tag: "Wait"; readonly park: TimedStop }
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "Abort" }
  | { readonly _tag: "Denied"; readonly note?: string }
  | { readonly _tag: "Failure"; readonly error: DurableWorkerFailure }

/** @internal */
export interface AttemptState {
  readonly env: RuntimeEnv
  /** The current Claim; renewal replaces it. */
  claim: Claim
  lastRenewal: number
  /** Calls that ran live in this Attempt; the first one always runs before a yield. */
  liveSteps: number
  readonly yieldAfter: number
  stop: AttemptStop | undefined
  /** Set once the Attempt released, parked or settled. */
  ended: boolean
  /** Set once the Attempt appended a record to the history. */
  recorded: boolean
  /**
   * Records the Attempt owes before its next one: `InputApplied` of a first Attempt waits for
   * the Attempt's first record (a step, a request, the settlement) and is stored with it, so it
   * costs no row of its own. An Attempt that ends without a record never applied its input.
   */
  staged: ReadonlyArray<HistoryEntry>
  /**
   * Set when durable work of the runtime inside the program (a storage call, a failpoint) or an
   * uncertain step's effect ended interrupted: the Attempt was cut as if its process died, so
   * an interrupted program is left for a later Attempt, not settled.
   */
  cut?: boolean
}

/** The owner fence of the Attempt. @internal */
export const ownerFence = (attempt: AttemptState): Fence => ({ _tag: "Owner", claim: attempt.claim })

/** The staged records followed by `entries`, and the Attempt no longer owes the staged ones. @internal */
export const takeStaged = (attempt: AttemptState, entries: ReadonlyArray<HistoryEntry>) => {
  const all = [...attempt.staged, ...entries]
  attempt.staged = []
  return all
}

/**
 * The staged records a park must journal: a taken event's `EventConsumed` or a fired timer's
 * `TimerFired`, with whatever was staged before it. A recovery or an event sender reads the
 * journal of a parked row to decide whether an event is left for its wait, so a consumption never
 * stays unjournaled across a park. A replay stages a fired timer again only while the row's wait
 * is that sleep's; a park moves the wait on, so a timer not journaled with it never would be. An
 * applied input alone may wait (a replay stages it again). @internal
 */
export const owedAtPark = (attempt: AttemptState): ReadonlyArray<HistoryEntry> =>
  attempt.staged.some((entry) => entry._tag === "EventConsumed" || entry._tag === "TimerFired")
    ? takeStaged(attempt, [])
    : []

/** Records why the Attempt stops (the first reason wins) and interrupts the program. @internal */
export const halt = (attempt: AttemptState, stop: AttemptStop): Effect.Effect<never> =>
  Effect.suspend(() => {
    attempt.stop ??= stop
    return Effect.interrupt
  })

/** Runs durable work for the program; a failure of it ends the Attempt. @internal */
export const guard = <A>(
  attempt: AttemptState,
  effect: Effect.Effect<A, DurableWorkerFailure | SubmissionNotFound>,
): Effect.Effect<A> =>
  Effect.catch(
    Effect.onInterrupt(effect, () =>
      Effect.sync(() => {
        attempt.cut = true
      }),
    ),
    (error) =>
      halt(attempt, {
        _tag: "Failure",
        error: error._tag === "SubmissionNotFound" ? vanished("AgentContext")(error) : error,
      }),
  )

/**
 * Runs the watch's durable work, marking the Attempt cut when that work ends interrupted of
 * itself, as a dead process's stand-in does (an interruption of the watch from outside never
 * returns here): the program then ends interrupted and is left for a later Attempt, not taken
 * for a program that interrupted itself.
 */
const watching = <A, E>(attempt: AttemptState, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.flatMap(Effect.exit(effect), (exit) => {
    if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) attempt.cut = true
    return exit
  })

/** A replay that contradicts the journal. @internal */
export const journalMismatch = (attempt: AttemptState, message: string): Effect.Effect<never> =>
  halt(attempt, {
    _tag: "Failure",
    error: new RunJournalError({ submissionId: attempt.claim.submissionId, message }),
  })

/** Extends the lease once `leaseRenewalInterval` has passed since the last renewal. @internal */
export const renewIfDue = (attempt: AttemptState, now: number) =>
  Effect.suspend(() => {
    const { settings, ledger } = attempt.env
    if (now - attempt.lastRenewal < settings.leaseRenewalInterval) return Effect.void
    return Effect.map(ledger.renew(attempt.claim, now + settings.ownershipLeaseDuration), (claim) => {
      attempt.claim = claim
      attempt.lastRenewal = now
    })
  })

/** Reads the row: `Abort` when an abort is accepted, a failure when the Claim is gone. @internal */
const observe = (attempt: AttemptState) =>
  Effect.gen(function* () {
    const { submissionId, attemptId, ownershipToken } = attempt.claim
    const row = yield* attempt.env.ledger.lookup(submissionId)
    if (Option.isNone(row) || row.value.ownership?.ownershipToken !== ownershipToken) {
      return Option.some<AttemptStop>({
        _tag: "Failure",
        error: new OwnershipLost({
          submissionId,
          attemptId,
          message: `attempt ${attemptId} no longer owns the submission`,
        }),
      })
    }
    return row.value.abortRequested ? Option.some<AttemptStop>({ _tag: "Abort" }) : Option.none()
  })

/** The check before a call runs live: abort, yield deadline, lease. @internal */
export const boundary = (attempt: AttemptState): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (attempt.stop !== undefined) return yield* halt(attempt, attempt.stop)
    const now = yield* Clock.currentTimeMillis
    const observed = yield* guard(attempt, observe(attempt))
    if (Option.isSome(observed)) return yield* halt(attempt, observed.value)
    if (attempt.liveSteps > 0 && now >= attempt.yieldAfter) return yield* halt(attempt, { _tag: "Yield" })
    yield* guard(attempt, renewIfDue(attempt, now))
  })

/**
 * Watches a running call: renews the lease when due and, for a call that may be cut short,
 * returns a stop on an accepted abort or a lost Claim. An uncertain call is never cut short.
 */
const watch = (attempt: AttemptState, interruptible: boolean): Effect.Effect<AttemptStop> =>
  Effect.gen(function* () {
    while (true) {
      yield* Effect.sleep(attempt.env.settings.abortPollInterval)
      const now = yield* Clock.currentTimeMillis
      if (!interruptible) {
        yield* Effect.ignore(watching(attempt, renewIfDue(attempt, now)))
        continue
      }
      const renewed = yield* Effect.result(watching(attempt, renewIfDue(attempt, now)))
      if (renewed._tag === "Failure") {
        const error = renewed.failure
        return {
          _tag: "Failure",
          error: error._tag === "SubmissionNotFound" ? vanished("AgentContext.watch")(error) : error,
        } satisfies AttemptStop
      }
      const observed = yield* Effect.result(watching(attempt, observe(attempt)))
      if (observed._tag === "Failure")
        return { _tag: "Failure", error: observed.failure } satisfies AttemptStop
      if (Option.isSome(observed.success)) return observed.success.value
    }
  })

/** Runs a live call under the watch; a stop from the watch interrupts the call and the program. @internal */
export const runWatched = <A, E>(
  attempt: AttemptState,
  effect: Effect.Effect<A, E>,
  interruptible: boolean,
) =>
  Effect.raceFirst(
    Effect.map(Effect.exit(effect), (exit) => ({ _tag: "Done" as const, exit })),
    Effect.map(watch(attempt, interruptible), (stop) => ({ _tag: "Stopped" as const, stop })),
  ).pipe(
    Effect.flatMap((outcome) =>
      outcome._tag === "Stopped" ? halt(attempt, outcome.stop) : Effect.succeed(outcome.exit),
    ),
  )

/** Whether a value is what `Schema.Json` (every record's value) accepts. @internal */
export const isJson = Schema.is(Schema.Json)

/**
 * Why `value` (`what` names it) cannot be stored, or `undefined` when it can: a value its
 * Schema encoded to something JSON cannot carry (`NaN`, an infinity, `undefined`, a class
 * instance), or one over `maxStoredValueBytes`. @internal
 */
export const unstorable = (attempt: AttemptState, what: string, value: Schema.Json): string | undefined => {
  if (!isJson(value)) return `${what} is not JSON (its Schema encoded a value JSON cannot carry)`
  const bytes = utf8ByteLength(JSON.stringify(value))
  const limit = attempt.env.settings.maxStoredValueBytes
  return bytes > limit ? `${what} is ${bytes} bytes; the limit is ${limit}` : undefined
}

/**
 * A message (a failure's, a reconcile's reason) as a record stores it: one over
 * `maxStoredValueBytes` is replaced by its size and its first 1,000 characters, or its record
 * could pass what one row holds and every pass fail to write it. @internal
 */
export const storableMessage = (attempt: AttemptState, message: string): string => {
  const refusal = unstorable(attempt, "the error", message)
  return refusal === undefined ? message : `${refusal}; it begins: ${message.slice(0, 1_000)}`
}
