/**
 * Encoding of history entries and decoding of stored records, shared by both histories so
 * that each returns exactly what survives a round trip through storage.
 */
import { Effect, Schema } from "effect"
import { ThreadStoreError } from "../runtime/shared/model.ts"
import { FenceRejected } from "../ledger/model.ts"
import type { AppendFence } from "../ledger/model.ts"
import { HISTORY_ENTRY_KINDS, HistoryEntry, type HistoryEntryKind, HistoryRecord } from "./model.ts"
import { fenceEpoch, fenceSubmissionId } from "../ledger/rules.ts"
import type { SubmissionId } from "../../Identifiers.ts"

const entryJson = Schema.fromJsonString(HistoryEntry)
const encodeEntryJson = Schema.encodeEffect(entryJson)
const decodeEntryJson = Schema.decodeUnknownEffect(entryJson)
const decodeRecordUnknown = Schema.decodeUnknownEffect(HistoryRecord)

/** @internal */
export const historyError = (operation: string, message: string) => (cause: unknown) =>
  new ThreadStoreError({ operation, message, cause })

/** The entry as stored JSON, and the entry as read back from it. @internal */
export const encodeEntry = (operation: string, entry: HistoryEntry) =>
  Effect.gen(function* () {
    const json = yield* encodeEntryJson(entry).pipe(
      Effect.mapError(historyError(operation, `the ${entry._tag} entry does not encode`)),
    )
    const stored = yield* decodeEntryJson(json).pipe(
      Effect.mapError(historyError(operation, `the ${entry._tag} entry does not survive encoding`)),
    )
    return { json, stored }
  })

/** Decodes a stored record (its entry already parsed from JSON); one that does not decode is an error. @internal */
export const decodeRecord = (
  operation: string,
  row: {
    readonly thread_id: unknown
    readonly sequence: unknown
    readonly submission_id: unknown
    readonly recorded_at: unknown
    readonly entry: unknown
  },
) =>
  Effect.gen(function* () {
    const label = `history record ${String(row.thread_id)}#${String(row.sequence)}`
    return yield* decodeRecordUnknown({
      threadId: row.thread_id,
      sequence: row.sequence,
      submissionId: row.submission_id,
      recordedAt: row.recorded_at,
      entry: row.entry,
    }).pipe(
      Effect.mapError((cause) =>
        historyError(operation, `${label} does not decode: ${cause.message}`)(cause),
      ),
    )
  })

/** Refuses a fence issued for another Submission than the record's. @internal */
export const foreignFence = (submissionId: SubmissionId, fence: AppendFence): FenceRejected | undefined =>
  fenceSubmissionId(fence) === submissionId
    ? undefined
    : new FenceRejected({
        submissionId,
        expectedEpoch: fenceEpoch(fence),
        actualEpoch: fenceEpoch(fence),
        message: `the fence authorizes submission ${fenceSubmissionId(fence)}, not ${submissionId}`,
      })

/** Checks paging options. @internal */
export const pageOptions = (options: { readonly after?: number; readonly limit: number }) => {
  const after = options.after ?? 0
  if (!Number.isSafeInteger(options.limit) || options.limit < 1) {
    return Effect.fail(
      new ThreadStoreError({
        operation: "ThreadHistory.page",
        message: `limit must be a positive integer, got ${options.limit}`,
      }),
    )
  }
  if (!Number.isSafeInteger(after) || after < 0) {
    return Effect.fail(
      new ThreadStoreError({
        operation: "ThreadHistory.page",
        message: `after must be a non-negative integer, got ${after}`,
      }),
    )
  }
  return Effect.succeed({ after, limit: options.limit })
}

/**
 * Checks a feed's options: its page, and the record kinds it asks for (`undefined`: every
 * kind). @internal
 */
export const feedOptions = (options: {
  readonly after: number
  readonly limit: number
  readonly kinds?: ReadonlyArray<HistoryEntryKind> | undefined
}) =>
  Effect.flatMap(pageOptions(options), ({ after, limit }) => {
    const refuse = (message: string) =>
      Effect.fail(new ThreadStoreError({ operation: "ThreadHistory.feed", message }))
    if (options.kinds === undefined) return Effect.succeed({ after, limit, kinds: undefined })
    if (options.kinds.length === 0) return refuse("kinds must name at least one record kind")
    const unknown = options.kinds.find((kind) => !HISTORY_ENTRY_KINDS.has(kind))
    if (unknown !== undefined)
      return refuse(`kinds names ${JSON.stringify(unknown)}, which is not a record kind`)
    return Effect.succeed({
      after,
      limit,
      kinds: new Set<string>(options.kinds) as ReadonlySet<string> | undefined,
    })
  })

/** Refuses a record time that is not a finite number. @internal */
export const requireInstant = (operation: string, now: number) =>
  Number.isFinite(now)
    ? Effect.void
    : Effect.fail(new ThreadStoreError({ operation, message: `now must be a finite number, got ${now}` }))

/** `append` in terms of `appendAll`: one record, and the record appended. @internal */
export const appendOne =
  <E, R>(
    appendAll: (
      submissionId: SubmissionId,
      entries: ReadonlyArray<HistoryEntry>,
      fence: AppendFence,
      now: number,
    ) => Effect.Effect<ReadonlyArray<HistoryRecord>, E, R>,
  ) =>
  (submissionId: SubmissionId, entry: HistoryEntry, fence: AppendFence, now: number) =>
    Effect.flatMap(appendAll(submissionId, [entry], fence, now), (records) =>
      records[0] === undefined
        ? Effect.fail(
            new ThreadStoreError({ operation: "ThreadHistory.append", message: "nothing appended" }),
          )
        : Effect.succeed(records[0]),
    )
