/**
 * What Cloudflare bills a SQLite-backed Durable Object for one settled item, at the published
 * prices of the paid plan (beyond the included amounts): rows written (every index entry, every
 * KV key put or deleted and every `setAlarm()`), rows read, requests (every request and every alarm delivery)
 * and wall-clock duration at 128 MB. Figures are dollars per million settled items.
 */

/** Published prices, dollars per unit. */
export const prices = {
  rowWritten: 1.0 / 1_000_000,
  rowRead: 0.001 / 1_000_000,
  request: 0.15 / 1_000_000,
  gbSecond: 12.5 / 1_000_000,
} as const

/** Memory Cloudflare bills every Durable Object for, in GB. */
export const billedMemoryGb = 0.128

/** The billed work of one settled item. */
export interface ItemWork {
  /** SQL `rowsWritten` plus KV keys put or deleted plus `setAlarm` calls (each billed as a row). */
  readonly rowsWritten: number
  readonly rowsRead: number
  /** Requests that reach the Object: the submit plus every alarm delivery. */
  readonly requests: number
  /** Wall-clock seconds the Object is active per item. */
  readonly seconds: number
}

/** Dollars per million settled items, by meter and in total. */
export interface ItemCost {
  readonly rowsWritten: number
  readonly rowsRead: number
  readonly requests: number
  readonly duration: number
  readonly total: number
}

/** Dollars per million items for `work`. */
export const costPerMillion = (work: ItemWork): ItemCost => {
  const million = 1_000_000
  const rowsWritten = work.rowsWritten * prices.rowWritten * million
  const rowsRead = work.rowsRead * prices.rowRead * million
  const requests = work.requests * prices.request * million
  const duration = work.seconds * billedMemoryGb * prices.gbSecond * million
  return { rowsWritten, rowsRead, requests, duration, total: rowsWritten + rowsRead + requests + duration }
}

/**
 * The Cloudflare Agents SDK's `this.queue()` with one request per item, as measured in local
 * workerd the same way (../shared/peer-figures.md, 2026-12-02: SQL rows written 4.0, rows read
 * 26, 1.00 alarm per item; its KV use was not reported there). Cited, not measured by this
 * bench: its duration is unknown, so it is left out of its total.
 */
export const agentsSdkQueueCited: ItemWork = { rowsWritten: 4, rowsRead: 26, requests: 2, seconds: 0 }
