/**
 * The handlers of a `ThreadObject`'s operator calls: `explain`, `obligations`, `verify`,
 * `awaitProgress`, the lane listing for consoles, the droppable `wake` hint, and
 * `repairMaintenance`. All but the last two only read: they never write the maintenance
 * record, the alarm or the ledger, so they keep answering while the record is damaged and
 * cannot disturb a running pass.
 */
import { Clock, Effect, Option, Stream } from "effect"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import { DurableRuntimeConfig } from "../../core/DurableRuntimeConfig.ts"
import { ProgressHub } from "../../core/ProgressHub.ts"
import { SubmissionLedger, SubmissionNotFound, SubmissionState } from "../../core/SubmissionLedger.ts"
import { ThreadHistory } from "../../core/ThreadHistory.ts"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import { DurableAlarmService } from "../maintenance/alarmService.ts"
import { alarmTiming } from "../maintenance/alarmPolicy.ts"
import { ThreadPublication } from "../maintenance/hooks.ts"
import { ThreadMaintenance } from "../maintenance/maintenance.ts"
import { explainSubmission } from "../operator/explain.ts"
import { deriveObligations } from "../operator/obligations.ts"
import { reportDeadlines } from "../maintenance/deadlines.ts"
import { DEADLINE_READ_MILLIS } from "../maintenance/maintenanceEnv.ts"
import { verifyStorage } from "../operator/verify.ts"
import { SubmissionProgress } from "../operator/reports.ts"
import { addressed } from "./addressed.ts"
import type { CallHandler } from "./dispatch.ts"
import { readAllHistory, readHistoryRemoved, readLedger, readMaintenanceView } from "./operatorReads.ts"
import { withinAnswer } from "./pageViews.ts"
import { submissionStatus } from "./statusViews.ts"

const inspectAddressed = (address: { readonly threadId: string; readonly submissionId: string }) =>
  Effect.gen(function* () {
    const runtime = yield* DurableAgentRuntime
    const found = yield* runtime.inspect(address.submissionId as never)
    if (Option.isNone(found) || found.value.row.threadId !== address.threadId) {
      return yield* new SubmissionNotFound({
        submissionId: address.submissionId as never,
        message: `no submission ${address.submissionId} in thread ${address.threadId}`,
      })
    }
    return found.value
  })

/** Every state but `settled`: the ledger walks these over its lane indexes alone. */
const UNSETTLED_STATES = SubmissionState.literals.filter((state) => state !== "settled")

/** Rows per page of the walk behind `aheadOf`. */
const AHEAD_PAGE = 256

/**
 * Nonterminal Submissions of a lane ahead of `queueSequence`, from its head: a walk of the
 * lane's unsettled rows in queue order, never its settled ones nor the Thread's history.
 */
const aheadOf = (threadId: string, head: number, queueSequence: number) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    let ahead = 0
    let cursor = head - 1
    while (cursor < queueSequence - 1) {
      const page = yield* ledger.queryLane(threadId as never, {
        filter: { states: UNSETTLED_STATES },
        cursor,
        limit: AHEAD_PAGE,
      })
      for (const row of page.rows) {
        if (row.queueSequence >= queueSequence) return ahead
        ahead++
      }
      if (page.next === undefined) return ahead
      cursor = page.next
    }
    return ahead
  })

/** A Submission's progress token: it changes whenever its row or its records move. */
const progressToken = (
  lastSequence: number,
  row: { producerEpoch: number; state: string; abortRequested: boolean },
) => `${lastSequence}.${row.producerEpoch}.${row.state}.${row.abortRequested ? 1 : 0}`

/** How long to wait before confirming an empty alarm slot next to owed work. */
const ALARM_SETTLE_MILLIS = 250

/**
 * Reads and derives, and confirms a missing alarm once: workerd clears a delivered alarm from
 * the slot a moment before its handler starts a pass, so an empty slot next to owed work is
 * read again, everything with it, before it is reported.
 */
const confirmed = <A, E, R>(read: Effect.Effect<A, E, R>, missing: (a: A) => boolean) =>
  Effect.flatMap(read, (first) =>
    missing(first) ? Effect.andThen(Effect.sleep(ALARM_SETTLE_MILLIS), read) : Effect.succeed(first),
  )

type OperatorCall =
  | "explain"
  | "obligations"
  | "verify"
  | "awaitProgress"
  | "submissions"
  | "threads"
  | "wake"
  | "repairMaintenance"
  | "forget"

/** @internal */
export const operatorHandlers: { readonly [K in OperatorCall]: CallHandler<K> } = {
  explain: (request) =>
    Effect.gen(function* () {
      const inspection = yield* inspectAddressed(request)
      const ledger = yield* SubmissionLedger
      const head = Option.getOrUndefined(yield* ledger.head(request.threadId))
      const hostId = inspection.row.host
      const host =
        hostId === undefined
          ? undefined
          : hostId === head?.submissionId
            ? head
            : Option.getOrUndefined(yield* ledger.lookup(hostId))
      const ahead =
        head === undefined
          ? 0
          : yield* aheadOf(request.threadId, head.queueSequence, inspection.row.queueSequence)
      return explainSubmission({
        inspection,
        head,
        host,
        ahead,
        maintenance: yield* readMaintenanceView,
        now: yield* Clock.currentTimeMillis,
        expiresAt: (yield* ThreadMaintenance).retention.expiresAt(inspection.row),
      })
    }),

  obligations: () =>
    Effect.gen(function* () {
      const runtime = yield* DurableAgentRuntime
      const config = yield* CloudflareDurableRuntimeConfig
      const publication = yield* ThreadPublication
      // The application provides its hooks to the maintenance layer, not to this incarnation's
      // context: their deadline is read from the service that captured them.
      const maintenancePass = yield* ThreadMaintenance
      // Each hook read on its own: one that cannot answer is named, the rest still answered.
      const host = maintenancePass.hostDeadlineReport
      const published = reportDeadlines(
        [{ hook: "publication", read: publication.pendingDeadline }],
        DEADLINE_READ_MILLIS,
      )
      const retention = reportDeadlines(
        [{ hook: "retention", read: maintenancePass.retention.lane.pendingDeadline }],
        DEADLINE_READ_MILLIS,
      )
      const ledger = yield* SubmissionLedger
      const alarm = yield* DurableAlarmService
      const read = Effect.gen(function* () {
        const maintenance = yield* readMaintenanceView
        const passRunning = yield* alarm.passRunning
        // Side by side: hooks that hang cost one bound in all, not one each.
        const [hosts, publications, retained] = yield* Effect.all([host, published, retention], {
          concurrency: "unbounded",
        })
        return deriveObligations({
          maintenance,
          nonterminal: yield* Stream.runCollect(ledger.scanNonterminal),
          reports: yield* runtime.previewRecovery,
          hostDeadline: hosts.deadline,
          publicationDeadline: publications.deadline,
          retentionDeadline: retained.deadline,
          unreadDeadlines: [
            ...hosts.unread.map((unread) => ({ source: "host-deadline" as const, ...unread })),
            ...publications.unread.map((unread) => ({ source: "publication-deadline" as const, ...unread })),
            ...retained.unread.map((unread) => ({ source: "retention" as const, ...unread })),
          ],
          now: yield* Clock.currentTimeMillis,
          timing: alarmTiming(config),
          timerCoalesceMillis: config.timerCoalesceMillis,
          passRunning,
          schedules: yield* runtime.schedules,
        })
      })
      return yield* confirmed(read, (derived) => derived.mismatch?.kind === "missing")
    }),

  verify: () =>
    Effect.gen(function* () {
      const runtime = yield* DurableAgentRuntime
      const alarm = yield* DurableAlarmService
      const config = yield* CloudflareDurableRuntimeConfig
      const read = Effect.gen(function* () {
        const maintenance = yield* readMaintenanceView
        const passRunning = yield* alarm.passRunning
        const { rows, counted } = yield* readLedger
        return verifyStorage({
          timing: alarmTiming(config),
          timerCoalesceMillis: config.timerCoalesceMillis,
          maintenance,
          rows,
          records: yield* readAllHistory,
          historyRemoved: yield* readHistoryRemoved,
          counted,
          reports: yield* runtime.previewRecovery,
          now: yield* Clock.currentTimeMillis,
          passRunning,
          schedules: yield* runtime.schedules,
        })
      })
      return yield* confirmed(read, (report) =>
        report.violations.some(
          (violation) =>
            violation.invariant === "owed-work-has-alarm" ||
            violation.invariant === "timer-has-alarm" ||
            violation.invariant === "schedule-covered",
        ),
      )
    }),

  awaitProgress: (request) =>
    Effect.gen(function* () {
      const history = yield* ThreadHistory
      const { settlementPollInterval } = yield* DurableRuntimeConfig
      const progress = yield* (yield* ProgressHub).watch(request.submissionId)
      const afterSequence = Number.parseInt(request.after?.split(".")[0] ?? "0", 10) || 0
      const start = yield* Clock.currentTimeMillis
      while (true) {
        // The row and the records after the token only: each read (and each wake) costs what
        // the Submission gained since, not its whole journal.
        const row = yield* addressed(request)
        const { records: after, lastSequence } = yield* history.forSubmissionAfter(
          row.submissionId,
          afterSequence,
        )
        const token = progressToken(lastSequence, row)
        const elapsed = (yield* Clock.currentTimeMillis) - start
        const changed = request.after === undefined || token !== request.after
        if (changed || elapsed >= request.timeoutMillis) {
          const gained = changed ? after : []
          // Large records (inputs, step results, events) answer short, with a token that goes on
          // from the last record returned: unlike the current token, it is answered at once.
          const records = withinAnswer(gained, (record) => record.entry)
          const last = records.length < gained.length ? records.at(-1) : undefined
          return SubmissionProgress.make({
            token: last === undefined ? token : progressToken(last.sequence, row),
            changed,
            state: row.state,
            producerEpoch: row.producerEpoch,
            records,
            ...(last === undefined ? {} : { more: true }),
            ...(row.settlement === undefined ? {} : { settlement: row.settlement }),
          })
        }
        yield* progress.next(Math.min(settlementPollInterval, request.timeoutMillis - elapsed))
      }
    }).pipe(Effect.scoped),

  submissions: (request) =>
    Effect.gen(function* () {
      const ledger = yield* SubmissionLedger
      const rows = yield* ledger.lanePage(request.threadId, {
        after: request.after ?? 0,
        limit: request.limit ?? 50,
      })
      return rows.map(submissionStatus)
    }),

  threads: () =>
    Effect.gen(function* () {
      const ledger = yield* SubmissionLedger
      return yield* ledger.threadIds
    }),

  wake: () =>
    Effect.gen(function* () {
      const alarm = yield* DurableAlarmService
      // A droppable hint: the durable generation, not this alarm, carries correctness.
      yield* alarm.scheduleNow.pipe(
        Effect.catchCause((cause) => Effect.logWarning("Thread wake hint dropped", cause)),
      )
    }),

  // A Submission of another Thread is answered as an unknown one: nothing is removed, and the
  // caller learns nothing about a Thread it was not authorized for.
  // An id with no Submission may be the one an execution not yet started will be admitted as
  // (`threadPage` lists it with its kept completions): they are removed, as the execution's
  // would be. Outside the gate: no work for the pass depends on them.
  forget: (request) =>
    Effect.gen(function* () {
      const ledger = yield* SubmissionLedger
      const found = yield* ledger.lookup(request.submissionId)
      if (Option.isNone(found)) {
        const kept = (yield* ledger.earlyEvents).keys.filter(
          (key) => key.submissionId === request.submissionId && key.threadId === request.threadId,
        )
        for (const key of new Set(kept.map((key) => key.idempotencyKey)))
          yield* ledger.forgetEarly(request.threadId, key)
        return
      }
      if (found.value.threadId !== request.threadId) return
      yield* (yield* ThreadMaintenance).retention.forget(request.submissionId)
    }),
  repairMaintenance: () =>
    Effect.gen(function* () {
      const maintenance = yield* ThreadMaintenance
      return yield* maintenance.repair
    }),
}
