/** Rules of schedules shared by both ledgers. */
import type { AdmissionRefused, IdempotencyConflict } from "../ledger/model.ts"
import type { ScheduleRefusal } from "./model.ts"

/** The refusal recorded for an occurrence the ledger would not admit. @internal */
export const refusalOf = (
  error: AdmissionRefused | IdempotencyConflict,
  occurrence: number,
  at: number,
): ScheduleRefusal => ({
  occurrence,
  at,
  reason: error._tag === "AdmissionRefused" ? error.reason : "idempotency-conflict",
  message: error.message,
})
