/**
 * The pruner: removes expired settled Submissions in bounded batches, and one Submission now
 * for `forget`. Host-free: the host runs it as a maintenance lane and gives it the mutation that
 * wraps each write (the Cloudflare host's gate, as bookkeeping that owes no recovery).
 *
 * A batch reads up to `BATCH` candidates (earliest first), keeps those retention must not remove
 * yet (among the newest of their Thread, a message not acknowledged, a join or a child in this
 * Object not settled) by counting their age again from now, hands the rest to the archive when
 * there is one, and removes them in one transaction once it succeeded. A failed archive removes
 * nothing of what it was handed; the pruner waits with backoff and the lane still ends
 * successfully, so the failure never fails the maintenance pass. The backoff is stored (one small
 * row, written only when an archive failed and removed at the first success after it), so a new
 * incarnation waits for it too.
 *
 * The try after a failure splits a batch the archive refuses in halves, depth first, removing
 * each part it accepts: one Submission it refuses does not hold up the rest. A Submission it
 * refuses alone is set aside (kept with its records, logged, its retention counted again from
 * now as a kept one's) when the archive accepted another part in the same pass, or after
 * `SET_ASIDE_AFTER` failed passes in a row (so an archive that is down sets aside at most one
 * Submission per try, and a lone refused one is not tried every few minutes for good). While
 * nothing was accepted the split stops at its second Submission refused alone, so an archive that
 * is down is called at most `log2(BATCH) + 2` times per try. `forget` is refused for the whole
 * batch while the split runs: a part tried later holds copies read before it.
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

/** Failed passes in a row after which a Submission the archive refused alone is set aside. */
const SET_ASIDE_AFTER = 3

/** The wait after failed archives, as stored: how many in a row, and when to try again. @internal */
export interface ArchiveBackoff {
  readonly failures: number
  readonly retryAt: number
}

/** Where the pruner keeps its backoff across incarnations. @internal */
export interface ArchiveBackoffStore<M> {
  readonly load: Effect.Effect<ArchiveBackoff | undefined, M>
  /** Stores it, or removes it (`undefined`). */
  readonly save: (backoff: ArchiveBackoff | undefined) => Effect.Effect<void, M>
}

/** What one drain did. @internal */
export interface PruneReport {
  readonly removed: number
  readonly kept: number
  readonly archiveFailed: boolean
  /** Submissions the archive refused alone, set aside (kept) for one more retention. */
  readonly setAside: number
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
  /** Where the archive's backoff is kept; in memory only when absent. */
  readonly backoff?: ArchiveBackoffStore<M>
}

const itemOf = (row: SubmissionSnapshot) => ({ submissionId: row.submissionId, receiptId: row.receiptId })

/** Builds the pruner of one incarnation. @internal */
export const makePruner = <M>(deps: PrunerDeps<M>) => {
  const { ledger, history, outbox, settings } = deps
  /** The stored backoff, read once per incarnation; `undefined` while no archive failed. */
  let backoff: ArchiveBackoff | undefined
  let loaded = deps.backoff === undefined
  const currentBackoff = Effect.suspend(() =>
    loaded || deps.backoff === undefined
      ? Effect.succeed(backoff)
      : Effect.map(deps.backoff.load, (stored) => {
          if (!loaded) backoff = stored
          loaded = true
          return backoff
        }),
  )
  /** When a failed archive may be tried again; nothing to read without an archive. */
  const retryAt = Option.isNone(deps.archive)
    ? Effect.succeed(undefined)
    : Effect.map(currentBackoff, (current) => current?.retryAt)
  const setBackoff = (next: ArchiveBackoff | undefined) =>
    Effect.suspend(() => {
      const unchanged = next === undefined ? backoff === undefined : false
      backoff = next
      return unchanged || deps.backoff === undefined ? Effect.void : deps.backoff.save(next)
    })
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

  /** One call of the archive; an archive that throws fails like one that fails. */
  const tryArchive = (archive: ThreadArchiveService, part: ReadonlyArray<ArchivedSubmission>) =>
    Effect.gen(function* () {
      yield* deps.hit("retention:archive:before")
      const archived = yield* Effect.exit(Effect.suspend(() => archive.archive(part)))
      if (archived._tag === "Success") yield* deps.hit("retention:archive:after")
      return archived
    })

  /** A failed try: waits with backoff before the next. */
  const failed = (cause: unknown) =>
    Effect.gen(function* () {
      const failures = ((yield* currentBackoff)?.failures ?? 0) + 1
      const next = { failures, retryAt: (yield* Clock.currentTimeMillis) + archiveBackoff(failures) }
      yield* setBackoff(next)
      yield* Effect.logWarning("Retention archive failed; what it refused was not removed", {
        failures,
        retryAt: next.retryAt,
        cause,
      })
    })

  /** Removes `rows`; what the removal skipped (it changed since it was read) is looked at later. */
  const remove = (rows: ReadonlyArray<SubmissionSnapshot>, now: number) =>
    Effect.gen(function* () {
      yield* deps.hit("retention:remove:before")
      const gone = new Set(yield* deps.withMutation(outbox.removeSettled(rows.map(itemOf))))
      yield* deps.hit("retention:remove:after")
      const skipped = rows.filter((row) => !gone.has(row.submissionId)).map((row) => row.submissionId)
      if (skipped.length > 0) yield* deps.withMutation(ledger.deferRetention(skipped, now))
      return gone.size
    })

  /**
   * Archives `rows` and removes what the archive accepted, splitting a refused batch when a try
   * failed before; `failed` when the pass must wait with backoff.
   */
  const archiveAndRemove = (
    archive: ThreadArchiveService,
    rows: ReadonlyArray<SubmissionSnapshot>,
    now: number,
  ) =>
    Effect.gen(function* () {
      // The whole batch, until the split ended: a part tried later holds copies read now.
      for (const row of rows) archiving.add(row.submissionId)
      return yield* archiveSplitting(archive, rows, now).pipe(
        Effect.ensuring(Effect.sync(() => archiving.clear())),
      )
    })

  /** The split itself; see `archiveAndRemove`. */
  const archiveSplitting = (
    archive: ThreadArchiveService,
    rows: ReadonlyArray<SubmissionSnapshot>,
    now: number,
  ) =>
    Effect.gen(function* () {
      const batch = yield* Effect.forEach(rows, (row) =>
        Effect.map(
          Effect.all([history.forSubmission(row.submissionId), outbox.messagesOf(row.submissionId)]),
          ([records, messages]) => new ArchivedSubmission({ submission: row, records, messages }),
        ),
      )
      const failuresBefore = (yield* currentBackoff)?.failures ?? 0
      const pass = { accepted: false, stopped: false, removed: 0, cause: undefined as unknown }
      /** The Submissions the archive refused alone in this pass. */
      const refusedAlone: Array<{ readonly row: SubmissionSnapshot; readonly cause: unknown }> = []
      // Depth first: the parts still to try, the next one last.
      const settle = Effect.gen(function* () {
        const parts: Array<ReadonlyArray<ArchivedSubmission>> = [batch]
        while (!pass.stopped) {
          const part = parts.pop()
          if (part === undefined) return
          const archived = yield* tryArchive(archive, part)
          if (archived._tag === "Success") {
            pass.accepted = true
            pass.removed += yield* remove(
              part.map((item) => item.submission),
              now,
            )
            continue
          }
          pass.cause = archived.cause
          if (failuresBefore === 0 && !pass.accepted) {
            // The first failure waits as an archive that is down does; the next try splits.
            pass.stopped = true
          } else if (part.length === 1) {
            refusedAlone.push({ row: part[0]!.submission, cause: archived.cause })
            // Two refused alone and nothing accepted: the archive may be down.
            if (!pass.accepted && refusedAlone.length >= 2) pass.stopped = true
          } else {
            const half = Math.ceil(part.length / 2)
            parts.push(part.slice(half), part.slice(0, half))
          }
        }
      })
      // An archive still running when the lane is interrupted at its allowance waits for the
      // backoff too, or every alarm would try it again at once.
      yield* settle.pipe(
        Effect.onInterrupt(() => failed("the archive did not answer within retention's allowance")),
      )
      // Set aside when the archive accepted others (it refuses these), or, while it accepts
      // nothing, one per try once it failed `SET_ASIDE_AFTER` tries in a row.
      const setAside = pass.accepted
        ? refusedAlone
        : failuresBefore >= SET_ASIDE_AFTER
          ? refusedAlone.slice(0, 1)
          : []
      if (setAside.length > 0) {
        yield* deps.hit("retention:defer:before")
        yield* deps.withMutation(
          ledger.deferRetention(
            setAside.map(({ row }) => row.submissionId),
            now,
          ),
        )
        yield* deps.hit("retention:defer:after")
        for (const { row, cause } of setAside) {
          yield* Effect.logError(
            "Retention archive refused a Submission alone; it stays stored and is offered again one retention later",
            { submissionId: row.submissionId, threadId: row.threadId, cause },
          )
        }
      }
      // Nothing accepted is a failed try, whatever was set aside.
      if (!pass.accepted) yield* failed(pass.cause)
      else yield* setBackoff(undefined)
      return { removed: pass.removed, setAside: setAside.length, failed: !pass.accepted }
    })

  /** One batch; `more` when a full batch was read and the archive did not fail. */
  const batch = (now: number) =>
    Effect.gen(function* () {
      if (settings.settledForMillis === "forever")
        return { removed: 0, kept: 0, setAside: 0, more: false, failed: false }
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
      if (expired.length === 0)
        return { removed: 0, kept: kept.length, setAside: 0, more: false, failed: false }
      if (Option.isNone(deps.archive)) {
        const removed = yield* remove(expired, now)
        return { removed, kept: kept.length, setAside: 0, more: candidates.length === BATCH, failed: false }
      }
      const retry = yield* retryAt
      if (retry !== undefined && retry > now)
        return { removed: 0, kept: kept.length, setAside: 0, more: false, failed: true }
      const done = yield* archiveAndRemove(deps.archive.value, expired, now)
      return { ...done, kept: kept.length, more: !done.failed && candidates.length === BATCH }
    })

  return {
    /** When retention is next due (see `retentionDeadline`). */
    deadline: Effect.suspend(() =>
      settings.settledForMillis === "forever"
        ? Effect.succeed(Option.none<number>())
        : Effect.gen(function* () {
            const start = Option.getOrUndefined(yield* ledger.retentionStart)
            // Nothing to wait for without a settled row: the stored backoff is not read then.
            if (start === undefined) return Option.none<number>()
            return Option.fromUndefinedOr(retentionDeadline(settings, start, yield* retryAt))
          }),
    ),

    /** Batches while retention is due and the clock is before `stopAt`. */
    drain: (stopAt: number) =>
      Effect.gen(function* () {
        const report: { removed: number; kept: number; archiveFailed: boolean; setAside: number } = {
          removed: 0,
          kept: 0,
          archiveFailed: false,
          setAside: 0,
        }
        while (settings.settledForMillis !== "forever") {
          const now = yield* Clock.currentTimeMillis
          if (now >= stopAt) return report
          const start = Option.getOrUndefined(yield* ledger.retentionStart)
          if (start === undefined) return report
          const due = retentionDeadline(settings, start, yield* retryAt)
          if (due === undefined || due > now) return report
          const done = yield* batch(now)
          report.removed += done.removed
          report.kept += done.kept
          report.setAside += done.setAside
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
