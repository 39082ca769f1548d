/**
 * What the operator pages answer: a lane's Submissions a page at a time, each with why it is
 * where it is (`WaitingKind`), and the Object's Threads with their counts. Views of ledger rows
 * like `SubmissionStatus`: no ownership tokens, no stored inputs.
 */
import { Schema } from "effect"
import { ThreadId } from "../../core/Identifiers.ts"
import { EarlyEvents } from "../../core/internal/ledger/early.ts"
import type { Journal } from "../../core/internal/runtime/shared/journal.ts"
import {
  ScheduleId,
  ScheduleInfo,
  type SubmissionSnapshot,
  type SubmissionState,
} from "../../core/SubmissionLedger.ts"
import { SubmissionStatus } from "./statusViews.ts"

/**
 * Why a Submission is where it is, in one word an operator filters by: `settled`; `settling`
 * (its settlement is being written); `joined` (input of a running Submission, settles with
 * it); `unknown-outcome`; waits of a parked Submission (`approval`, `child`, `event`, `sleep`,
 * `retry` for a step's or a reconcile's backoff, `delayed` until a `notBefore`, or `suspended`
 * for any other wait); and in its lane, `running` (a live Attempt holds it), `runnable` (the
 * head, for the next pass) or `queued` (behind the head). `other` for a state this release
 * does not know.
 */
export const WaitingKind = Schema.Literals([
  "settled",
  "settling",
  "joined",
  "unknown-outcome",
  "approval",
  "child",
  "event",
  "sleep",
  "retry",
  "delayed",
  "suspended",
  "running",
  "runnable",
  "queued",
  "other",
])
export type WaitingKind = typeof WaitingKind.Type

/** The states a Submission of each kind can be in: what a filter by kind reads. @internal */
export const STATES_OF_KIND: { readonly [K in WaitingKind]: ReadonlyArray<SubmissionState> } = {
  settled: ["settled"],
  settling: ["terminalizing"],
  joined: ["joining", "joined"],
  "unknown-outcome": ["unknown"],
  approval: ["suspended", "waiting"],
  child: ["suspended"],
  event: ["suspended", "waiting"],
  sleep: ["waiting"],
  retry: ["waiting"],
  delayed: ["waiting"],
  suspended: ["suspended", "waiting"],
  running: ["running"],
  runnable: ["admitted", "ready", "running"],
  queued: ["admitted", "ready"],
  other: [],
}

/**
 * The kind of a row, from the row (a parked row's wait record), its lane's head, and (for a
 * suspended row without one) its journal.
 * @internal
 */
export const waitingKindOf = (
  row: SubmissionSnapshot,
  context: {
    readonly head: SubmissionSnapshot | undefined
    readonly journal?: Journal
    readonly now: number
  },
): WaitingKind => {
  switch (row.state) {
    case "settled":
      return "settled"
    case "terminalizing":
      return "settling"
    case "joining":
    case "joined":
      return "joined"
    case "unknown":
      return "unknown-outcome"
    case "waiting":
    case "suspended":
      switch (row.wait?._tag) {
        case "Approval":
          return "approval"
        case "Event":
          return "event"
        case "Sleep":
          return "sleep"
        case "Retry":
        case "Reconcile":
          return "retry"
        case "Delayed":
          return "delayed"
      }
      if (context.journal?.openApproval !== undefined) return "approval"
      if (context.journal?.openChildWait !== undefined) return "child"
      return "suspended"
    case "admitted":
    case "ready":
    case "running":
      if (context.head?.submissionId !== row.submissionId) return "queued"
      return row.ownership !== undefined && row.ownership.leaseExpiresAt > context.now
        ? "running"
        : "runnable"
    default:
      return "other"
  }
}

/** One Submission of a page, with why it is where it is. */
export class SubmissionSummary extends Schema.Class<SubmissionSummary>(
  "@effect-agent/platform-cloudflare/ThreadClient/SubmissionSummary",
)({
  submission: SubmissionStatus,
  waiting: WaitingKind,
}) {}

/** A page of one Thread's Submissions (`submissionPage`). */
export class SubmissionPage extends Schema.Class<SubmissionPage>(
  "@effect-agent/platform-cloudflare/ThreadClient/SubmissionPage",
)({
  submissions: Schema.Array(SubmissionSummary),
  /** Pass as `cursor` with the same filter for the next page; absent at the end. */
  next: Schema.optionalKey(Schema.Int),
  /** `queue`: unsettled Submissions in lane order, the head first; `newest-first`: by admission. */
  order: Schema.Literals(["queue", "newest-first"]),
}) {}

/** One Thread of an Object and what it holds. */
export class ThreadSummary extends Schema.Class<ThreadSummary>(
  "@effect-agent/platform-cloudflare/ThreadClient/ThreadSummary",
)({
  threadId: ThreadId,
  /** Every Submission the Thread admitted. */
  admitted: Schema.Int,
  /** Unsettled Submissions that queue or run. */
  open: Schema.Int,
  /** Unsettled Submissions parked in a wait (its head, when it waits). */
  parked: Schema.Int,
  /** Settled Submissions the Thread still holds: forgotten ones, and those retention removed, are not counted. */
  settled: Schema.Int,
  /** The unsettled counts stopped at their cap: `settled` is then an upper bound. */
  capped: Schema.Boolean,
  /** Its first unsettled Submission, if any. */
  head: Schema.optionalKey(SubmissionSummary),
}) {}

/**
 * The characters of stored JSON one page answers at most: well under the 32 MiB a call can
 * carry, even for values of two-byte characters. @internal
 */
export const PAGE_ANSWER_CHARS = 8_000_000

/**
 * The longest prefix of `items` whose JSON (`json` of each) stays within `PAGE_ANSWER_CHARS`,
 * and always the first item: a page of large values answers short rather than over what a call
 * carries. @internal
 */
export const withinAnswer = <A>(items: ReadonlyArray<A>, json: (item: A) => unknown): ReadonlyArray<A> => {
  let chars = 0
  for (let index = 0; index < items.length; index++) {
    chars += JSON.stringify(json(items[index] as A))?.length ?? 0
    if (index > 0 && chars > PAGE_ANSWER_CHARS) return items.slice(0, index)
  }
  return items
}

/** A page of an Object's schedules, by id (`schedulePage`). */
export class SchedulePage extends Schema.Class<SchedulePage>(
  "@effect-agent/platform-cloudflare/ThreadClient/SchedulePage",
)({
  schedules: Schema.Array(ScheduleInfo),
  /** Pass as `after` for the next page; absent at the end. */
  next: Schema.optionalKey(ScheduleId),
}) {}

/** A page of an Object's Threads (`threadPage`). */
export class ThreadPage extends Schema.Class<ThreadPage>(
  "@effect-agent/platform-cloudflare/ThreadClient/ThreadPage",
)({
  threads: Schema.Array(ThreadSummary),
  /** Pass as `after` for the next page; absent at the end. */
  next: Schema.optionalKey(ThreadId),
  /** Unsettled Submissions of the whole Object. */
  unsettled: Schema.Int,
  /**
   * On the first page, when the Object keeps any: the completions it keeps for workflow
   * executions not yet started, against its bounds, by execution id. `forget` of a key's
   * `submissionId` removes them.
   */
  early: Schema.optionalKey(EarlyEvents),
}) {}
