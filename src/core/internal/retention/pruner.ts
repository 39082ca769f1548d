/**
 * The pruner: removes expired settled Submissions in bounded batches, and one Submission now
 * for `forget`. Host-free: the host runs it as a maintenance lane and gives it the mutation that
 * wraps each write (the Cloudflare host's gate, as bookkeeping that owes no recovery).
 *
 * A batch reads up to `BATCH` candidates (earliest first), keeps those retention must not remove
 * yet (among the newest of their Thread, a message not acknowledged, a join or a child in this
 * Object not settled) by counting their age again from now, hands the rest to the archive when
 * there is one, and removes them in one transaction once it succeeded. A failed archive removes
 * nothing; the pruner waits with backoff (in memory: a new incarnation tries at once) and the
 * lane still ends successfully, so the failure never fails the maintenance pass.
 */
import { Clock, Effect, Option } from "effect"
import type { RuntimeFailpointHandler } from "../../RuntimeFailpoint.ts"
import type { MessageOutbox } from "../../MessageOutbox.ts"
import { ArchivedSubmission, ForgetRefused, type ThreadArchiveService } from "../../Retention.ts"
import type { SubmissionLedger } from "../../SubmissionLedger.ts"
import type { ThreadHistory } from "../../ThreadHistory.ts"
import type { SubmissionId } from "../../Identifiers.ts"
import type { SubmissionSnapshot } from "../ledger/model.ts"
import { archiveBackoff, keptByThread, retentionDeadline, type RetentionSettings } from "./policy.ts"

/** Candidates one batch reads. */
const BATCH = 32

/** What one drain did. @internal */
export interface PruneReport {
  readonly removed: number
  readonly kept: number
  readonly archiveFailed: boolean
}

/** @internal */
export interface PrunerDeps<M> {
  readonly ledger: SubmissionLedger["Service"]
  readonly history: ThreadHistory["Service"]
  readonly outbox: MessageOutbox["Service"]
  readonly archive: Option.Option<ThreadArchiveService>
  readonly settings: RetentionSettings
  readonly hit: RuntimeFailpointHandler
  /** Runs one write of the pruner as the host's mutation. */
  readonly withMutation: <A, E>(body: Effect.Effect<A, E>) => Effect.Effect<A, E | M>
}

const itemOf = (row: SubmissionSnapshot) => ({ submissionId: row.submissionId, receiptId: row.receiptId })

/** Builds the pruner of one incarnation. @internal */
export const makePruner = <M>(deps: PrunerDeps<M>) => {
  const { ledger, history, outbox, settings } = deps
  let archiveFailures = 0
  let archiveRetryAt: number | undefined
  /** The Submissions of the batch the archive is storing now: `forget` refuses them meanwhile. */
  const archiving = new Set<SubmissionId>()

  /** Why a settled Submission must stay for now, if it must. */
  const neededBy = (row: SubmissionSnapshot) =>
    Effect.gen(function* () {
      const messages = yield* outbox.messagesOf(row.submissionId)
      if (messages.some((message) => message.acknowledgedAt === undefined))
        return "a message it sent is not acknowledged"
      if ((yield* ledger.joinsOf(row.threadId, row.submissionId)).length > 0)
        return "a join it hosts has not settled"
      // Every child is admitted through the outbox: a Submission that sent no admission has none.
      if (!messages.some((message) => message.message._tag === "AdmitChild")) return undefined
      for (const record of yield* history.forSubmission(row.submissionId)) {
        if (record.entry._tag !== "ChildStarted") continue
        const child = yield* ledger.lookupByKey(record.entry.threadId, record.entry.idempotencyKey)
        if (
          Option.isSome(child) &&
          child.value.parent?.submissionId === row.submissionId &&
          child.value.state !== "settled"
        )
          return "a child it started has not settled"
      }
      return undefined
    })

  const archiveBatch = (archive: ThreadArchiveService, rows: ReadonlyArray<SubmissionSnapshot>) =>
    Effect.gen(function* () {
      const batch = yield* Effect.forEach(rows, (row) =>
        Effect.map(
          Effect.all([history.forSubmission(row.submissionId), outbox.messagesOf(row.submissionId)]),
          ([records, messages]) => new ArchivedSubmission({ submission: row, records, messages }),
        ),
      )
      yield* deps.hit("retention:archive:before")
      const failed = (cause: unknown) =>
        Effect.gen(function* () {
          archiveFailures += 1
          archiveRetryAt = (yield* Clock.currentTimeMillis) + archiveBackoff(archiveFailures)
          yield* Effect.logWarning("Retention archive failed; nothing was removed", {
            failures: archiveFailures,
            retryAt: archiveRetryAt,
            cause,
          })
        })
      // An archive that throws fails like one that fails; one still running when the lane is
      // interrupted at its allowance waits for the backoff too, or every alarm would try it again
      // at once.
      const archived = yield* Effect.exit(
        Effect.suspend(() => {
          for (const row of rows) archiving.add(row.submissionId)
          return archive.archive(batch)
        }),
      ).pipe(
        Effect.onInterrupt(() => failed("the archive did not answer within retention's allowance")),
        Effect.ensuring(Effect.sync(() => archiving.clear())),
      )
      if (archived._tag === "Failure") {
        yield* failed(archived.cause)
        return false
      }
      archiveFailures = 0
      archiveRetryAt = undefined
      yield* deps.hit("retention:archive:after")
      return true
    })

  /** One batch; `more` when a full batch was read and the archive did not fail. */
  const batch = (now: number) =>
    Effect.gen(function* () {
      if (settings.settledForMillis === "forever") return { removed: 0, kept: 0, more: false, failed: false }
      const candidates = yield* ledger.retentionCandidates({
        countedBefore: now - settings.settledForMillis,
        limit: BATCH,
      })
      const kept: Array<SubmissionId> = []
      const expired: Array<SubmissionSnapshot> = []
      for (const { snapshot, laneTail } of candidates) {
        if (keptByThread(settings, snapshot, laneTail) || (yield* neededBy(snapshot)) !== undefined) {
          kept.push(snapshot.submissionId)
        } else expired.push(snapshot)
      }
      if (kept.length > 0) {
        yield* deps.hit("retention:defer:before")
        yield* deps.withMutation(ledger.deferRetention(kept, now))
        yield* deps.hit("retention:defer:after")
      }
      let removed = 0
      if (expired.length > 0) {
        if (Option.isSome(deps.archive)) {
          if (archiveRetryAt !== undefined && archiveRetryAt > now)
            return { removed, kept: kept.length, more: false, failed: true }
          if (!(yield* archiveBatch(deps.archive.value, expired)))
            return { removed, kept: kept.length, more: false, failed: true }
        }
        yield* deps.hit("retention:remove:before")
        const gone = new Set(yield* deps.withMutation(outbox.removeSettled(expired.map(itemOf))))
        yield* deps.hit("retention:remove:after")
        removed = gone.size
        // What the removal skipped (it changed since it was read) is looked at again later.
        const skipped = expired.filter((row) => !gone.has(row.submissionId)).map((row) => row.submissionId)
        if (skipped.length > 0) yield* deps.withMutation(ledger.deferRetention(skipped, now))
      }
      return { removed, kept: kept.length, more: candidates.length === BATCH, failed: false }
    })

  return {
    /** When retention is next due (see `retentionDeadline`). */
    deadline: Effect.suspend(() =>
      settings.settledForMillis === "forever"
        ? Effect.succeed(Option.none<number>())
        : Effect.map(ledger.retentionStart, (start) =>
            Option.fromUndefinedOr(retentionDeadline(settings, Option.getOrUndefined(start), archiveRetryAt)),
          ),
    ),

    /** Batches while retention is due and the clock is before `stopAt`. */
    drain: (stopAt: number) =>
      Effect.gen(function* () {
        const report: { removed: number; kept: number; archiveFailed: boolean } = {
          removed: 0,
          kept: 0,
          archiveFailed: false,
        }
        while (settings.settledForMillis !== "forever") {
          const now = yield* Clock.currentTimeMillis
          if (now >= stopAt) return report
          const start = Option.getOrUndefined(yield* ledger.retentionStart)
          const due = retentionDeadline(settings, start, archiveRetryAt)
          if (due === undefined || due > now) return report
          const done = yield* batch(now)
          report.removed += done.removed
          report.kept += done.kept
          report.archiveFailed ||= done.failed
          if (!done.more) return report
        }
        return report
      }),

    /** Removes one settled Submission now; an id with no row answers as a removed one does. */
    forget: (submissionId: SubmissionId) =>
      Effect.gen(function* () {
        const found = yield* ledger.lookup(submissionId)
        if (Option.isNone(found)) return
        const row = found.value
        if (row.state !== "settled") {
          return yield* new ForgetRefused({
            submissionId,
            reason: "not-settled",
            message: `submission ${submissionId} is ${row.state}: only a settled Submission can be forgotten`,
          })
        }
        // A copy the archive is writing now would land after the erasure was answered.
        const needed = archiving.has(submissionId)
          ? "it is being handed to the archive now (forget it again once that ended, and erase the archive's copy)"
          : yield* neededBy(row)
        if (needed !== undefined) {
          return yield* new ForgetRefused({
            submissionId,
            reason: "still-needed",
            message: `submission ${submissionId} is still needed: ${needed}`,
          })
        }
        yield* deps.hit("retention:forget:before")
        yield* deps.withMutation(outbox.removeSettled([itemOf(row)]))
        yield* deps.hit("retention:forget:after")
      }),
  }
}

/** @internal */
export type Pruner<M> = ReturnType<typeof makePruner<M>>
