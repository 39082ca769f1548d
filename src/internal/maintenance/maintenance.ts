/**
 * `ThreadMaintenance`: the idempotent maintenance pass of one physical Object, its O(1)
 * constructor gate, and the gated mutation with best-effort publication.
 */
import { Context, Effect, Layer, Option, Ref, Semaphore } from "effect"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import { type LedgerError, SubmissionLedger } from "../../core/SubmissionLedger.ts"
import { ThreadProjectionMaintenance } from "../../core/ThreadProjectionMaintenance.ts"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import { DurableAlarmService } from "./alarmService.ts"
import { alarmTiming } from "./alarmPolicy.ts"
import {
  checkedPublication,
  type DeadlineReport,
  earliestDeadline,
  reportDeadlines,
  makeHostDeadline,
  makeHostDeadlineReport,
  makePendingDeadline,
} from "./deadlines.ts"
import { ThreadRetention, type ThreadRetentionService } from "../retention/layer.ts"
import { makeEnsureAlarm } from "./ensure.ts"
import { DEADLINE_READ_MILLIS, type MaintenanceEnv } from "./maintenanceEnv.ts"
import { makeTransact, makeTransactRecord } from "./transaction.ts"
import { DurableAlarmError, type MaintenancePassFailure, type ThreadHostMaintenanceError } from "./errors.ts"
import { ThreadMaintenanceFailpoint } from "./failpoint.ts"
import { type MutationOptions, ThreadMutationGate } from "./gate.ts"
import { publishCommitted, ThreadMessageDelivery, ThreadPublication } from "./hooks.ts"
import { ThreadHostMaintenance } from "./hostMaintenance.ts"
import { makePass } from "./pass.ts"
import { makeRepair, type MaintenanceRepair } from "./repair.ts"
import type { MaintenancePassReport } from "./report.ts"
import { makeSuspectMemory } from "./suspect.ts"

/**
 * Thread maintenance of one physical Object.
 *
 * A caught-up event takes an O(1) path with no recovery, ledger scan or history read. Recovery
 * strictly precedes the one head Attempt of an event. The finish acknowledges only the
 * generation observed at pass start, so a racing mutation stays dirty with its alarm. Stable
 * external waits are acknowledged and the alarm cleared; autonomous work keeps a bounded,
 * durable backoff. Auxiliary host work belongs to the event Scope and never gates native work.
 */
export class ThreadMaintenance extends Context.Service<
  ThreadMaintenance,
  {
    /** One idempotent pass; failures propagate after durably scheduling bounded recovery. */
    readonly pass: Effect.Effect<MaintenancePassReport, MaintenancePassFailure>
    /** Constructor gate: O(1) record inspection; a dirty generation or host deadline gets an alarm. */
    readonly ensureAlarm: Effect.Effect<void, MaintenancePassFailure>
    /**
     * A mutation (recovery-invalidating unless `options` say otherwise), then best-effort
     * publication inside the mutation window.
     */
    readonly withMutation: <A, E, R>(
      body: Effect.Effect<A, E, R>,
      options?: MutationOptions,
    ) => Effect.Effect<A, E | DurableAlarmError, R>
    /** Rebuilds a damaged maintenance record from the ledger; a no-op on a healthy one. */
    readonly repair: Effect.Effect<MaintenanceRepair, DurableAlarmError | LedgerError>
    /**
     * The earliest deadline of the hooks this pass serves besides publication (message delivery,
     * projection, host maintenance), as captured when the layer was built; read-only.
     */
    readonly hostDeadline: Effect.Effect<
      Option.Option<number>,
      DurableAlarmError | ThreadHostMaintenanceError
    >
    /**
     * `hostDeadline` read hook by hook for the operator's `obligations`: a hook whose read fails
     * (or answers no finite time, or nothing within 5 s) is named instead of failing the rest.
     */
    readonly hostDeadlineReport: Effect.Effect<DeadlineReport>
    /** Retention of settled Submissions, as captured when the layer was built (its lane, `forget`). */
    readonly retention: ThreadRetentionService
  }
>()("@effect-agent/platform-cloudflare/ThreadMaintenance") {
  static readonly layer: Layer.Layer<
    ThreadMaintenance,
    never,
    | ThreadMutationGate
    | ThreadPublication
    | ThreadProjectionMaintenance
    | DurableAgentRuntime
    | SubmissionLedger
    | DurableAlarmService
    | ThreadMaintenanceFailpoint
    | CloudflareDurableRuntimeConfig
    | DurableObjectContext
  > = Layer.effect(
    this,
    Effect.gen(function* () {
      const { ctx } = yield* DurableObjectContext
      const config = yield* CloudflareDurableRuntimeConfig
      const failpoint = yield* ThreadMaintenanceFailpoint
      const gate = yield* ThreadMutationGate
      const publication = checkedPublication(yield* ThreadPublication)
      const projection = yield* ThreadProjectionMaintenance
      const runtime = yield* DurableAgentRuntime
      const ledger = yield* SubmissionLedger
      const alarm = yield* DurableAlarmService
      // References: whatever is in context when the layer is built is captured.
      const messages = yield* ThreadMessageDelivery
      const host = yield* ThreadHostMaintenance
      const retentionService = yield* ThreadRetention
      const retention = retentionService.lane
      const permit = yield* Semaphore.make(1)
      const cursorCovered = yield* Ref.make(false)

      const hostDeadline = makeHostDeadline({ messages, projection, host })
      const hostDeadlineReport = makeHostDeadlineReport({ messages, projection, host }, DEADLINE_READ_MILLIS)
      const env: MaintenanceEnv = {
        config,
        timing: alarmTiming(config),
        hit: failpoint.hit,
        gate,
        // Bounded: a hook's read that never answers (a gated write, a network call, which its
        // contract forbids) would otherwise hold the constructor gate or a finish commit, and
        // with them every mutation, until the event deadline.
        pendingDeadline: makePendingDeadline(
          publication,
          Effect.zipWith(hostDeadline, retention.pendingDeadline, earliestDeadline),
        ).pipe(
          Effect.timeoutOrElse({
            duration: DEADLINE_READ_MILLIS,
            orElse: () =>
              Effect.fail(
                new DurableAlarmError({
                  operation: "read pending deadlines",
                  message: `The hooks' pending deadlines did not answer within ${DEADLINE_READ_MILLIS} ms`,
                }),
              ),
          }),
        ),
        readableDeadline: Effect.map(
          Effect.all(
            [
              reportDeadlines(
                [
                  { hook: "publication", read: publication.pendingDeadline },
                  { hook: "retention", read: retention.pendingDeadline },
                ],
                DEADLINE_READ_MILLIS,
              ),
              hostDeadlineReport,
            ],
            { concurrency: "unbounded" },
          ),
          ([own, hosts]) => earliestDeadline(own.deadline, hosts.deadline),
        ),
        transact: makeTransact(ctx.storage),
        transactRecord: makeTransactRecord(ctx.storage),
        suspectMemory: makeSuspectMemory(),
      }
      const ensureAlarm = makeEnsureAlarm(
        env,
        Effect.map(ledger.earliestDue(1), (rows) => rows[0]?.dueAt),
      )

      return {
        pass: makePass({
          env,
          alarm,
          permit,
          cursorCovered,
          services: { runtime, ledger },
          publication,
          auxiliary: {
            messages,
            host,
            retention,
            projection,
            projectionDispatchTimeoutMillis: config.projectionDispatchTimeoutMillis,
          },
        }),
        ensureAlarm: gate.withSnapshot(() => ensureAlarm),
        withMutation: <A, E, R>(body: Effect.Effect<A, E, R>, options?: MutationOptions) =>
          gate.withMutation(
            Effect.tap(body, () => publishCommitted(publication)),
            options,
          ),
        repair: makeRepair(env, ledger),
        hostDeadline,
        hostDeadlineReport,
        retention: retentionService,
      }
    }),
  )
}
