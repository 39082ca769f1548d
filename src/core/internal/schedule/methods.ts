/**
 * The ledger's schedule methods, shared by both implementations: a schedule is a row beside the
 * Submissions of its Object, so that an occurrence's admission and the schedule's advance are
 * one transaction.
 */
import type { Effect, Option } from "effect"
import type { AdmissionRequest, LedgerError } from "../ledger/model.ts"
import type { ScheduleAdvance, ScheduleAdvanced, ScheduleId, ScheduleInfo } from "./model.ts"

/** The schedule methods of `SubmissionLedger`: stored schedules and the admission of their occurrences. */
export interface ScheduleMethods {
  /**
   * Stores a schedule, replacing the one of the same id: its admitted occurrences stay, and so
   * does what became of its last occurrence (read as it is replaced). Answers the stored schedule.
   */
  readonly putSchedule: (schedule: ScheduleInfo) => Effect.Effect<ScheduleInfo, LedgerError>
  /** Removes a schedule; whether there was one. */
  readonly removeSchedule: (scheduleId: ScheduleId) => Effect.Effect<boolean, LedgerError>
  readonly lookupSchedule: (scheduleId: ScheduleId) => Effect.Effect<Option.Option<ScheduleInfo>, LedgerError>
  /** Every schedule of this Object, by id: reads every schedule. */
  readonly listSchedules: Effect.Effect<ReadonlyArray<ScheduleInfo>, LedgerError>
  /**
   * Up to `limit` schedules with an id after `after` (all when it is absent), in the order of
   * `listSchedules`: one seek and the rows it returns.
   */
  readonly schedulePage: (options: {
    readonly after?: ScheduleId
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<ScheduleInfo>, LedgerError>
  /**
   * Up to `limit` schedules whose next occurrence is at or before `now`, earliest first; reads
   * the schedules it returns, never the ones not due.
   */
  readonly dueSchedules: (
    now: number,
    limit: number,
  ) => Effect.Effect<ReadonlyArray<ScheduleInfo>, LedgerError>
  /** The earliest next occurrence of any schedule; runs no statement while none is stored. */
  readonly nextOccurrenceAt: Effect.Effect<number | undefined, LedgerError>
  /**
   * Moves a due schedule on, in one transaction: when its next occurrence is still
   * `advance.expectedNextAt`, admits `admission` (the occurrence's Submission, its key naming
   * the schedule and the occurrence) and records the new next occurrence with what became of
   * this one. An admission the ledger refuses (a full lane, a key used for another input) is
   * recorded as the occurrence's refusal instead. A schedule replaced or removed meanwhile is
   * left alone (`Moved`).
   */
  readonly advanceSchedule: (
    advance: ScheduleAdvance,
    admission?: AdmissionRequest,
  ) => Effect.Effect<ScheduleAdvanced, LedgerError>
}
