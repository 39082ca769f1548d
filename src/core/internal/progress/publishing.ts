/**
 * The ledger, the history and the outbox as the progress hub sees them: each of their writes
 * publishes the Submission it settled or moved once it succeeds, so a waiter is woken whichever
 * caller wrote (an Attempt, recovery, a resolution, a routed call from another Object). Every
 * method is classified below, so a new one cannot be added without deciding whether it moves a
 * Submission. With the default hub, the services are returned unchanged. Only the SQLite
 * layers publish: the in-memory history finds its ledger's store by the ledger's identity.
 * @internal
 */
import { Effect, Option } from "effect"
import type { MessageOutbox } from "../../MessageOutbox.ts"
import { ProgressHub } from "../../ProgressHub.ts"
import type { SubmissionId } from "../../Identifiers.ts"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { ThreadHistory } from "../../ThreadHistory.ts"
import type { AppendFence } from "../ledger/model.ts"
import { inertProgressHub } from "./hub.ts"

/** The Submission a successful call moved, from its arguments and its result. */
type Moved<F> = F extends (...args: infer Args) => Effect.Effect<infer A, infer _E, infer _R>
  ? (args: Args, result: A) => SubmissionId | undefined
  : never

/**
 * Per method: which Submission a successful call moves, or `"none"` for reads and for writes no
 * waiter sees (a lease renewal, the outbox's own bookkeeping).
 */
type Movements<S> = { readonly [K in keyof S]: Moved<S[K]> | "none" }

const fenced = (fence: AppendFence): SubmissionId =>
  fence._tag === "Owner" ? fence.claim.submissionId : fence.submissionId

type Ledger = SubmissionLedger["Service"]
type History = ThreadHistory["Service"]
type Outbox = MessageOutbox["Service"]

const ledgerMovements: Movements<Ledger> = {
  admit: (_, admission) => admission.snapshot.submissionId,
  checkAdmission: "none",
  beginIncarnation: "none",
  markReady: ([submissionId]) => submissionId,
  lookup: "none",
  lookupByKey: "none",
  head: "none",
  countNonterminal: "none",
  claim: (_, claim) => Option.getOrUndefined(claim)?.submissionId,
  // The lease is not part of what a waiter reads.
  renew: "none",
  release: ([claim]) => claim.submissionId,
  park: ([claim]) => claim.submissionId,
  parkTimed: ([fence]) => fenced(fence),
  claimDue: (_, claim) => Option.getOrUndefined(claim)?.submissionId,
  wake: ([fence]) => fence.submissionId,
  deferHead: ([fence]) => fence.submissionId,
  nextDue: "none",
  earliestDue: "none",
  transition: ([fence]) => fenced(fence),
  markJoined: ([submissionId]) => submissionId,
  revertJoining: ([submissionId]) => submissionId,
  joinsOf: "none",
  requestAbort: ([submissionId]) => submissionId,
  reserveSettlement: ([fence]) => fenced(fence),
  settle: ([fence]) => fenced(fence),
  finalizeSettlement: ([submissionId]) => submissionId,
  checkFence: "none",
  scanNonterminal: "none",
  scanRecoveryCandidates: "none",
  laneHeads: "none",
  nextLaneHead: "none",
  countAllNonterminal: "none",
  scanAll: "none",
  lanePage: "none",
  threadIds: "none",
  queryLane: "none",
  laneCounts: "none",
  threadPage: "none",
  // Kept events move no Submission: the admission that takes them publishes.
  keepEarly: "none",
  earlyEvents: "none",
  forgetEarly: "none",
  retentionStart: "none",
  retentionCandidates: "none",
  // Retention only touches settled Submissions: a waiter has had their settlement already.
  deferRetention: "none",
  removeSettled: "none",
  putSchedule: "none",
  removeSchedule: "none",
  lookupSchedule: "none",
  listSchedules: "none",
  schedulePage: "none",
  dueSchedules: "none",
  nextOccurrenceAt: "none",
  advanceSchedule: (_, advanced) => (advanced._tag === "Admitted" ? advanced.submissionId : undefined),
}

const historyMovements: Movements<History> = {
  append: ([submissionId]) => submissionId,
  appendAll: ([submissionId]) => submissionId,
  forSubmission: "none",
  forSubmissionAfter: "none",
  eventReceived: "none",
  page: "none",
  feed: "none",
  feedEnd: "none",
}

// The outbox writes through the ledger and the history, which publish already; it is classified
// too, so that a write of its own cannot go unpublished. Repeated publications in one turn merge.
const outboxMovements: Movements<Outbox> = {
  appendWithMessages: ([submissionId]) => submissionId,
  settleWithMessages: ([fence]) => fenced(fence),
  enqueue: "none",
  due: "none",
  nextDue: "none",
  retry: "none",
  acknowledge: "none",
  lookup: "none",
  rememberAnswer: "none",
  answerOf: "none",
  messagesOf: "none",
  removeSettled: "none",
}

/**
 * Writes that move a Submission without being able to settle it: a settlement waiter sleeps
 * through them (a Claim, a park, a journal record, an admission). Everything else that moves a
 * Submission wakes every waiter.
 */
const CANNOT_SETTLE: ReadonlySet<string> = new Set([
  "admit",
  "markReady",
  "claim",
  "release",
  "park",
  "parkTimed",
  "claimDue",
  "wake",
  "deferHead",
  "requestAbort",
  "reserveSettlement",
  "advanceSchedule",
  "append",
  "appendAll",
  "appendWithMessages",
])

const publishing =
  <S extends object>(movements: Movements<S>) =>
  (service: S): Effect.Effect<S> =>
    Effect.gen(function* () {
      const hub = yield* ProgressHub
      if (hub === inertProgressHub) return service
      const decorated: Record<string, unknown> = { ...(service as Record<string, unknown>) }
      for (const [key, moved] of Object.entries(movements) as Array<[string, unknown]>) {
        if (typeof moved !== "function") continue
        const method = (service as Record<string, unknown>)[key] as (
          ...args: ReadonlyArray<unknown>
        ) => Effect.Effect<unknown, unknown, unknown>
        const movedBy = moved as (args: ReadonlyArray<unknown>, result: unknown) => SubmissionId | undefined
        const publication = CANNOT_SETTLE.has(key) ? { settles: false } : undefined
        decorated[key] = (...args: ReadonlyArray<unknown>) =>
          Effect.tap(method(...args), (result) => {
            const submissionId = movedBy(args, result)
            return submissionId === undefined ? Effect.void : hub.publish(submissionId, publication)
          })
      }
      return decorated as S
    })

/** The ledger, publishing each Submission its writes move. @internal */
export const publishingLedger: (ledger: Ledger) => Effect.Effect<Ledger> = publishing(ledgerMovements)

/** The history, publishing the Submission of each append. @internal */
export const publishingHistory: (history: History) => Effect.Effect<History> = publishing(historyMovements)

/** The outbox, publishing the Submission of each append or settlement it makes. @internal */
export const publishingOutbox: (outbox: Outbox) => Effect.Effect<Outbox> = publishing(outboxMovements)
