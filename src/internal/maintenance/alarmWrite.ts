/**
 * The one place that writes the alarm slot: it applies an `AlarmWrite` inside the caller's
 * maintenance transaction, so the alarm commits atomically with the record it was decided from.
 */
import type { AlarmWrite } from "./alarmPolicy.ts"
import type { MaintenanceTxn } from "./transaction.ts"

/** @internal Applies `write` in `txn`. */
export const writeAlarm = (txn: MaintenanceTxn, write: AlarmWrite): void => {
  switch (write._tag) {
    case "Keep":
      return
    case "EnsureBy": {
      const current = txn.alarm()
      if (current === null || current > write.at) txn.setAlarm(write.at)
      return
    }
    case "Set":
      return txn.setAlarm(write.at)
    case "Clear":
      return txn.deleteAlarm()
  }
}
