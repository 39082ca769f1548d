/**
 * The in-memory canonical history. It shares the in-memory ledger's store, so an append checks
 * the fence and adds the record in one synchronous block that no fiber can interleave with.
 */
import { spanned } from "../spanned.ts"
import { Effect, Option, Result } from "effect"
import { ThreadStoreError } from "../runtime/shared/model.ts"
import type { ThreadHistory } from "../../ThreadHistory.ts"
import { SubmissionLedger } from "../../SubmissionLedger.ts"
import { appendOne, encodeEntry, feedOptions, foreignFence, pageOptions, requireInstant } from "./codec.ts"
import { appendNow, checkFenceNow, kept, type MemoryStore, memoryStoreOf } from "../ledger/memoryStore.ts"
import type { AppendFence } from "../ledger/model.ts"
import type { HistoryEntry } from "./model.ts"
import type { SubmissionId } from "../../Identifiers.ts"

/**
 * Checks an append and adds its records in one synchronous block with the fence check, running
 * `alongside` in the same block (an outbox inserts its messages there). @internal
 */
export const appendInBlock = (
  store: MemoryStore,
  operation: string,
  append: {
    readonly submissionId: SubmissionId
    readonly entries: ReadonlyArray<HistoryEntry>
    readonly fence: AppendFence
    readonly now: number
  },
  alongside: () => void = () => {},
) =>
  Effect.gen(function* () {
    const { submissionId, entries, fence, now } = append
    yield* requireInstant(operation, now)
    const foreign = foreignFence(submissionId, fence)
    if (foreign !== undefined) return yield* foreign
    if (entries.length === 0) {
      return yield* new ThreadStoreError({ operation, message: "an append needs at least one record" })
    }
    const stored = yield* Effect.forEach(entries, (entry) =>
      Effect.map(encodeEntry(operation, entry), (encoded) => encoded.stored),
    )
    return yield* Effect.suspend(() =>
      Effect.fromResult(
        Result.map(checkFenceNow(store, fence), (snapshot) => {
          const records = appendNow(store, snapshot.threadId, submissionId, stored, now)
          alongside()
          return records
        }),
      ),
    )
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

  const appendAll: typeof ThreadHistory.Service.appendAll = spanned("ThreadHistory.append")(
    function* (submissionId, entries, fence, now) {
      return yield* appendInBlock(store, "ThreadHistory.append", { submissionId, entries, fence, now })
    },
  )

  const service: typeof ThreadHistory.Service = {
    append: appendOne(appendAll),

    appendAll,

    forSubmission: spanned("ThreadHistory.forSubmission")(function* (submissionId) {
      return yield* Effect.sync(() => [...(store.historyBySubmission.get(submissionId) ?? [])])
    }),

    forSubmissionAfter: spanned("ThreadHistory.forSubmissionAfter")(function* (submissionId, after) {
      return yield* Effect.sync(() => {
        const own = store.historyBySubmission.get(submissionId) ?? []
        return {
          records: own.filter((record) => record.sequence > after),
          lastSequence: own.at(-1)?.sequence ?? 0,
        }
      })
    }),

    eventReceived: (submissionId, eventId) =>
      Effect.sync(() => Option.fromUndefinedOr(store.eventIds.get(submissionId)?.get(eventId))),

    page: spanned("ThreadHistory.page")(function* (threadId, options) {
      const { after, limit } = yield* pageOptions(options)
      // Sequences are 1-based and gap-free, so `after` is also the array offset.
      const records = kept(store, (store.history.get(threadId) ?? []).slice(after))
      const slice = records.slice(0, limit)
      const last = slice[slice.length - 1]
      return limit < records.length && last !== undefined
        ? { records: slice, next: last.sequence }
        : { records: slice }
    }),

    feed: spanned("ThreadHistory.feed")(function* (options) {
      const { after, limit, kinds } = yield* feedOptions(options)
      const covered = store.historyFeed
        .slice(after)
        .map((record, index) => ({ position: after + index + 1, record }))
        .filter((entry) => !store.removed.has(entry.record))
        .slice(0, limit)
      const entries =
        kinds === undefined ? covered : covered.filter((entry) => kinds.has(entry.record.entry._tag))
      return { entries, last: covered[covered.length - 1]?.position ?? after }
    }),

    feedEnd: Effect.sync(() => store.historyFeed.length),
  }
  return service
})
