/**
 * The invariants of delayed Submissions and recurring schedules, read from the acceptance
 * records (`SubmissionAccepted` carries `notBefore` and the occurrence) and checked on every
 * Claim and, for the history feed, after every driver step:
 *
 * - delayed-not-early: a Submission admitted with `notBefore` is neither claimed nor started
 *   (`InputApplied`) before it by the Object's clock. Its lane order is `fifo`'s.
 * - occurrence-once: an occurrence is admitted at most once, under the key
 *   `schedule:<scheduleId>:<occurrence ms>`.
 * - occurrence-not-early: an occurrence is admitted no earlier than its instant.
 * - occurrence-after-unschedule: once an `unschedule` answered, its schedule admits nothing more.
 * - occurrence-overlap: a schedule made with `overlap: "skip"` admits an occurrence only after
 *   every earlier occurrence of it settled (in the feed's order).
 * - end-occurrences: at the end every admitted occurrence settled exactly once (or retention
 *   removed it after it settled, which `retention-outcome` checked).
 */
import type { SubmissionId } from "../../../src/core/Identifiers.ts"
import type { MemoryStore } from "../../../src/core/internal/ledger/memoryStore.ts"
import { occurrenceKey } from "../../../src/core/internal/schedule/model.ts"

type Check = (kind: string, ok: boolean, message: () => string) => void

/** The schedule checks of one Object. */
export const makeScheduleChecks = (store: MemoryStore, check: Check, removed: ReadonlySet<SubmissionId>) => {
  let feedSeen = 0
  let delayed = 0
  /** Admitted occurrences, by key, with the Submission each is. */
  const admitted = new Map<string, SubmissionId>()
  /** The feed length when each schedule's `unschedule` answered. */
  const unscheduledAt = new Map<string, number>()
  /** Schedules made with `overlap: "skip"`. */
  const skipping = new Set<string>()
  /** Occurrences admitted and not yet settled in the feed, by schedule, and the schedule of each. */
  const unsettled = new Map<string, Set<SubmissionId>>()
  const scheduleOf = new Map<SubmissionId, string>()

  const notBeforeOf = (submissionId: SubmissionId): number | undefined => {
    const accepted = store.historyBySubmission.get(submissionId)?.[0]?.entry
    return accepted?._tag === "SubmissionAccepted" ? accepted.notBefore : undefined
  }

  /** A Claim of any path: never before the Submission's `notBefore`. */
  const claimed = (submissionId: SubmissionId, now: number) => {
    const notBefore = notBeforeOf(submissionId)
    if (notBefore === undefined) return
    check(
      "delayed-not-early",
      now >= notBefore,
      () => `${submissionId} claimed at ${now}, admitted with notBefore ${notBefore}`,
    )
  }

  /** The feed records since the last step. */
  const step = () => {
    for (; feedSeen < store.historyFeed.length; feedSeen++) {
      const record = store.historyFeed[feedSeen]
      if (record === undefined) continue
      const { entry, submissionId } = record
      if (entry._tag === "InputApplied") {
        const notBefore = notBeforeOf(submissionId)
        if (notBefore !== undefined)
          check(
            "delayed-not-early",
            record.recordedAt >= notBefore,
            () => `${submissionId} started at ${record.recordedAt}, admitted with notBefore ${notBefore}`,
          )
        continue
      }
      if (entry._tag === "SubmissionSettled") {
        const scheduleId = scheduleOf.get(submissionId)
        if (scheduleId !== undefined) unsettled.get(scheduleId)?.delete(submissionId)
        continue
      }
      if (entry._tag !== "SubmissionAccepted") continue
      if ((entry.notBefore ?? -Infinity) > record.recordedAt) delayed++
      if (entry.schedule === undefined) continue
      const { scheduleId, occurrence } = entry.schedule
      const key = occurrenceKey(scheduleId, occurrence)
      const open = unsettled.get(scheduleId) ?? new Set<SubmissionId>()
      check(
        "occurrence-overlap",
        !skipping.has(scheduleId) || open.size === 0,
        () =>
          `occurrence ${key} of a skipping schedule admitted while ${[...open].join(", ")} had not settled`,
      )
      open.add(submissionId)
      unsettled.set(scheduleId, open)
      scheduleOf.set(submissionId, scheduleId)
      check(
        "occurrence-once",
        !admitted.has(key) &&
          (store.rows.get(submissionId)?.idempotencyKey ?? (removed.has(submissionId) ? key : undefined)) ===
            key,
        () =>
          `occurrence ${key} admitted as ${submissionId} (key ${store.rows.get(submissionId)?.idempotencyKey}) after ${admitted.get(key) ?? "nothing"}`,
      )
      admitted.set(key, submissionId)
      const late = record.recordedAt - occurrence
      check(
        "occurrence-not-early",
        late >= 0,
        () => `occurrence ${key} admitted at ${record.recordedAt}, ${late} ms after its instant`,
      )
      const removedAt = unscheduledAt.get(scheduleId)
      check(
        "occurrence-after-unschedule",
        removedAt === undefined || feedSeen < removedAt,
        () => `occurrence ${key} admitted at ${record.recordedAt} after its schedule was removed`,
      )
    }
  }

  /** Every admitted occurrence settled once. */
  const end = () => {
    step()
    for (const [key, submissionId] of admitted) {
      const row = store.rows.get(submissionId)
      const settlements = (store.historyBySubmission.get(submissionId) ?? []).filter(
        (record) => record.entry._tag === "SubmissionSettled",
      ).length
      check(
        "end-occurrences",
        row === undefined ? removed.has(submissionId) : row.state === "settled" && settlements === 1,
        () =>
          `occurrence ${key} (${submissionId}) ends ${row?.state ?? "missing"} with ${settlements} settlements`,
      )
    }
  }

  return {
    claimed,
    step,
    end,
    /** An `unschedule` of `scheduleId` answered: nothing admitted from here on may be its. */
    unscheduled: (scheduleId: string) => {
      step()
      if (!unscheduledAt.has(scheduleId)) unscheduledAt.set(scheduleId, store.historyFeed.length)
    },
    /** A schedule made with `overlap: "skip"` (before its first occurrence can be admitted). */
    skips: (scheduleId: string) => {
      skipping.add(scheduleId)
    },
    /** Occurrences admitted. */
    get occurrences() {
      return admitted.size
    },
    /** Submissions admitted with a later `notBefore`. */
    get delayed() {
      return delayed
    },
  }
}

/** The schedule checks of one Object. */
export type ScheduleChecks = ReturnType<typeof makeScheduleChecks>
