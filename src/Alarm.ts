/**
 * The maintenance subsystem of a Cloudflare Durable Object: the single alarm slot, the
 * mutation gate that prearms every producer, the idempotent maintenance pass and the hooks an
 * application provides to it (`ThreadPublication`, `ThreadHostMaintenance`, combined with
 * `ThreadHostMaintenance.all`). Message delivery between Threads is the Object's own, not a hook.
 * `ThreadMaintenanceFailpoint` is here with its inert production layer; the list of failpoint
 * locations and the handlers tests install are in `Testing`. See the README for the alarm
 * invariant.
 */
export { DurableAlarmService } from "./internal/maintenance/alarmService.ts"
export {
  DurableAlarmError,
  MaintenanceRecordDamaged,
  ThreadHostMaintenanceError,
  ThreadPublicationError,
} from "./internal/maintenance/errors.ts"
export type { MaintenancePassFailure } from "./internal/maintenance/errors.ts"
export { MaintenanceRepair } from "./internal/maintenance/repair.ts"
export { ThreadMaintenanceFailpoint } from "./internal/maintenance/failpoint.ts"
export type {
  ThreadMaintenanceFailpointHandler,
  ThreadMaintenanceFailpointLocation,
} from "./internal/maintenance/failpoint.ts"
export { ThreadMutationGate } from "./internal/maintenance/gate.ts"
export type { MutationOptions } from "./internal/maintenance/gate.ts"
export { ThreadPublication } from "./internal/maintenance/hooks.ts"
export type { AuxiliaryDrain, ThreadPublicationService } from "./internal/maintenance/hooks.ts"
export { ThreadHostMaintenance } from "./internal/maintenance/hostMaintenance.ts"
export type { ThreadHostMaintenanceService } from "./internal/maintenance/hostMaintenance.ts"
export { ThreadMaintenance } from "./internal/maintenance/maintenance.ts"
export type { DeadlineReport, UnreadHookDeadline } from "./internal/maintenance/deadlines.ts"
export { MaintenancePassReport } from "./internal/maintenance/report.ts"
export {
  BindingRetry,
  MAINTENANCE_STATE_KEY,
  MaintenanceRetry,
  ThreadMaintenanceState,
} from "./internal/maintenance/state.ts"
