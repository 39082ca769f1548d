/**
 * Settlement: one ledger write that settles the row and records `SubmissionSettled` (after any
 * records the writer still owes) in the same transaction, so a Submission settles exactly once
 * with nothing for recovery to finish; the messages it owes other Objects join that
 * transaction. Rows an older release left `terminalizing` (reserved, then recorded, then
 * finalized in three steps) are finished from either side.
 */
import { Clock, Effect, type Schema } from "effect"
import { SettlementConflict } from "../shared/model.ts"
import type { SubmissionId, ThreadId } from "../../../Identifiers.ts"
import {
  type Fence,
  type InvalidTransition,
  Settlement,
  type SubmissionSnapshot,
} from "../../ledger/model.ts"
import type { HistoryEntry } from "../../history/model.ts"
import { settledEntry, unownedFence } from "../../ledger/rules.ts"
import { loadJournal, type RuntimeEnv } from "../shared/runtimeEnv.ts"
import { childAborts, settlementMarker } from "../children/childMessages.ts"

/** A new settlement at the current time. @internal */
export const makeSettlement = Effect.fnUntraced(function* (
  row: { readonly submissionId: SubmissionId; readonly threadId: ThreadId },
  ending:
    | { readonly outcome: "completed"; readonly output: Schema.Json }
    | { readonly outcome: "failed"; readonly error: string }
    | { readonly outcome: "aborted" },
) {
  const settledAt = yield* Clock.currentTimeMillis
  return new Settlement({ submissionId: row.submissionId, threadId: row.threadId, settledAt, ...ending })
})

/**
 * Finishes the reserved settlement of a `terminalizing` row: appends it (unless the history
 * already holds it) and finalizes the ledger. The row has no owner any more, so the append is
 * fenced by the epoch alone.
 * @internal
 */
export const finishReserved = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  row: SubmissionSnapshot,
  recorded: boolean,
) {
  const settlement = row.settlement
  if (settlement === undefined) {
    return yield* new SettlementConflict({
      submissionId: row.submissionId,
      message: `submission ${row.submissionId} is ${row.state} without a reserved settlement`,
    })
  }
  if (!recorded) {
    const now = yield* Clock.currentTimeMillis
    yield* env.history.append(
      row.submissionId,
      settledEntry(settlement),
      unownedFence(row, now, env.incarnation),
      now,
    )
  }
  yield* env.ledger.finalizeSettlement(row.submissionId)
  return settlement
})

/** A settling Submission, as far as its settlement concerns other Objects. @internal */
export type Settling = Pick<SubmissionSnapshot, "submissionId" | "threadId" | "idempotencyKey" | "parent">

/**
 * Settles `row` under `fence`, recording `preceding` and then the settlement. What the
 * settlement owes other Objects is enqueued in the same transaction: a child's settlement
 * marker for its parent, and an aborted Submission's aborts for the children it started that
 * have not settled (read from its journal). So a settled child is one whose marker is durable;
 * the outbox delivers it until the parent acknowledges it, with nothing left for recovery.
 * `onSettled` runs once the settlement holds: for an owner it marks the end of its ownership.
 * @internal
 */
export const settle = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  fence: Fence,
  row: Settling,
  settlement: Settlement,
  preceding: ReadonlyArray<HistoryEntry> = [],
  onSettled: () => void = () => {},
) {
  const aborts =
    settlement.outcome === "aborted"
      ? childAborts(row.submissionId, yield* loadJournal(env, row.submissionId))
      : []
  const messages = [...settlementMarker(row, settlement), ...aborts]
  if (messages.length === 0) {
    yield* env.ledger.settle(fence, settlement, preceding)
  } else {
    yield* env.outbox.settleWithMessages(fence, settlement, preceding, messages)
    if (row.parent !== undefined) yield* env.hit("child:after-marker-append")
  }
  onSettled()
  return settlement
})

/** Settles `aborted`, recording the accepted abort first unless it is recorded. @internal */
export const settleAborted = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  fence: Fence,
  row: Settling,
  abortRecorded: boolean,
  preceding: ReadonlyArray<HistoryEntry> = [],
  onSettled?: () => void,
) {
  const entries: ReadonlyArray<HistoryEntry> = abortRecorded
    ? preceding
    : [...preceding, { _tag: "AbortRequested" }]
  return yield* settle(
    env,
    fence,
    row,
    yield* makeSettlement(row, { outcome: "aborted" }),
    entries,
    onSettled,
  )
})

/** A settlement write refused because another one got there first. @internal */
export const asConflict = (refused: InvalidTransition): SettlementConflict =>
  new SettlementConflict({ submissionId: refused.submissionId, message: refused.message })
