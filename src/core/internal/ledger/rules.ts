/**
 * The ledger's transition rules as pure functions of one stored row, shared by the SQLite and
 * the in-memory ledger so both decide every case the same way.
 *
 * The SQLite ledger encodes each rule's happy path in one guarded `UPDATE`; when that touches
 * no row it reads the row and asks these rules why (or whether the call was an idempotent
 * repeat). The in-memory ledger applies them directly.
 */
import { Result, Schema } from "effect"
import type { SubmissionId } from "../../Identifiers.ts"
import { Claim, InvalidTransition, Ownership, Settlement, SubmissionSnapshot } from "./model.ts"
import { canonicalJson } from "../digest.ts"
import type { AdmissionRequest, ClaimGrant, Fence, SubmissionState, WaitRecord } from "./model.ts"
import type { HistoryEntry } from "../history/model.ts"
import { type FenceError, fenceEpoch, hasLiveLease, verifyFence } from "./fences.ts"

// The fence checks are part of the rules every ledger applies.
export {
  appendFenceInstants,
  type FenceError,
  fenceEpoch,
  fenceInstants,
  fenceSubmissionId,
  hasLiveLease,
  nonFinite,
  notFound,
  unownedFence,
  verifyAppendFence,
  verifyFence,
} from "./fences.ts"

/** The outcome of a rule: keep the row as it is, or replace it. @internal */
export type Change =
  | { readonly _tag: "Unchanged"; readonly snapshot: SubmissionSnapshot }
  | { readonly _tag: "Update"; readonly next: SubmissionSnapshot }

/** @internal */
export const unchanged = (snapshot: SubmissionSnapshot): Change => ({ _tag: "Unchanged", snapshot })

/**
 * Builds the next row; `ownership: undefined` clears the ownership, `host: undefined` the host,
 * `dueAt: undefined` the due time and `wait: undefined` the wait. @internal
 */
export const update = (
  row: SubmissionSnapshot,
  patch: Partial<Omit<SubmissionSnapshot, "ownership" | "host" | "dueAt" | "wait">> & {
    readonly ownership?: Ownership | undefined
    readonly host?: SubmissionId | undefined
    readonly dueAt?: number | undefined
    readonly wait?: WaitRecord | undefined
  },
): Change => {
  const { ownership, settlement, readyAt, parent, host, dueAt, wait, ...rest } = { ...row, ...patch }
  return {
    _tag: "Update",
    next: new SubmissionSnapshot({
      ...rest,
      ...(ownership === undefined ? {} : { ownership }),
      ...(settlement === undefined ? {} : { settlement }),
      ...(readyAt === undefined ? {} : { readyAt }),
      ...(parent === undefined ? {} : { parent }),
      ...(host === undefined ? {} : { host }),
      ...(dueAt === undefined ? {} : { dueAt }),
      ...(wait === undefined ? {} : { wait }),
    }),
  }
}

/** @internal */
export const invalid = (row: SubmissionSnapshot, to: SubmissionState, message?: string): InvalidTransition =>
  new InvalidTransition({
    submissionId: row.submissionId,
    from: row.state,
    to,
    message: message ?? `a ${row.state} submission cannot become ${to}`,
  })

/** `admitted` → `ready`; a repeat on a ready row is a no-op. @internal */
export const markReadyRule = (
  row: SubmissionSnapshot,
  now: number,
): Result.Result<Change, InvalidTransition> => {
  if (row.state === "admitted") return Result.succeed(update(row, { state: "ready", readyAt: now }))
  if (row.state === "ready") return Result.succeed(unchanged(row))
  return Result.fail(invalid(row, "ready"))
}

/**
 * Whether a row parks its lane: a wait (`suspended`, `unknown`, `waiting`), or a row the due
 * path claimed in place (`running` with a due time; a lane claim clears the due time). Only the
 * lane's head is ever parked, and the lane's other rows wait behind it. @internal
 */
export const isParked = (row: Pick<SubmissionSnapshot, "state" | "dueAt">): boolean =>
  row.state === "suspended" ||
  row.state === "unknown" ||
  row.state === "waiting" ||
  (row.state === "running" && row.dueAt !== undefined)

/** Whether a parked row is in the due order: it parks its lane and has a due time. @internal */
export const isTimed = (row: Pick<SubmissionSnapshot, "state" | "dueAt">): boolean =>
  row.dueAt !== undefined && isParked(row)

/**
 * Whether recovery must look at a nonterminal row: an accepted abort (it owes its settlement),
 * a row left between the writes of an admission or a settlement by an older release
 * (`admitted`, `terminalizing`), and a join (`joining`, `joined`), which its host's settlement
 * finishes in a later write than its own. A wait nothing resolved, queued input, a row resumed
 * by its resolution and a running row are not: the first moves only by an outside actor, whose
 * resolution makes the row `ready` in the same transaction; the others are the claiming
 * Attempt's work (a Claim of an earlier incarnation is expired for a later one).
 * @internal
 */
export const isRecoveryCandidate = (row: Pick<SubmissionSnapshot, "state" | "abortRequested">): boolean =>
  row.state !== "settled" &&
  (row.abortRequested ||
    row.state === "admitted" ||
    row.state === "terminalizing" ||
    row.state === "joining" ||
    row.state === "joined")

/** Whether a journal record is the settlement of the child started at `step`. @internal */
export const settlesChild = (entry: HistoryEntry, step: number): boolean =>
  entry._tag === "ChildSettled" && entry.step === step

/** Whether `entry` records the arrival of an event named `event`. @internal */
export const receivesEvent = (entry: HistoryEntry, event: string): boolean =>
  entry._tag === "EventReceived" && entry.event === event

/**
 * Whether `claim` may take this lane head at `now` for the grant's incarnation: not parked,
 * `ready` and due (a row admitted with a later `notBefore` is not), or `running` with a Claim
 * that is not live. @internal
 */
export const isClaimable = (row: SubmissionSnapshot, now: number, incarnation?: string): boolean =>
  !isParked(row) &&
  ((row.state === "ready" && (row.dueAt === undefined || row.dueAt <= now)) ||
    (row.state === "running" && !hasLiveLease(row, now, incarnation)))

/**
 * The row after a Claim. A lane claim clears the due time; the due path's claim in place
 * keeps it (`dueAt`: the due time to keep). @internal
 */
export const claimRow = (row: SubmissionSnapshot, grant: ClaimGrant, dueAt?: number): SubmissionSnapshot => {
  const { dueAt: _dueAt, ...rest } = row
  return new SubmissionSnapshot({
    ...rest,
    state: "running",
    producerEpoch: row.producerEpoch + 1,
    ownership: new Ownership({
      attemptId: grant.attemptId,
      ownershipToken: grant.ownershipToken,
      leaseExpiresAt: grant.now + grant.leaseDurationMillis,
      ...(grant.incarnation === undefined ? {} : { incarnation: grant.incarnation }),
    }),
    ...(dueAt === undefined ? {} : { dueAt }),
  })
}

const withFence = <E = never>(
  fence: Fence,
  row: SubmissionSnapshot | undefined,
  rule: (row: SubmissionSnapshot) => Result.Result<Change, E>,
): Result.Result<Change, FenceError | E> => Result.flatMap(verifyFence(fence, row), rule)

/** The owner extends its lease. @internal */
export const renewRule = (claim: Claim, row: SubmissionSnapshot | undefined, leaseExpiresAt: number) =>
  withFence({ _tag: "Owner", claim }, row, (current) =>
    Result.succeed<Change>(
      update(current, {
        ownership: new Ownership({
          attemptId: claim.attemptId,
          ownershipToken: claim.ownershipToken,
          leaseExpiresAt,
          ...(claim.incarnation === undefined ? {} : { incarnation: claim.incarnation }),
        }),
      }),
    ),
  )

/** The Claim a running row grants. @internal */
export const claimOf = (row: SubmissionSnapshot, ownership: Ownership): Claim =>
  new Claim({
    submissionId: row.submissionId,
    threadId: row.threadId,
    attemptId: ownership.attemptId,
    ownershipToken: ownership.ownershipToken,
    producerEpoch: row.producerEpoch,
    leaseExpiresAt: ownership.leaseExpiresAt,
    inputPayload: row.inputPayload,
    ...(ownership.incarnation === undefined ? {} : { incarnation: ownership.incarnation }),
    ...(row.dueAt === undefined ? {} : { dueAt: row.dueAt }),
  })

/**
 * The owner ends its Attempt, leaving the row `ready` (`waiting` at its due time when the due
 * path claimed it in place, so its lane stays parked), or in a stable wait (`suspended`,
 * `unknown`) recording `wait`, with no due time. @internal
 */
export const relinquishRule = (
  fence: Fence,
  row: SubmissionSnapshot | undefined,
  to: "ready" | "suspended" | "unknown",
  wait?: WaitRecord,
) =>
  withFence(fence, row, (current) =>
    Result.succeed<Change>(
      to === "ready"
        ? update(current, { state: current.dueAt === undefined ? "ready" : "waiting", ownership: undefined })
        : update(current, { state: to, ownership: undefined, dueAt: undefined, wait }),
    ),
  )

/**
 * Recovery transitions. Taking a row away from `running` clears its ownership and advances the
 * epoch so a slow former owner is fenced out; a repeat of the target state is a no-op.
 * @internal
 */
export const transitionRule = (fence: Fence, row: SubmissionSnapshot | undefined, to: "ready" | "unknown") =>
  withFence(fence, row, (current): Result.Result<Change, InvalidTransition> => {
    if (current.state === to) return Result.succeed(unchanged(current))
    // Leaving a wait or an Attempt drops the due time: a ready row is claimed by its lane.
    if (current.state === "running") {
      return Result.succeed(
        update(current, {
          state: to,
          ownership: undefined,
          producerEpoch: current.producerEpoch + 1,
          dueAt: undefined,
        }),
      )
    }
    if (to === "ready") {
      if (current.state === "suspended" || current.state === "unknown" || current.state === "waiting") {
        return Result.succeed(update(current, { state: "ready", dueAt: undefined }))
      }
      if (current.state === "admitted" && fence._tag === "Unowned") {
        return Result.succeed(update(current, { state: "ready", readyAt: fence.now }))
      }
    } else if (current.state === "ready") {
      return Result.succeed(update(current, { state: "unknown", dueAt: undefined }))
    }
    return Result.fail(invalid(current, to))
  })

/** `joining` → `joined` once the host read it; a repeat is a no-op. @internal */
export const markJoinedRule = (row: SubmissionSnapshot): Result.Result<Change, InvalidTransition> => {
  if (row.state === "joining") return Result.succeed(update(row, { state: "joined" }))
  if (row.state === "joined") return Result.succeed(unchanged(row))
  return Result.fail(invalid(row, "joined"))
}

/**
 * `joining` → `ready`: the host ended before reading it, so it runs as ordinary queued input;
 * a repeat is a no-op.
 * @internal
 */
export const revertJoiningRule = (
  row: SubmissionSnapshot,
  now: number,
): Result.Result<Change, InvalidTransition> => {
  if (row.state === "joining") {
    return Result.succeed(update(row, { state: "ready", host: undefined, readyAt: row.readyAt ?? now }))
  }
  if (row.state === "ready" && row.host === undefined) return Result.succeed(unchanged(row))
  return Result.fail(invalid(row, "ready"))
}

/** Records the abort intent; settled rows stay as they are. @internal */
export const requestAbortRule = (row: SubmissionSnapshot): Change =>
  row.state === "settled" || row.abortRequested ? unchanged(row) : update(row, { abortRequested: true })

const encodeSettlement = Schema.encodeSync(Settlement)

/** Structural equality of two settlements, ignoring key order. @internal */
export const sameSettlement = (a: Settlement, b: Settlement): boolean =>
  canonicalJson(encodeSettlement(a)) === canonicalJson(encodeSettlement(b))

/**
 * Reserves the settlement. A repeat of the identical reservation at the same epoch succeeds
 * even though the reservation cleared the owner's ownership; a different one is refused.
 * @internal
 */
export const reserveRule = (
  fence: Fence,
  row: SubmissionSnapshot | undefined,
  settlement: Settlement,
): Result.Result<Change, FenceError | InvalidTransition> => {
  if (row !== undefined && settlement.submissionId !== row.submissionId) {
    return Result.fail(
      invalid(row, "terminalizing", `the settlement names submission ${settlement.submissionId}`),
    )
  }
  if (row !== undefined && settlement.threadId !== row.threadId) {
    return Result.fail(invalid(row, "terminalizing", `the settlement names thread ${settlement.threadId}`))
  }
  if (row?.state === "terminalizing" && row.producerEpoch === fenceEpoch(fence)) {
    return row.settlement !== undefined && sameSettlement(row.settlement, settlement)
      ? Result.succeed(unchanged(row))
      : Result.fail(invalid(row, "terminalizing", "a different settlement is already reserved"))
  }
  return withFence(fence, row, (current): Result.Result<Change, InvalidTransition> =>
    current.state === "terminalizing" || current.state === "settled"
      ? Result.fail(invalid(current, "terminalizing"))
      : Result.succeed(update(current, { state: "terminalizing", settlement, ownership: undefined })),
  )
}

/**
 * Settles in one write (the settlement record is appended in the same transaction): any
 * nonterminal state but `terminalizing` → `settled`. Repeating the identical settlement on the
 * settled row returns it; anything else is refused.
 * @internal
 */
export const settleRule = (
  fence: Fence,
  row: SubmissionSnapshot | undefined,
  settlement: Settlement,
): Result.Result<Change, FenceError | InvalidTransition> => {
  if (
    row !== undefined &&
    (settlement.submissionId !== row.submissionId || settlement.threadId !== row.threadId)
  ) {
    return Result.fail(
      invalid(row, "settled", `the settlement names ${settlement.submissionId} of ${settlement.threadId}`),
    )
  }
  if (row?.state === "settled") {
    return row.settlement !== undefined && sameSettlement(row.settlement, settlement)
      ? Result.succeed(unchanged(row))
      : Result.fail(invalid(row, "settled", "the submission is already settled"))
  }
  return withFence(fence, row, (current): Result.Result<Change, InvalidTransition> =>
    current.state === "terminalizing"
      ? Result.fail(invalid(current, "settled", "a settlement is already reserved"))
      : Result.succeed(update(current, { state: "settled", settlement, ownership: undefined })),
  )
}

/** `terminalizing` → `settled`; a repeat on a settled row is a no-op. @internal */
export const finalizeRule = (row: SubmissionSnapshot): Result.Result<Change, InvalidTransition> => {
  if (row.state === "terminalizing") return Result.succeed(update(row, { state: "settled" }))
  if (row.state === "settled") return Result.succeed(unchanged(row))
  return Result.fail(invalid(row, "settled"))
}

/** UTF-8 length of a string without allocating its encoding. @internal */
export const utf8ByteLength = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        i++
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}

/** The canonical record of a settlement. @internal */
export const settledEntry = (settlement: Settlement): HistoryEntry => ({
  _tag: "SubmissionSettled",
  outcome: settlement.outcome,
  ...(settlement.output === undefined ? {} : { output: settlement.output }),
  ...(settlement.error === undefined ? {} : { error: settlement.error }),
  ...(settlement.host === undefined ? {} : { host: settlement.host }),
})

/**
 * The canonical record of an admission, naming a child's parent, a join's host, a delayed
 * Submission's `notBefore` and a schedule's occurrence. @internal
 */
export const acceptedEntry = (
  row: Pick<SubmissionSnapshot, "agentId" | "agentDigest" | "parent" | "host">,
  input: Schema.Json,
  admitted: Pick<AdmissionRequest, "notBefore" | "schedule" | "now"> = { now: 0 },
): HistoryEntry => ({
  _tag: "SubmissionAccepted",
  agentId: row.agentId,
  agentDigest: row.agentDigest,
  input,
  ...(row.parent === undefined ? {} : { parent: row.parent }),
  ...(row.host === undefined ? {} : { host: row.host }),
  ...(admitted.notBefore === undefined || admitted.notBefore <= admitted.now
    ? {}
    : { notBefore: admitted.notBefore }),
  ...(admitted.schedule === undefined ? {} : { schedule: admitted.schedule }),
})

/** Whether a join's host is still a lane head that takes joins: live, not settling, not aborting. @internal */
export const takesJoins = (host: SubmissionSnapshot | undefined): boolean =>
  host !== undefined &&
  !host.abortRequested &&
  (host.state === "ready" ||
    host.state === "running" ||
    host.state === "suspended" ||
    host.state === "waiting" ||
    host.state === "unknown")
