/**
 * The one place that writes the alarm slot: it applies an `AlarmWrite` inside the caller's
 * storage transaction, so the alarm commits atomically with the record it was decided from.
 */
import type { AlarmWrite } from "./alarmPolicy.ts"

/** @internal Applies `write` in `txn`. */
export const writeAlarm = async (txn: DurableObjectTransaction, write: AlarmWrite): Promise<void> => {
  switch (write._tag) {
    case "Keep":
      return
    case "EnsureBy": {
      const current = await txn.getAlarm()
      if (current === null || current > write.at) await txn.setAlarm(write.at)
      return
    }
    case "Set":
      return txn.setAlarm(write.at)
    case "Clear":
      return txn.deleteAlarm()
  }
}
