/**
 * An alarm that falls due while the host is down is delivered by the restarted runtime with no
 * request at all, and the work it owes completes: a binding wait (the Object came back on code
 * without the agent) is pending when Miniflare stops; it restarts on the current code after the
 * wait is overdue, and only the alarm signal reaches the test.
 */
import { expect } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { crashDriver } from "./crashDriver.ts"
import { invariantViolations, statesOf } from "./crashEvidence.ts"

/** Runs the overdue-alarm restart and checks it with `expect`. */
export const overdueAlarmAfterRestart: Effect.Effect<void, never, Scope.Scope> = Effect.gen(function* () {
  const driver = yield* crashDriver("crash-overdue")
  const name = "overdue"
  const id = yield* driver.id(name)
  // The first pass dies at begin; the Object comes back on `legacy` code: a binding wait.
  yield* driver.arm(name, [
    { kind: "maintenance", location: "maintenance:begin:before", action: "crash", redeploy: "legacy" },
  ])
  const receipt = yield* driver.call("/submit", {
    name,
    lane: "a",
    key: "k1",
    agentId: "versioned",
    input: { orderId: "o1", amount: 40 },
  })
  expect(receipt.ok).toBe(true)

  // Wait, without a request, for a pass that leaves the binding wait's alarm seconds ahead.
  let due = 0
  const until = Date.now() + 15_000
  while (due === 0 && Date.now() < until) {
    const last = (yield* driver.signals).filter((signal) => signal.name === id).at(-1)
    if (last?.alarm !== null && last?.alarm !== undefined && last.alarm > Date.now() + 1_000) due = last.alarm
    else yield* Effect.sleep(50)
  }
  expect(due).toBeGreaterThan(0)
  yield* driver.stop
  expect(Date.now()).toBeLessThan(due)

  yield* Effect.sleep(due - Date.now() + 500)
  const bootedAt = Date.now()
  yield* driver.boot("normal")
  let delivered: Array<{
    startedAt: number
    alarm: number | null
    calls: { mutating: number; readOnly: number }
  }> = []
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    delivered = (yield* driver.signals).filter((signal) => signal.name === id && signal.startedAt >= bootedAt)
    if (delivered.at(-1)?.alarm === null) break
    yield* Effect.sleep(50)
  }
  expect(delivered.length).toBeGreaterThan(0)
  expect(delivered[0]?.startedAt).toBeGreaterThanOrEqual(due)
  expect(delivered.every((signal) => signal.calls.mutating + signal.calls.readOnly === 0)).toBe(true)
  expect(delivered.at(-1)?.alarm).toBeNull()

  yield* driver.boot("inspect")
  const view = yield* driver.raw(name)
  expect(invariantViolations(view)).toEqual([])
  expect(statesOf(view)).toEqual({ "a/k1": "settled:completed" })
})
