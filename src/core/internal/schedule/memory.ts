/**
 * Schedules in memory, beside the in-memory ledger's rows. An advance checks the schedule,
 * admits the occurrence and records the advance without yielding between the check and the
 * writes, as the SQLite transaction does.
 */
import { Effect, Option, Result } from "effect"
import type {
  Admission,
  AdmissionRefused,
  AdmissionRequest,
  IdempotencyConflict,
  LedgerError,
} from "../ledger/model.ts"
import type { ScheduleMethods } from "./methods.ts"
import { advancedInfo, replacing, type ScheduleInfo, type ScheduleRefusal } from "./model.ts"
import { refusalOf } from "./rules.ts"
import { storedTextOrder } from "../ledger/memoryStore.ts"

/**
 * The schedule methods over `schedules`; `admitNow` is the ledger's synchronous admission
 * (its record appended in the same block). @internal
 */
export const makeMemorySchedules = (
  schedules: Map<string, ScheduleInfo>,
  admitNow: (
    request: AdmissionRequest,
  ) => Effect.Effect<
    () => Result.Result<Admission, AdmissionRefused | IdempotencyConflict | LedgerError>,
    LedgerError
  >,
): ScheduleMethods => {
  const byNext = () =>
    [...schedules.values()].sort((a, b) => a.nextAt - b.nextAt || storedTextOrder(a.scheduleId, b.scheduleId))
  return {
    putSchedule: (info) =>
      Effect.sync(() => {
        const stored = schedules.get(info.scheduleId)
        const next = stored === undefined ? info : replacing(info, stored)
        schedules.set(next.scheduleId, next)
        return next
      }),
    removeSchedule: (scheduleId) => Effect.sync(() => schedules.delete(scheduleId)),
    lookupSchedule: (scheduleId) => Effect.sync(() => Option.fromUndefinedOr(schedules.get(scheduleId))),
    listSchedules: Effect.sync(() =>
      [...schedules.values()].sort((a, b) => storedTextOrder(a.scheduleId, b.scheduleId)),
    ),
    schedulePage: ({ after, limit }) =>
      Effect.sync(() =>
        [...schedules.values()]
          .filter((info) => after === undefined || storedTextOrder(info.scheduleId, after) > 0)
          .sort((a, b) => storedTextOrder(a.scheduleId, b.scheduleId))
          .slice(0, Math.max(0, limit)),
      ),
    dueSchedules: (now, limit) =>
      Effect.sync(() =>
        byNext()
          .filter((info) => info.nextAt <= now)
          .slice(0, limit),
      ),
    nextOccurrenceAt: Effect.sync(() => byNext()[0]?.nextAt),
    advanceSchedule: (advance, admission) =>
      Effect.gen(function* () {
        // Everything that can yield (encoding the acceptance record) runs before the block.
        const admit = admission === undefined ? undefined : yield* admitNow(admission)
        const current = schedules.get(advance.scheduleId)
        if (current === undefined || current.nextAt !== advance.expectedNextAt)
          return { _tag: "Moved" as const }
        const admitted = admit?.()
        if (admitted !== undefined && Result.isFailure(admitted) && admitted.failure._tag === "LedgerError") {
          return yield* Effect.fail(admitted.failure)
        }
        const refusal: ScheduleRefusal | undefined =
          admitted !== undefined && Result.isFailure(admitted)
            ? refusalOf(
                admitted.failure as AdmissionRefused | IdempotencyConflict,
                advance.occurrence ?? advance.now,
                advance.now,
              )
            : advance.refusal
        const admission_ = admitted !== undefined && Result.isSuccess(admitted) ? admitted.success : undefined
        const next = advancedInfo(
          current,
          { ...advance, ...(refusal === undefined ? {} : { refusal }) },
          admission_?.snapshot.submissionId,
        )
        schedules.set(next.scheduleId, next)
        if (admission_ !== undefined) {
          return {
            _tag: "Admitted" as const,
            schedule: next,
            submissionId: admission_.snapshot.submissionId,
            replayed: admission_._tag === "Replayed",
          }
        }
        return refusal === undefined
          ? { _tag: "Skipped" as const, schedule: next }
          : { _tag: "Refused" as const, schedule: next, refusal }
      }),
  }
}
