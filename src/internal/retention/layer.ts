/**
 * `ThreadRetention`: the pruner of a `ThreadObject`, run by the maintenance pass as a lane of its
 * own with the contract of a host hook (`pendingDeadline`, a bounded `drainUntil`, its
 * allowance), and the `forget` call. Its writes go through the mutation gate as bookkeeping
 * (`invalidatesRecovery: false`): removing settled work owes native recovery nothing, and its
 * own deadline keeps the alarm.
 */
import { withSpanFast } from "../../core/internal/spanned.ts"
import { Clock, Context, DateTime, Effect, Layer, Option } from "effect"
import { MessageOutbox } from "../../core/MessageOutbox.ts"
import { ThreadArchive } from "../../core/Retention.ts"
import type { ForgetRefused } from "../../core/Retention.ts"
import type { LedgerError } from "../../core/internal/ledger/model.ts"
import type { MessageOutboxError } from "../../core/internal/outbox/model.ts"
import type { ThreadStoreError } from "../../core/internal/runtime/shared/model.ts"
import type { DurableRuntimeFailpointError } from "../../core/internal/runtime/shared/failpointError.ts"
import { RuntimeFailpoint } from "../../core/RuntimeFailpoint.ts"
import { SubmissionLedger } from "../../core/SubmissionLedger.ts"
import { ThreadHistory } from "../../core/ThreadHistory.ts"
import type { SubmissionId } from "../../core/Identifiers.ts"
import { type ArchiveBackoff, makePruner } from "../../core/internal/retention/pruner.ts"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import { expiresAt, type RetentionSettings } from "../../core/internal/retention/policy.ts"
import type { SubmissionSnapshot } from "../../core/internal/ledger/model.ts"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import {
  alarmErrorFromCause,
  DurableAlarmError,
  type MaintenanceRecordDamaged,
  recordDamageOf,
  ThreadHostMaintenanceError,
} from "../maintenance/errors.ts"
import { ThreadMutationGate } from "../maintenance/gate.ts"
import type { ThreadHostMaintenanceService } from "../maintenance/hostMaintenance.ts"

/** The name retention's failures carry as a hook. */
const HOOK = "retention"

/**
 * The storage key of the archive's backoff: present only while the archive's last try failed, so
 * an Object whose archive succeeds never writes it.
 */
const ARCHIVE_BACKOFF_KEY = "effect-agent:retention-archive-backoff:v1"

const isBackoff = (value: unknown): value is ArchiveBackoff =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as ArchiveBackoff).failures === "number" &&
  typeof (value as ArchiveBackoff).retryAt === "number"

const storageError = (operation: string) => (cause: unknown) => alarmErrorFromCause(operation, cause)

const laneError = (operation: string) => (cause: { readonly message: string }) =>
  new ThreadHostMaintenanceError({ hook: HOOK, operation, message: cause.message, cause })

/** What a removal can fail with inside the Object: its stores, the gate, a test failpoint. @internal */
export type RetentionFailure =
  LedgerError | ThreadStoreError | MessageOutboxError | DurableAlarmError | DurableRuntimeFailpointError

/** @internal */
export interface ThreadRetentionService {
  readonly settings: RetentionSettings
  /** The maintenance lane. */
  readonly lane: ThreadHostMaintenanceService
  /**
   * Removes one settled Submission now; refused, as every mutation, while the record is damaged.
   * Its other failures are its stores' and the gate's own (no application hook is involved).
   */
  readonly forget: (
    submissionId: SubmissionId,
  ) => Effect.Effect<void, ForgetRefused | MaintenanceRecordDamaged | RetentionFailure>
  /** When retention may remove `row` at the earliest; `undefined` when kept forever. */
  readonly expiresAt: (row: SubmissionSnapshot) => number | undefined
}

const FOREVER: RetentionSettings = {
  settledForMillis: "forever",
  keepPerThread: 0,
  windowMillis: 3_600_000,
  dispatchTimeoutMillis: 1,
}

/** @internal Retention of a `ThreadObject`; the default keeps everything. */
export const ThreadRetention = Context.Reference<ThreadRetentionService>(
  "@effect-agent/platform-cloudflare/ThreadRetention",
  {
    defaultValue: () => ({
      settings: FOREVER,
      lane: {
        dispatchTimeoutMillis: 1,
        drainUntil: () => Effect.void,
        pendingDeadline: Effect.succeed(Option.none()),
      },
      forget: () => Effect.void,
      expiresAt: () => undefined,
    }),
  },
)

/** @internal The retention of a `ThreadObject`, over its stores, gate and configuration. */
export const retentionLayer = Layer.effect(
  ThreadRetention,
  Effect.gen(function* () {
    const settings = (yield* CloudflareDurableRuntimeConfig).retention
    const gate = yield* ThreadMutationGate
    const failpoint = yield* RuntimeFailpoint
    const { ctx } = yield* DurableObjectContext
    const pruner = makePruner<DurableAlarmError>({
      ledger: yield* SubmissionLedger,
      history: yield* ThreadHistory,
      outbox: yield* MessageOutbox,
      archive: yield* Effect.serviceOption(ThreadArchive),
      settings,
      hit: failpoint.hit,
      withMutation: (body) => gate.withMutation(body, { invalidatesRecovery: false }),
      // One KV row, read once per incarnation; a stored value that is not one is ignored.
      backoff: {
        load: Effect.try({
          try: () => {
            const stored: unknown = ctx.storage.kv.get(ARCHIVE_BACKOFF_KEY)
            return isBackoff(stored) ? stored : undefined
          },
          catch: storageError("read the archive backoff"),
        }),
        save: (backoff) =>
          Effect.try({
            try: () => {
              if (backoff === undefined) ctx.storage.kv.delete(ARCHIVE_BACKOFF_KEY)
              else
                ctx.storage.kv.put(ARCHIVE_BACKOFF_KEY, {
                  failures: backoff.failures,
                  retryAt: backoff.retryAt,
                })
            },
            catch: storageError("store the archive backoff"),
          }),
      },
    })
    return {
      settings,
      lane: {
        dispatchTimeoutMillis: settings.dispatchTimeoutMillis,
        pendingDeadline: pruner.deadline.pipe(Effect.mapError(laneError("read retention deadline"))),
        drainUntil: (_sourceFinished, dispatchUntil) =>
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            const stopAt = Math.min(
              DateTime.toEpochMillis(dispatchUntil),
              now + settings.dispatchTimeoutMillis,
            )
            const report = yield* pruner.drain(stopAt)
            if (report.removed > 0 || report.kept > 0 || report.setAside > 0) {
              yield* Effect.annotateCurrentSpan({
                "retention.removed": report.removed,
                "retention.kept": report.kept,
                "retention.setAside": report.setAside,
              })
            }
          }).pipe(
            Effect.mapError(laneError("remove expired submissions")),
            withSpanFast("ThreadRetention.drain"),
          ),
      },
      forget: (submissionId) =>
        pruner
          .forget(submissionId)
          .pipe(
            Effect.mapError((error) =>
              error instanceof DurableAlarmError ? (recordDamageOf(error) ?? error) : error,
            ),
          ),
      expiresAt: (row) => expiresAt(settings, row),
    } satisfies ThreadRetentionService
  }),
)
