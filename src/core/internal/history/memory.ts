/**
 * The in-memory canonical history. It shares the in-memory ledger's store, so an append checks
 * the fence and adds the record in one synchronous block that no fiber can interleave with.
 */
import { Effect, Result } from "effect"
import { ThreadStoreError } from "../runtime/model.ts"
import type { ThreadHistory } from "../../ThreadHistory.ts"
import { SubmissionLedger } from "../../SubmissionLedger.ts"
import { encodeEntry, foreignFence, pageOptions, requireInstant } from "./codec.ts"
import { type HistoryEntry, HistoryRecord } from "./model.ts"
import { checkFenceNow, type MemoryStore, memoryStoreOf } from "../ledger/memory.ts"
import type { AppendFence } from "../ledger/model.ts"
import type { SubmissionId } from "../../Identifiers.ts"

/**
 * Checks the fence and adds the record, synchronously: nothing can interleave with it, so a
 * caller may add further writes to the same block. @internal
 */
export const appendNow = (
  store: MemoryStore,
  submissionId: SubmissionId,
  entry: HistoryEntry,
  fence: AppendFence,
  now: number,
) =>
  Result.map(checkFenceNow(store, fence), (snapshot) => {
    const records = store.history.get(snapshot.threadId) ?? []
    const record = new HistoryRecord({
      threadId: snapshot.threadId,
      sequence: records.length + 1,
      submissionId,
      recordedAt: now,
      entry,
    })
    records.push(record)
    store.history.set(snapshot.threadId, records)
    const own = store.historyBySubmission.get(submissionId) ?? []
    own.push(record)
    store.historyBySubmission.set(submissionId, own)
    store.historyFeed.push(record)
    return record
  })

/** Builds the in-memory history over the in-memory ledger's store. @internal */
export const makeMemoryHistory = Effect.gen(function* () {
  const ledger = yield* SubmissionLedger
  const store = memoryStoreOf(ledger)
  if (store === undefined) {
    return yield* new ThreadStoreError({
      operation: "ThreadHistory.layerMemory",
      message: "the in-memory history needs the in-memory ledger (SubmissionLedger.layerMemory)",
    })
  }

  const service: typeof ThreadHistory.Service = {
    append: Effect.fn("ThreadHistory.append")(function* (submissionId, entry, fence, now) {
      yield* requireInstant("ThreadHistory.append", now)
      const foreign = foreignFence(submissionId, fence)
      if (foreign !== undefined) return yield* foreign
      const { stored } = yield* encodeEntry("ThreadHistory.append", entry)
      return yield* Effect.suspend(() =>
        Effect.fromResult(appendNow(store, submissionId, stored, fence, now)),
      )
    }),

    forSubmission: Effect.fn("ThreadHistory.forSubmission")(function* (submissionId) {
      return yield* Effect.sync(() => [...(store.historyBySubmission.get(submissionId) ?? [])])
    }),

    page: Effect.fn("ThreadHistory.page")(function* (threadId, options) {
      const { after, limit } = yield* pageOptions(options)
      const records = store.history.get(threadId) ?? []
      // Sequences are 1-based and gap-free, so `after` is also the array offset.
      const slice = records.slice(after, after + limit)
      const last = slice[slice.length - 1]
      return after + limit < records.length && last !== undefined
        ? { records: slice, next: last.sequence }
        : { records: slice }
    }),

    feed: Effect.fn("ThreadHistory.feed")(function* (options) {
      const { after, limit } = yield* pageOptions(options)
      const entries = store.historyFeed
        .slice(after, after + limit)
        .map((record, index) => ({ position: after + index + 1, record }))
      return { entries, last: entries[entries.length - 1]?.position ?? after }
    }),

    feedEnd: Effect.sync(() => store.historyFeed.length),
  }
  return service
})
