/**
 * What the event-cost Worker's Objects share in their isolate: the alarm deliveries so far and
 * the handlers running now, so a loop can let every event end before it goes on or answers.
 */
import { EventCostCalls } from "./report.ts"

/** The deliveries of every Object of the isolate, and the handlers running now. */
export const alarms = {
  deliveries: 0,
  running: new Set<Promise<void>>(),
}

/** Counts a delivery and keeps `handler` among the running ones until it ends, however it ends. */
export const tracked = async (handler: Promise<void>): Promise<void> => {
  alarms.deliveries += 1
  const settled = handler.then(
    () => undefined,
    () => undefined,
  )
  alarms.running.add(settled)
  try {
    await handler
  } finally {
    alarms.running.delete(settled)
  }
}

/** Until no alarm handler of this isolate runs, a timer's turn included (the next may start at once). */
export const eventsOver = async (): Promise<void> => {
  const drain = async () => {
    while (alarms.running.size > 0) await Promise.all(alarms.running)
  }
  await drain()
  await new Promise((resolve) => setTimeout(resolve, 1))
  await drain()
}

/** Every counted storage call at zero. */
export const zeroCalls = (): Record<keyof typeof EventCostCalls.fields, number> =>
  Object.fromEntries(Object.keys(EventCostCalls.fields).map((name) => [name, 0])) as Record<
    keyof typeof EventCostCalls.fields,
    number
  >
