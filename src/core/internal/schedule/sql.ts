/**
 * Schedules on Durable Object SQLite: one `WITHOUT ROWID` row per schedule and an index on the
 * next occurrence, so a pass reads the schedules due and nothing else. An occurrence's advance
 * runs in the ledger's transaction with the occurrence's admission (a nested transaction of the
 * synchronous client is a savepoint), so a crash keeps both or neither.
 */
import { Effect, Option, Schema } from "effect"
import { nothingStored } from "../nothingStored.ts"
import type { SqlClient } from "effect/sql/SqlClient"
import { isSqlError } from "effect/sql/SqlError"
import type { AdmissionRequest, Admission, AdmissionRefused, IdempotencyConflict } from "../ledger/model.ts"
import { LedgerError } from "../ledger/model.ts"
import type { SqlQueries } from "../ledger/sqlQueries.ts"
import { storageError } from "../ledger/sqlQueries.ts"
import type { Row } from "../ledger/sqlStatements.ts"
import { SCHEDULES_TABLE } from "../schema.ts"
import { rowLimit } from "../sqlLimit.ts"
import type { ScheduleMethods } from "./methods.ts"
import { advancedInfo, ScheduleInfo, type ScheduleRefusal } from "./model.ts"
import { refusalOf } from "./rules.ts"

const s = SCHEDULES_TABLE

/** @internal */
export const scheduleStatements = {
  upsert: `INSERT INTO ${s} (schedule_id, thread_id, agent_id, input_payload, spec, missed, next_at,
      last_occurrence, last_submission_id, last_refusal, created_at, overlap) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (schedule_id) DO UPDATE SET thread_id = excluded.thread_id, agent_id = excluded.agent_id,
      input_payload = excluded.input_payload, spec = excluded.spec, missed = excluded.missed,
      next_at = excluded.next_at, created_at = excluded.created_at, overlap = excluded.overlap
    RETURNING *`,
  remove: `DELETE FROM ${s} WHERE schedule_id = ? RETURNING schedule_id`,
  byId: `SELECT * FROM ${s} WHERE schedule_id = ?`,
  list: `SELECT * FROM ${s} ORDER BY schedule_id`,
  // At most `rows` of them after an id ('' for the first). Parameter: after id.
  page: (rows: number) =>
    `SELECT * FROM ${s} WHERE schedule_id > ? ORDER BY schedule_id LIMIT ${rowLimit(rows)}`,
  // At most `rows` of them. Parameter: now.
  due: (rows: number) => `SELECT * FROM ${s} WHERE next_at <= ? ORDER BY next_at LIMIT ${rowLimit(rows)}`,
  earliest: `SELECT next_at FROM ${s} ORDER BY next_at LIMIT 1`,
  // The next occurrence read guards the write: a replace or a removal in between wins.
  advance: `UPDATE ${s} SET next_at = ?, last_occurrence = coalesce(?, last_occurrence),
      last_submission_id = coalesce(?, last_submission_id), last_refusal = coalesce(?, last_refusal)
    WHERE schedule_id = ? AND next_at = ?`,
} as const

const decodeInfo = Schema.decodeUnknownEffect(ScheduleInfo)

const parseJson = (operation: string, row: Row, column: string) =>
  row[column] === null || row[column] === undefined
    ? Effect.succeed(undefined)
    : Effect.try({
        try: () => JSON.parse(String(row[column])) as unknown,
        catch: (cause) =>
          new LedgerError({
            operation,
            message: `schedule ${String(row.schedule_id)}: ${column} is not JSON`,
            cause,
          }),
      })

const decodeSchedule = (operation: string) => (row: Row) =>
  Effect.gen(function* () {
    const refusal = yield* parseJson(operation, row, "last_refusal")
    return yield* decodeInfo({
      scheduleId: row.schedule_id,
      threadId: row.thread_id,
      agentId: row.agent_id,
      input: yield* parseJson(operation, row, "input_payload"),
      spec: yield* parseJson(operation, row, "spec"),
      missed: row.missed,
      ...(row.overlap === null || row.overlap === undefined ? {} : { overlap: row.overlap }),
      nextAt: row.next_at,
      createdAt: row.created_at,
      ...(row.last_occurrence === null ? {} : { lastOccurrence: row.last_occurrence }),
      ...(row.last_submission_id === null ? {} : { lastSubmissionId: row.last_submission_id }),
      ...(refusal === undefined ? {} : { lastRefusal: refusal }),
    }).pipe(Effect.mapError(storageError(operation)))
  })

/** The schedule methods over the ledger's queries, transaction and admission. @internal */
export const makeSqlSchedules = (options: {
  readonly sql: SqlClient
  readonly queries: SqlQueries
  readonly admit: (
    request: AdmissionRequest,
  ) => Effect.Effect<Admission, AdmissionRefused | IdempotencyConflict | LedgerError>
}): ScheduleMethods => {
  const { queries, admit, sql } = options
  const { query } = queries
  // Once a read found no schedule stored, the pass's reads of schedules run no statement until
  // one is put (this ledger is the only writer of its Object's schedules).
  const known = nothingStored(false)

  const one = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    Effect.flatMap(query(operation, text, params), (rows) =>
      rows[0] === undefined
        ? Effect.succeed(Option.none<ScheduleInfo>())
        : Effect.map(decodeSchedule(operation)(rows[0]), Option.some),
    )
  const many = (operation: string, text: string, params: ReadonlyArray<unknown>) =>
    Effect.flatMap(query(operation, text, params), (rows) => Effect.forEach(rows, decodeSchedule(operation)))

  const write = (operation: string, info: ScheduleInfo) =>
    query(operation, scheduleStatements.upsert, [
      info.scheduleId,
      info.threadId,
      info.agentId,
      JSON.stringify(info.input),
      JSON.stringify(info.spec),
      info.missed,
      info.nextAt,
      info.lastOccurrence ?? null,
      info.lastSubmissionId ?? null,
      info.lastRefusal === undefined ? null : JSON.stringify(info.lastRefusal),
      info.createdAt,
      info.overlap ?? null,
    ])

  const transaction = <A, E>(operation: string, effect: Effect.Effect<A, E>) =>
    sql
      .withTransaction(effect)
      .pipe(
        Effect.mapError((error): E | LedgerError =>
          isSqlError(error) ? storageError(operation)(error) : (error as E),
        ),
      )

  return {
    putSchedule: Effect.fnUntraced(function* (info) {
      const operation = "SubmissionLedger.putSchedule"
      const [row] = yield* write(operation, info)
      known.writing()
      return row === undefined ? info : yield* decodeSchedule(operation)(row)
    }),

    removeSchedule: Effect.fnUntraced(function* (scheduleId) {
      const removed = yield* query("SubmissionLedger.removeSchedule", scheduleStatements.remove, [scheduleId])
      return removed.length > 0
    }),

    lookupSchedule: (scheduleId) =>
      one("SubmissionLedger.lookupSchedule", scheduleStatements.byId, [scheduleId]),

    listSchedules: Effect.suspend(() => many("SubmissionLedger.listSchedules", scheduleStatements.list, [])),

    schedulePage: ({ after, limit }) =>
      Effect.suspend(() =>
        many("SubmissionLedger.schedulePage", scheduleStatements.page(Math.max(0, limit)), [after ?? ""]),
      ),

    dueSchedules: (now, limit) =>
      Effect.suspend(() =>
        known.known()
          ? Effect.succeed([])
          : many("SubmissionLedger.dueSchedules", scheduleStatements.due(limit), [now]),
      ),

    nextOccurrenceAt: Effect.suspend(() => {
      if (known.known()) return Effect.succeed(undefined)
      return Effect.map(
        known.read(
          query("SubmissionLedger.nextOccurrenceAt", scheduleStatements.earliest, []),
          (rows) => rows.length === 0,
        ),
        (rows) => (rows[0] === undefined ? undefined : Number(rows[0].next_at)),
      )
    }),

    advanceSchedule: Effect.fnUntraced(function* (advance, admission) {
      const operation = "SubmissionLedger.advanceSchedule"
      return yield* transaction(
        operation,
        Effect.gen(function* () {
          const current = yield* one(operation, scheduleStatements.byId, [advance.scheduleId])
          if (Option.isNone(current) || current.value.nextAt !== advance.expectedNextAt) {
            return { _tag: "Moved" as const }
          }
          const admitted =
            admission === undefined
              ? undefined
              : yield* admit(admission).pipe(
                  Effect.map((result) => ({ _tag: "Admitted" as const, result })),
                  Effect.catchTag(["AdmissionRefused", "IdempotencyConflict"], (error) =>
                    Effect.succeed({ _tag: "Refused" as const, error }),
                  ),
                )
          const refusal: ScheduleRefusal | undefined =
            admitted?._tag === "Refused"
              ? refusalOf(admitted.error, advance.occurrence ?? advance.now, advance.now)
              : advance.refusal
          const submissionId =
            admitted?._tag === "Admitted" ? admitted.result.snapshot.submissionId : undefined
          const next = advancedInfo(
            current.value,
            { ...advance, ...(refusal === undefined ? {} : { refusal }) },
            submissionId,
          )
          yield* query(operation, scheduleStatements.advance, [
            next.nextAt,
            advance.occurrence ?? null,
            submissionId ?? null,
            refusal === undefined ? null : JSON.stringify(refusal),
            advance.scheduleId,
            advance.expectedNextAt,
          ])
          if (admitted?._tag === "Admitted") {
            return {
              _tag: "Admitted" as const,
              schedule: next,
              submissionId: admitted.result.snapshot.submissionId,
              replayed: admitted.result._tag === "Replayed",
            }
          }
          return refusal === undefined
            ? { _tag: "Skipped" as const, schedule: next }
            : { _tag: "Refused" as const, schedule: next, refusal }
        }),
      )
    }),
  }
}
