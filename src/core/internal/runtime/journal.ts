/**
 * Pure reading of one Submission's canonical records: what recovery needs to classify it and
 * what a replaying Attempt needs at each call position.
 */
import type { HistoryEntry } from "../history/model.ts"

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
}

/** An uncertain step that started and has neither a result nor a resolution. @internal */
export interface OpenUncertain {
  readonly step: number
  readonly name: string
  /** Whether its Unknown Outcome is already recorded. */
  readonly recorded: boolean
}

/** What the records of one Submission say. @internal */
export interface Journal {
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
      case "UncertainStepStarted":
        at(entry.step).uncertainStarted = entry
        break
      case "UnknownOutcomeRecorded":
        at(entry.step).unknownRecorded = entry
        break
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
      position.completed === undefined &&
      position.failed === undefined &&
      position.unknownResolved === undefined
    ) {
      openUncertain = { step, name: started.name, recorded: position.unknownRecorded !== undefined }
    }
    if (
      openApproval === undefined &&
      position.approvalRequested !== undefined &&
      position.approvalResolved === undefined
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
  }
}

/** The journal of a Submission with no records. @internal */
export const EMPTY_JOURNAL: Journal = readJournal([])
