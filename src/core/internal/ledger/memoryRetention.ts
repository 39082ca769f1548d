/**
 * Retention on the in-memory ledger: settled rows ordered by when their age counts from, and
 * their removal, in one synchronous block, with their records held out of every read.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option } from "effect"
import type { IdempotencyKey, SubmissionId, ThreadId } from "../../Identifiers.ts"
import type { MemoryStore } from "./memoryStore.ts"
import type { RetentionOps } from "./parts.ts"
import { namesSettled } from "./retention.ts"

/** Builds the retention part over a store. @internal */
export const makeMemoryRetention = (
  store: MemoryStore,
  /** Removes the events still kept under a removed Submission's key. */
  forgetEarly: (threadId: ThreadId, idempotencyKey: IdempotencyKey) => void,
): RetentionOps => {
  /** Settled rows by when their age counts from, then by id (as the SQLite index orders ties). */
  const settledByStart = () =>
    [...store.pruneAfter.entries()].sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0))

  return {
    retentionStart: Effect.sync(() => Option.fromUndefinedOr(settledByStart()[0]?.[1])),

    retentionCandidates: spanned("SubmissionLedger.retentionCandidates")(function* (request) {
      return yield* Effect.sync(() =>
        settledByStart()
          .filter(([, start]) => start <= request.countedBefore)
          .slice(0, request.limit)
          .flatMap(([id]) => {
            const snapshot = store.rows.get(id)
            return snapshot === undefined
              ? []
              : [
                  {
                    snapshot,
                    laneTail: store.lanes.get(snapshot.threadId)?.lastSequence ?? snapshot.queueSequence,
                  },
                ]
          }),
      )
    }),

    deferRetention: spanned("SubmissionLedger.deferRetention")(function* (submissionIds, from) {
      yield* Effect.sync(() => {
        // Any settled row, dated or not, as the SQLite ledger's update of closed rows.
        for (const id of submissionIds) {
          if (store.rows.get(id)?.state === "settled") store.pruneAfter.set(id, from)
        }
      })
    }),

    removeSettled: spanned("SubmissionLedger.removeSettled")(function* (items) {
      return yield* Effect.sync(() => {
        const removed: Array<SubmissionId> = []
        for (const item of items) {
          const row = store.rows.get(item.submissionId)
          if (row === undefined || !namesSettled(item, row)) continue
          for (const record of store.historyBySubmission.get(item.submissionId) ?? [])
            store.removed.add(record)
          store.historyBySubmission.delete(item.submissionId)
          store.eventIds.delete(item.submissionId)
          store.rows.delete(item.submissionId)
          const lane = row === undefined ? undefined : store.lanes.get(row.threadId)
          if (lane !== undefined) lane.removed += 1
          store.pruneAfter.delete(item.submissionId)
          forgetEarly(row.threadId, row.idempotencyKey)
          removed.push(item.submissionId)
        }
        return removed
      })
    }),
  }
}
