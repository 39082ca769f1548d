/**
 * The runtime's schedule requests and their refusal. Re-exported by `DurableAgentRuntime`.
 */
import { Schema } from "effect"
import { AgentId, ThreadId } from "../../../Identifiers.ts"
import { MissedPolicy, OverlapPolicy, ScheduleId } from "../../schedule/model.ts"

/**
 * A recurring schedule: every occurrence (by `cron` in `timeZone`, UTC by default, or every
 * `everyMillis` from now) admits one Submission of `agentId` with `input` to `threadId`.
 * Scheduling an id again replaces its schedule; the same definition again changes nothing.
 */
export class ScheduleRequest extends Schema.Class<ScheduleRequest>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/ScheduleRequest",
)({
  scheduleId: ScheduleId,
  threadId: ThreadId,
  agentId: AgentId,
  /** The input in its encoded (JSON) form; decoded with the agent's input Schema now and at each occurrence. */
  input: Schema.Json,
  cron: Schema.optionalKey(Schema.String),
  timeZone: Schema.optionalKey(Schema.String),
  everyMillis: Schema.optionalKey(Schema.Number),
  /** After downtime: `latest` (the default) runs the latest missed occurrence once; `skip` waits for the next. */
  missed: Schema.optionalKey(MissedPolicy),
  /**
   * An occurrence due while the previous one has not settled: `queue` (the default) admits it
   * behind that one; `skip` passes over it (recorded as `lastRefusal`, reason `overlap`).
   */
  overlap: Schema.optionalKey(OverlapPolicy),
}) {}

/** A schedule that cannot be made as asked; nothing was written. */
export class InvalidSchedule extends Schema.TaggedError<InvalidSchedule>()("InvalidSchedule", {
  scheduleId: Schema.String,
  /** `cron`, `time-zone`, `interval`: that part is wrong; `spec`: not exactly one of `cron` and `everyMillis`. */
  reason: Schema.Literals(["cron", "time-zone", "interval", "spec"]),
  message: Schema.String,
}) {}
