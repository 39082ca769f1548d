/**
 * A crash (`ctx.abort()`) at every maintenance, runtime and storage failpoint location, then a
 * Miniflare restart over the same storage and convergence by alarm delivery alone (see
 * support/crashRunner.ts), and an overdue alarm delivered after a restart with no request.
 * Each group runs its own workerd, so the groups run side by side.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { overdueAlarmAfterRestart } from "./support/crashOverdue.ts"
import { pairPoints } from "./support/crashPairPoints.ts"
import { runCrashGroup } from "./support/crashRunner.ts"
import { type CrashPoint, maintenancePoints, runtimePoints, storagePoints } from "./support/crashScenarios.ts"

const acrossObjects = new Set(
  pairPoints
    .flatMap((point) => [point.parent, point.child])
    .flatMap((entry) => (entry === undefined ? [] : [entry.location])),
)

const group = (kind: "maintenance" | "runtime" | "storage", points: ReadonlyArray<CrashPoint>) =>
  it.live(
    `crashes at every ${kind} location and converges by alarm delivery alone after a restart`,
    () =>
      Effect.gen(function* () {
        const report = yield* runCrashGroup(`crash-${kind}`, kind, points)
        console.log(JSON.stringify({ kind, ...report, violations: report.violations.length }))
        // Subagent and join locations need two Objects: crashSubagents.test.ts arms every one of them.
        expect(report.uncovered.filter((location) => !acrossObjects.has(location))).toEqual([])
        expect(report.violations).toEqual([])
        expect(report.crashed).toBe(points.length)
      }),
    150_000,
  )

describe.concurrent("crash and restart", () => {
  group("maintenance", maintenancePoints)
  group("runtime", runtimePoints)
  group("storage", storagePoints)
  it.live(
    "delivers an overdue alarm after a restart with no request and completes the owed work",
    () => overdueAlarmAfterRestart,
    60_000,
  )
})
