/**
 * The rules of timed waits, shared by both ledgers like `rules.ts`: parking a row until a due
 * time, claiming a due row in place, ending a wait early, and parking a queued head admitted
 * with a later `notBefore`. Each is a pure function of the stored row.
 */
import { Option, Result } from "effect"
import type { ClaimGrant, Fence, InputFence, SubmissionSnapshot, UnownedFence, WaitRecord } from "./model.ts"
import type { InvalidTransition } from "./model.ts"
import { type FenceError, hasLiveLease, verifyAppendFence, verifyFence } from "./fences.ts"
import { type Change, claimRow, invalid, isParked, isTimed, unchanged, update } from "./rules.ts"

/**
 * Parks a row until `dueAt` with `wait`: the owner's running row, or, under a recovery fence, a
 * running row whose lease is not live (the epoch advances to fence out its former owner), an
 * `unknown` row or a `waiting` one. @internal
 */
export const parkTimedRule = (
  fence: Fence,
  row: SubmissionSnapshot | undefined,
  dueAt: number,
  wait: WaitRecord,
): Result.Result<Change, FenceError | InvalidTransition> =>
  Result.flatMap(verifyFence(fence, row), (current) => {
    const parked = { state: "waiting" as const, ownership: undefined, dueAt, wait }
    if (current.state === "running") {
      return Result.succeed(
        update(current, {
          ...parked,
          producerEpoch: current.producerEpoch + (fence._tag === "Unowned" ? 1 : 0),
        }),
      )
    }
    if (fence._tag === "Unowned" && (current.state === "unknown" || current.state === "waiting")) {
      return Result.succeed(update(current, parked))
    }
    return Result.fail(invalid(current, "waiting"))
  })

/**
 * The row after the due path claims it in place, or `None`: a `waiting` row due at the grant's
 * `now`, or a `running` one whose Claim is not live, taken over with its due time moved to the
 * grant's `now`. @internal
 */
export const claimDueRule = (
  row: SubmissionSnapshot | undefined,
  grant: ClaimGrant,
): Option.Option<SubmissionSnapshot> => {
  if (row === undefined || !isTimed(row) || row.dueAt === undefined) return Option.none()
  if (row.state === "waiting" && row.dueAt <= grant.now) return Option.some(claimRow(row, grant, row.dueAt))
  if (row.state === "running" && !hasLiveLease(row, grant.now, grant.incarnation))
    return Option.some(claimRow(row, grant, grant.now))
  return Option.none()
}

/** Ends a parked wait early: due at `dueAt`, still parked. @internal */
export const wakeRule = (
  fence: InputFence,
  row: SubmissionSnapshot | undefined,
  dueAt: number,
): Result.Result<Change, FenceError | InvalidTransition> =>
  Result.flatMap(verifyAppendFence(fence, row), (current) =>
    (current.state === "suspended" || current.state === "waiting") && isParked(current)
      ? Result.succeed(update(current, { state: "waiting", dueAt }))
      : Result.fail(invalid(current, "waiting", `a ${current.state} submission has no wait to end`)),
  )

/**
 * Parks an open head whose `notBefore` is later than the fence's `now`; a repeat on the waiting
 * row changes nothing. `isHead`: no open row precedes it in its lane. @internal
 */
export const deferHeadRule = (
  fence: UnownedFence,
  row: SubmissionSnapshot | undefined,
  isHead: boolean,
): Result.Result<Change, FenceError | InvalidTransition> =>
  Result.flatMap(verifyFence(fence, row), (current) => {
    if (current.state === "waiting" && current.wait?._tag === "Delayed")
      return Result.succeed(unchanged(current))
    if (current.state !== "ready" || isParked(current) || !isHead)
      return Result.fail(invalid(current, "waiting", `${current.submissionId} is not a queued lane head`))
    if (current.dueAt === undefined || current.dueAt <= fence.now)
      return Result.fail(invalid(current, "waiting", `${current.submissionId} is due: it runs now`))
    return Result.succeed(update(current, { state: "waiting" }))
  })

/** Due order: by due time, then by Submission id. @internal */
export const dueOrder = (
  a: { readonly dueAt: number; readonly submissionId: string },
  b: { readonly dueAt: number; readonly submissionId: string },
): number =>
  a.dueAt !== b.dueAt
    ? a.dueAt - b.dueAt
    : a.submissionId < b.submissionId
      ? -1
      : a.submissionId > b.submissionId
        ? 1
        : 0
