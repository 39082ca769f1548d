/**
 * Set-up of large benches: copies of one parked Submission (its ledger row and its history
 * records) inserted through raw SQL under new ids, one per lane, in one transaction, so a set-up
 * of 100,000 waits stays linear. Every history row carries the Object's counts forward; the
 * copies continue them, so the ledger's counts stay exact.
 */
const SUBMISSIONS_TABLE = "effect_agent_submissions"
const HISTORY_TABLE = "effect_agent_history"

/** The lane key the SQLite ledger stores (4 hex digits per UTF-16 unit). */
export const laneKeyOf = (threadId: string): string => {
  let key = ""
  for (let i = 0; i < threadId.length; i++) key += threadId.charCodeAt(i).toString(16).padStart(4, "0")
  return key
}

/** One copy: its Thread, its key, and the columns it changes besides the ids. */
export interface CloneSpec {
  readonly threadId: string
  readonly idempotencyKey: string
  readonly columns?: Readonly<Record<string, SqlStorageValue>>
}

/**
 * Copies the Submission of Thread `template` `count - 1` times, the copy `index` (from 1) as
 * `spec(index)` says; returns the template's row as stored.
 */
export const cloneSubmission = (
  storage: DurableObjectStorage,
  template: string,
  count: number,
  spec: (index: number) => CloneSpec,
): Record<string, SqlStorageValue> => {
  const sql = storage.sql
  const row = sql
    .exec<Record<string, SqlStorageValue>>(`SELECT * FROM ${SUBMISSIONS_TABLE} WHERE thread_id = ?`, template)
    .one()
  const records = sql
    .exec<Record<string, SqlStorageValue>>(
      `SELECT * FROM ${HISTORY_TABLE} WHERE submission_id = ? ORDER BY sequence`,
      row["submission_id"],
    )
    .toArray()
  const newest = sql
    .exec<{ position: number; records: number; admitted: number; settled: number }>(
      `SELECT position, records, admitted, settled FROM ${HISTORY_TABLE} ORDER BY position DESC LIMIT 1`,
    )
    .one()
  let position = newest.position + newest.records
  storage.transactionSync(() => {
    for (let index = 1; index < count; index++) {
      const { threadId, idempotencyKey, columns: changed } = spec(index)
      const submissionId = crypto.randomUUID()
      const clone: Record<string, SqlStorageValue> = {
        ...row,
        submission_id: submissionId,
        thread_id: threadId,
        lane_key: laneKeyOf(threadId),
        idempotency_key: idempotencyKey,
        receipt_id: crypto.randomUUID(),
        ...changed,
      }
      const columns = Object.keys(clone)
      sql.exec(
        `INSERT INTO ${SUBMISSIONS_TABLE} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
        ...columns.map((column) => clone[column]),
      )
      for (const record of records) {
        sql.exec(
          `INSERT INTO ${HISTORY_TABLE} (position, thread_id, sequence, records, submission_id, recorded_at,
            entries, lane_tail, admitted, settled) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          position,
          threadId,
          record["sequence"],
          record["records"],
          submissionId,
          record["recorded_at"],
          record["entries"],
          record["lane_tail"],
          newest.admitted + index,
          newest.settled,
        )
        position += Number(record["records"])
      }
    }
  })
  return row
}
