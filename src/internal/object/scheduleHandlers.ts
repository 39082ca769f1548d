/**
 * The handlers of a `ThreadObject`'s schedule calls. A schedule is checked whole before the
 * gate (a refused one writes nothing, not even a generation), and stored under the gate with its
 * first occurrence as the mutation's due time: the prearm lowers the record's due bound to it
 * and ensures the alarm by then, without opening a generation, so an Object whose only work is
 * schedules sleeps until the next occurrence.
 */
import { Effect } from "effect"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import { SubmissionLedger } from "../../core/SubmissionLedger.ts"
import { refuseOnDamage } from "../maintenance/errors.ts"
import { ThreadMaintenance } from "../maintenance/maintenance.ts"
import type { CallHandler } from "./dispatch.ts"
import { SchedulePage, withinAnswer } from "./pageViews.ts"

const DEFAULT_SCHEDULE_PAGE = 50

/** @internal */
export const scheduleHandlers: {
  readonly [K in "schedule" | "unschedule" | "schedules" | "schedulePage"]: CallHandler<K>
} = {
  schedule: (request) =>
    Effect.gen(function* () {
      const runtime = yield* DurableAgentRuntime
      const maintenance = yield* ThreadMaintenance
      const prepared = yield* runtime.prepareSchedule(request)
      if (prepared.unchanged) return prepared.schedule
      return yield* refuseOnDamage(
        maintenance.withMutation(runtime.schedule(prepared), {
          invalidatesRecovery: false,
          dueAt: prepared.schedule.nextAt,
        }),
      )
    }),
  // A removed schedule leaves at most a due bound that is too early: one pass that finds nothing.
  unschedule: (request) =>
    Effect.gen(function* () {
      const runtime = yield* DurableAgentRuntime
      const maintenance = yield* ThreadMaintenance
      return yield* refuseOnDamage(
        maintenance.withMutation(runtime.unschedule(request.scheduleId), { invalidatesRecovery: false }),
      )
    }),
  schedules: () => Effect.flatMap(DurableAgentRuntime, (runtime) => runtime.schedules),
  // One schedule more than the page tells whether another page follows; a page whose inputs
  // reach the budget stops early, and its `next` goes on after its last schedule.
  schedulePage: (request) =>
    Effect.gen(function* () {
      const ledger = yield* SubmissionLedger
      const limit = request.limit ?? DEFAULT_SCHEDULE_PAGE
      const found = yield* ledger.schedulePage({
        ...(request.after === undefined ? {} : { after: request.after }),
        limit: limit + 1,
      })
      const schedules = withinAnswer(found.slice(0, limit), (info) => info.input)
      const last = schedules.at(-1)
      return SchedulePage.make({
        schedules,
        ...(found.length > schedules.length && last !== undefined ? { next: last.scheduleId } : {}),
      })
    }),
}
