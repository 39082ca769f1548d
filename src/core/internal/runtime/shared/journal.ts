/**
 * Pure reading of one Submission's canonical records: what recovery needs to classify it and
 * what a replaying Attempt needs at each call position.
 */
import type { HistoryEntry } from "../../history/model.ts"

type Entry<Tag extends HistoryEntry["_tag"]> = Extract<HistoryEntry, { readonly _tag: Tag }>

/** The records of one call position. @internal */
export interface JournalPosition {
  readonly completed?: Entry<"StepCompleted">
  readonly failed?: Entry<"StepFailed">
  readonly uncertainStarted?: Entry<"UncertainStepStarted">
  readonly unknownRecorded?: Entry<"UnknownOutcomeRecorded">
  readonly unknownResolved?: Entry<"UnknownOutcomeResolved">
  readonly approvalRequested?: Entry<"ApprovalRequested">
  readonly approvalResolved?: Entry<"ApprovalResolved">
  readonly childStarted?: Entry<"ChildStarted">
  readonly childAwaited?: Entry<"ChildAwaited">
  readonly inputJoined?: Entry<"InputJoined">
  /** The sleep at this position fired. */
  readonly timerFired?: Entry<"TimerFired">
  /** The event wait at this position took an event. */
  readonly eventConsumed?: Entry<"EventConsumed">
  /** The event wait at this position timed out. */
  readonly eventTimedOut?: Entry<"EventWaitTimedOut">
  /** The approval request at this position timed out. */
  readonly approvalTimedOut?: Entry<"ApprovalTimedOut">
  /** Failed attempts of a retried step, in order. */
  readonly attemptsFailed?: ReadonlyArray<Entry<"StepAttemptFailed">>
  /** The current run of an uncertain step ended in a failed attempt (a retry starts a new run). */
  readonly runFailed?: boolean
  /** Reconciles started for the current run of an uncertain step. */
  readonly reconcileAttempts?: number
  /** The last reconcile answer for the current run of an uncertain step. */
  readonly reconciled?: Entry<"ReconcileAnswered">
}

/** An uncertain step that started and has neither a result nor a resolution. @internal */
export interface OpenUncertain {
  readonly step: number
  readonly name: string
  /** Whether its Unknown Outcome is already recorded. */
  readonly recorded: boolean
  /** How many reconcile attempts its start allows (0: it has no reconcile). */
  readonly reconcileAttempts: number
  /** Reconciles started so far. */
  readonly reconciles: number
  /** The last reconcile answer that did not settle the outcome (`CannotTell` or `Failed`). */
  readonly lastAnswer?: Entry<"ReconcileAnswered">["answer"]
}

/** What recovery may do with an open uncertain step's reconcile at `now`. @internal */
export type ReconcileStatus =
  | { readonly _tag: "None" }
  | { readonly _tag: "Due" }
  | { readonly _tag: "Backoff"; readonly notBefore: number }
  | { readonly _tag: "Exhausted" }

/**
 * Whether an open uncertain step can be reconciled now, later, or only by a person: it has a
 * reconcile, attempts remain, no reconcile said "cannot tell", and a failed one's wait is over.
 * @internal
 */
export const reconcileStatus = (open: OpenUncertain, now: number): ReconcileStatus => {
  if (open.reconcileAttempts === 0) return { _tag: "None" }
  if (open.reconciles >= open.reconcileAttempts || open.lastAnswer?._tag === "CannotTell")
    return { _tag: "Exhausted" }
  if (open.lastAnswer?._tag === "Failed" && open.lastAnswer.retryAt > now)
    return { _tag: "Backoff", notBefore: open.lastAnswer.retryAt }
  return { _tag: "Due" }
}

/** First wait after a failed reconcile; it doubles per attempt up to `RECONCILE_MAX_DELAY_MILLIS`. @internal */
export const RECONCILE_BASE_DELAY_MILLIS = 1_000
/** @internal */
export const RECONCILE_MAX_DELAY_MILLIS = 60_000

/** The wait after the `attempt`-th reconcile (1-based) failed. @internal */
export const reconcileRetryDelay = (attempt: number): number =>
  Math.min(RECONCILE_MAX_DELAY_MILLIS, RECONCILE_BASE_DELAY_MILLIS * 2 ** (Math.max(1, attempt) - 1))

/** Whether a position's outcome is settled by a reconcile that found the effect happened. @internal */
export const reconciledHappened = (position: JournalPosition) =>
  position.reconciled?.answer._tag === "Happened" ? position.reconciled.answer : undefined

/** Whether a position's reconcile found the effect did not happen, so it runs again. @internal */
export const reconciledNotHappened = (position: JournalPosition) =>
  position.uncertainStarted !== undefined && position.reconciled?.answer._tag === "NotHappened"

/** What the records of one Submission say. @internal */
export interface Journal {
  /** The Thread sequence of the last record read, when it was read from stored records. */
  readonly through?: number
  readonly accepted: boolean
  readonly inputApplied: boolean
  readonly abortRecorded: boolean
  readonly settled: boolean
  readonly positions: ReadonlyMap<number, JournalPosition>
  readonly openUncertain?: OpenUncertain
  /** The step of an approval request without a decision. */
  readonly openApproval?: number
  /** Settlements of started children, by the step that started them. */
  readonly childSettled: ReadonlyMap<number, Entry<"ChildSettled">>
  /** A wait for a child that has not settled: the await's step and the child's. */
  readonly openChildWait?: { readonly step: number; readonly child: number }
  /** The kind of the latest wait the program parked on, if any. */
  readonly lastWait?: "approval" | "child"
  /** Submissions this one read as joined input. */
  readonly joined: ReadonlySet<string>
  /** The events received, in the order they arrived (a repeated id is recorded once). */
  readonly events: ReadonlyArray<Entry<"EventReceived">>
  /** The ids of the events a wait took. */
  readonly consumed: ReadonlySet<string>
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** Reads the records of one Submission, oldest first. @internal */
export const readJournal = (entries: Iterable<HistoryEntry>): Journal => {
  const positions = new Map<number, Mutable<JournalPosition>>()
  const at = (step: number) => {
    let position = positions.get(step)
    if (position === undefined) {
      position = {}
      positions.set(step, position)
    }
    return position
  }
  let accepted = false
  let inputApplied = false
  let abortRecorded = false
  let settled = false
  const childSettled = new Map<number, Entry<"ChildSettled">>()
  const joined = new Set<string>()
  const events: Array<Entry<"EventReceived">> = []
  const eventIds = new Set<string>()
  const consumed = new Set<string>()
  for (const entry of entries) {
    switch (entry._tag) {
      case "SubmissionAccepted":
        accepted = true
        break
      case "InputApplied":
        inputApplied = true
        break
      case "AbortRequested":
        abortRecorded = true
        break
      case "SubmissionSettled":
        settled = true
        break
      case "StepCompleted":
        at(entry.step).completed = entry
        break
      case "StepFailed":
        at(entry.step).failed = entry
        break
      case "UncertainStepStarted": {
        // A start after a "did not happen" reconcile begins a new run of the step.
        const position = at(entry.step)
        position.uncertainStarted = entry
        delete position.unknownRecorded
        delete position.reconciled
        delete position.runFailed
        position.reconcileAttempts = 0
        break
      }
      case "StepAttemptFailed": {
        const position = at(entry.step)
        position.attemptsFailed = [...(position.attemptsFailed ?? []), entry]
        if (position.uncertainStarted !== undefined) position.runFailed = true
        break
      }
      case "TimerFired":
        at(entry.step).timerFired = entry
        break
      case "ReconcileStarted": {
        const position = at(entry.step)
        position.reconcileAttempts = (position.reconcileAttempts ?? 0) + 1
        break
      }
      case "ReconcileAnswered":
        at(entry.step).reconciled = entry
        break
      case "UnknownOutcomeRecorded": {
        // Recorded again after a resolution: the resolution did not fit the step (its value
        // does not decode), so the outcome is open again for another one.
        const position = at(entry.step)
        position.unknownRecorded = entry
        delete position.unknownResolved
        break
      }
      case "UnknownOutcomeResolved":
        at(entry.step).unknownResolved = entry
        break
      case "ApprovalRequested":
        at(entry.step).approvalRequested = entry
        break
      case "ApprovalResolved":
        at(entry.step).approvalResolved = entry
        break
      case "ChildStarted":
        at(entry.step).childStarted = entry
        break
      case "ChildAwaited":
        at(entry.step).childAwaited = entry
        break
      case "ChildSettled":
        if (!childSettled.has(entry.step)) childSettled.set(entry.step, entry)
        break
      case "InputJoined":
        at(entry.step).inputJoined = entry
        for (const item of entry.joined) joined.add(item.submissionId)
        break
      case "EventReceived":
        if (!eventIds.has(entry.eventId)) {
          eventIds.add(entry.eventId)
          events.push(entry)
        }
        break
      case "EventConsumed":
        at(entry.step).eventConsumed = entry
        consumed.add(entry.eventId)
        break
      case "EventWaitTimedOut":
        at(entry.step).eventTimedOut = entry
        break
      case "ApprovalTimedOut":
        at(entry.step).approvalTimedOut = entry
        break
    }
  }
  let openUncertain: OpenUncertain | undefined
  let openApproval: number | undefined
  let openChildWait: { readonly step: number; readonly child: number } | undefined
  let lastWait: "approval" | "child" | undefined
  for (const step of [...positions.keys()].sort((a, b) => a - b)) {
    const position = positions.get(step) as JournalPosition
    if (position.approvalRequested !== undefined) lastWait = "approval"
    const awaited = position.childAwaited
    if (awaited !== undefined) {
      lastWait = "child"
      if (openChildWait === undefined && !childSettled.has(awaited.child))
        openChildWait = { step, child: awaited.child }
    }
    const started = position.uncertainStarted
    if (
      openUncertain === undefined &&
      started !== undefined &&
      position.runFailed !== true &&
      position.completed === undefined &&
      position.failed === undefined &&
      position.unknownResolved === undefined &&
      reconciledHappened(position) === undefined &&
      !reconciledNotHappened(position)
    ) {
      const answer = position.reconciled?.answer
      openUncertain = {
        step,
        name: started.name,
        recorded: position.unknownRecorded !== undefined,
        reconcileAttempts: started.reconcileAttempts ?? 0,
        reconciles: position.reconcileAttempts ?? 0,
        ...(answer === undefined ? {} : { lastAnswer: answer }),
      }
    }
    if (
      openApproval === undefined &&
      position.approvalRequested !== undefined &&
      position.approvalResolved === undefined &&
      position.approvalTimedOut === undefined
    ) {
      openApproval = step
    }
  }
  return {
    accepted,
    inputApplied,
    abortRecorded,
    settled,
    positions,
    ...(openUncertain === undefined ? {} : { openUncertain }),
    ...(openApproval === undefined ? {} : { openApproval }),
    childSettled,
    ...(openChildWait === undefined ? {} : { openChildWait }),
    ...(lastWait === undefined ? {} : { lastWait }),
    joined,
    events,
    consumed,
  }
}

/**
 * The earliest event named `event` that no wait took (`taken` adds the ids this Attempt took
 * and has not journaled yet). @internal
 */
export const firstUnconsumed = (
  journal: Journal,
  event: string,
  taken: ReadonlySet<string> = new Set(),
): Entry<"EventReceived"> | undefined =>
  journal.events.find(
    (received) =>
      received.event === event && !journal.consumed.has(received.eventId) && !taken.has(received.eventId),
  )

/** How many events named `event` the journal holds: a park checks for more. @internal */
export const eventsNamed = (journal: Journal, event: string): number =>
  journal.events.reduce((count, received) => count + (received.event === event ? 1 : 0), 0)

/** The journal of a Submission with no records. @internal */
export const EMPTY_JOURNAL: Journal = readJournal([])
