/**
 * Early events on the in-memory ledger (`early.ts`): the rows the SQLite ledger's table holds,
 * in an array, each read and written inside one synchronous block as the table is inside one
 * transaction.
 */
import { Result, type Schema } from "effect"
import type { IdempotencyKey, ThreadId } from "../../Identifiers.ts"
import type { HistoryEntry } from "../history/model.ts"
import { submissionIdFor } from "./admission.ts"
import {
  type EarlyEvent,
  type EarlyEventAgentsService,
  type EarlyEventRefused,
  type EarlyEvents,
  type EarlyKeep,
  type EarlyKey,
  type EarlyRow,
  earlyRefusal,
  earlyView,
  receivedEntry,
  takesEarly,
} from "./early.ts"
import type { SubmissionSnapshot } from "./model.ts"
import { type MemoryStore, storedTextOrder } from "./memoryStore.ts"
import { utf8ByteLength } from "./rules.ts"

const underKey = (row: EarlyRow, threadId: ThreadId, idempotencyKey: IdempotencyKey) =>
  row.threadId === threadId && row.idempotencyKey === idempotencyKey

/** The early events of the in-memory ledger, over its store. @internal */
export const makeMemoryEarly = (store: MemoryStore, agents: EarlyEventAgentsService) => {
  /** `keepEarly`'s decision and write, synchronously; `admitted` is the row under the key. */
  const keepNow = (
    event: EarlyEvent,
    admitted: SubmissionSnapshot | undefined,
  ): Result.Result<EarlyKeep, EarlyEventRefused> => {
    if (admitted !== undefined) return Result.succeed({ _tag: "Admitted", row: admitted })
    if (
      store.early.some(
        (row) => underKey(row, event.threadId, event.idempotencyKey) && row.eventId === event.eventId,
      )
    )
      return Result.succeed({ _tag: "Kept", replayed: true })
    const bytes = utf8ByteLength(event.payload)
    const kept = { events: store.early.length, bytes: store.early.reduce((sum, row) => sum + row.bytes, 0) }
    const refused = earlyRefusal(event, kept, bytes)
    if (refused !== undefined) return Result.fail(refused)
    store.early.push({
      threadId: event.threadId,
      idempotencyKey: event.idempotencyKey,
      eventId: event.eventId,
      agentId: event.agentId,
      event: event.event,
      payload: event.payload,
      bytes,
      keptAt: event.now,
    })
    return Result.succeed({ _tag: "Kept", replayed: false })
  }

  /** The kept events of a Submission being admitted, removed, in the admission's block. */
  const takeNow = (admitted: SubmissionSnapshot): ReadonlyArray<HistoryEntry> => {
    if (store.early.length === 0 || !takesEarly(agents, admitted)) return []
    const mine = store.early
      .filter(
        (row) =>
          underKey(row, admitted.threadId, admitted.idempotencyKey) && row.agentId === admitted.agentId,
      )
      // As the SQLite ledger reads them: by when they were kept, then by id.
      .sort((a, b) => a.keptAt - b.keptAt || storedTextOrder(a.eventId, b.eventId))
    if (mine.length === 0) return []
    // Parsed before anything is removed: a payload that is not JSON throws out of the block.
    const entries = mine.map((row) =>
      receivedEntry({
        event: row.event,
        eventId: row.eventId,
        payload: JSON.parse(row.payload) as Schema.Json,
      }),
    )
    forgetNow(admitted.threadId, admitted.idempotencyKey, admitted.agentId)
    return entries
  }

  /** Removes what is kept under a key (for one agent only when `agentId` is given). */
  const forgetNow = (threadId: ThreadId, idempotencyKey: IdempotencyKey, agentId?: string): void => {
    for (let i = store.early.length - 1; i >= 0; i--) {
      const row = store.early[i] as EarlyRow
      if (underKey(row, threadId, idempotencyKey) && (agentId === undefined || row.agentId === agentId))
        store.early.splice(i, 1)
    }
  }

  const viewNow = (): EarlyEvents => {
    const groups = new Map<string, { key: EarlyKey; rows: Array<EarlyRow> }>()
    for (const row of store.early) {
      const id = JSON.stringify([row.threadId, row.idempotencyKey, row.agentId])
      const group = groups.get(id)
      if (group !== undefined) group.rows.push(row)
      else
        groups.set(id, {
          key: {
            threadId: row.threadId,
            idempotencyKey: row.idempotencyKey,
            agentId: row.agentId as EarlyKey["agentId"],
            submissionId: submissionIdFor(store.salt, row.threadId, row.idempotencyKey),
            events: 0,
            bytes: 0,
            firstKeptAt: row.keptAt,
          },
          rows: [row],
        })
    }
    const keys = [...groups.values()]
      .map(({ key, rows }) => ({
        ...key,
        events: rows.length,
        bytes: rows.reduce((sum, row) => sum + row.bytes, 0),
        firstKeptAt: Math.min(...rows.map((row) => row.keptAt)),
      }))
      .sort(
        (a, b) =>
          storedTextOrder(a.threadId, b.threadId) ||
          storedTextOrder(a.idempotencyKey, b.idempotencyKey) ||
          storedTextOrder(a.agentId, b.agentId),
      )
    return earlyView(keys)
  }

  return { keepNow, takeNow, forgetNow, viewNow }
}
