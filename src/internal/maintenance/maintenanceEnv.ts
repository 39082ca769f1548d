/**
 * `MaintenanceEnv`: what every step of the maintenance pass shares (configuration, failpoints,
 * the gate, the combined hook deadline, the storage transactions), built once per
 * `ThreadMaintenance` layer.
 */
import type { Effect, Option } from "effect"
import type { CloudflareDurableRuntimeConfigValue } from "../../CloudflareConfig.ts"
import type { SubmissionId } from "../../core/Identifiers.ts"
import type { AlarmTiming } from "./alarmPolicy.ts"
import type { HookDeadlineFailure } from "./errors.ts"
import type { ThreadMaintenanceFailpointHandler } from "./failpoint.ts"
import type { ThreadMutationGate } from "./gate.ts"
import type { Transact, TransactRecord } from "./transaction.ts"

/**
 * @internal What an incarnation knows of its stored suspect-head note between events
 * (suspect.ts): the Submissions it counts, as this incarnation's events last read or wrote it
 * (none before its first note).
 */
export interface SuspectMemory {
  counted: ReadonlySet<SubmissionId>
}

/** @internal How long any read of the host deadlines may take before it fails the read. */
export const DEADLINE_READ_MILLIS = 5_000

/** @internal */
export interface MaintenanceEnv {
  readonly config: CloudflareDurableRuntimeConfigValue
  /** What the alarm policy reads of the configuration. */
  readonly timing: AlarmTiming
  readonly hit: ThreadMaintenanceFailpointHandler
  readonly gate: ThreadMutationGate["Service"]
  /** Earliest of the publication, message, projection and host deadlines; bounded by `DEADLINE_READ_MILLIS`. */
  readonly pendingDeadline: Effect.Effect<Option.Option<number>, HookDeadlineFailure>
  /**
   * The same deadlines read hook by hook, each bounded by `DEADLINE_READ_MILLIS`: the earliest of
   * those that answered. The failure rearm reads it, so a hook whose read fails (its retry covers
   * it) does not take the other hooks' deadlines with it.
   */
  readonly readableDeadline: Effect.Effect<Option.Option<number>>
  /** One synchronous maintenance transaction (record and alarm). */
  readonly transact: Transact
  /** One synchronous transaction of the record alone. */
  readonly transactRecord: TransactRecord
  /** The Submissions the stored suspect-head note counts, as this incarnation knows it. */
  readonly suspectMemory: SuspectMemory
}
