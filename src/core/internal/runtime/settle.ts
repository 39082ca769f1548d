/**
 * Settlement in three durable steps: reserve it in the ledger (`terminalizing`), append it to
 * the canonical history, then finalize the ledger. Recovery finishes a settlement from either
 * side after a crash between them, so every Submission settles exactly once.
 */
import { Clock, Effect, type Schema } from "effect"
import { SettlementConflict } from "./model.ts"
import type { SubmissionId, ThreadId } from "../../Identifiers.ts"
import { type Fence, type InvalidTransition, Settlement, type SubmissionSnapshot } from "../ledger/model.ts"
import type { HistoryEntry } from "../history/model.ts"
import { unownedFence } from "../ledger/rules.ts"
import { loadJournal, type RuntimeEnv } from "./env.ts"
import { childAborts, settlementMarker } from "./children.ts"

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

const settledEntry = (settlement: Settlement): HistoryEntry => ({
  _tag: "SubmissionSettled",
  outcome: settlement.outcome,
  ...(settlement.output === undefined ? {} : { output: settlement.output }),
  ...(settlement.error === undefined ? {} : { error: settlement.error }),
  ...(settlement.host === undefined ? {} : { host: settlement.host }),
})

/**
 * Appends the reserved settlement of a `terminalizing` row (unless the history already holds
 * it) and finalizes the ledger. The row has no owner any more, so the append is fenced by the
 * epoch alone. The append carries the messages the settlement owes: a child's settlement
 * marker for its parent, an aborted parent's aborts for its unsettled children. A child with
 * a parent stays `terminalizing` until its parent acknowledged the marker (the delivery's
 * acknowledgement, or recovery, finalizes it); `recorded` means the caller already knows the
 * record is there and, for a child, that the marker was acknowledged.
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
    const aborts =
      settlement.outcome === "aborted"
        ? childAborts(row.submissionId, yield* loadJournal(env, row.submissionId))
        : []
    const messages = [...settlementMarker(row, settlement), ...aborts]
    const fence = unownedFence(row, now)
    if (messages.length === 0) {
      yield* env.history.append(row.submissionId, settledEntry(settlement), fence, now)
    } else {
      yield* env.outbox.appendWithMessages(row.submissionId, settledEntry(settlement), fence, now, messages)
      if (row.parent !== undefined) yield* env.hit("child:after-marker-append")
    }
  }
  yield* env.hit("terminalize:after-canonical-append")
  if (row.parent === undefined || recorded) yield* env.ledger.finalizeSettlement(row.submissionId)
  return settlement
})

/**
 * Reserves, records and finalizes a settlement under `fence`. `onReserved` runs once the
 * reservation holds: for an owner it marks the end of its ownership.
 * @internal
 */
export const settle = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  fence: Fence,
  settlement: Settlement,
  onReserved: () => void = () => {},
) {
  const reserved = yield* env.ledger.reserveSettlement(fence, settlement)
  onReserved()
  yield* env.hit("terminalize:after-reserve")
  return yield* finishReserved(env, reserved, false)
})

/** Settles `aborted`, recording the accepted abort in the history first. @internal */
export const settleAborted = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  fence: Fence,
  row: { readonly submissionId: SubmissionId; readonly threadId: ThreadId },
  abortRecorded: boolean,
  onReserved?: () => void,
) {
  if (!abortRecorded) {
    const now = yield* Clock.currentTimeMillis
    yield* env.history.append(row.submissionId, { _tag: "AbortRequested" }, fence, now)
  }
  return yield* settle(env, fence, yield* makeSettlement(row, { outcome: "aborted" }), onReserved)
})

/** A settlement write refused because another one got there first. @internal */
export const asConflict = (refused: InvalidTransition): SettlementConflict =>
  new SettlementConflict({ submissionId: refused.submissionId, message: refused.message })
