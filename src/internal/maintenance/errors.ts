/** The typed failure of the alarm slot and the maintenance record (re-exported by `Alarm`). */
import { Schema } from "effect"
import { safeCauseMessage } from "../boundary.ts"

/**
 * A Durable Object storage or alarm operation failed, a host declared an invalid allowance, or
 * the maintenance event ran out of time. `operation` names the step.
 */
export class DurableAlarmError extends Schema.TaggedError<DurableAlarmError>()("DurableAlarmError", {
  operation: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect()),
}) {}

/** @internal */
export const alarmErrorFromCause = (operation: string, cause: unknown): DurableAlarmError =>
  new DurableAlarmError({
    operation,
    message: safeCauseMessage(cause, `Durable Object storage could not ${operation}`),
    cause,
  })
