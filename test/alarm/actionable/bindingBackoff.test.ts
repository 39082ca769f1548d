import { describe, expect, it } from "@effect/vitest"
import { Clock, DateTime, Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import type { ThreadMaintenanceFailpointLocation } from "../../../src/Alarm.ts"
import { ThreadId } from "../../../src/core/Identifiers.ts"
import { makeRuns, runsOf } from "../../core/runtimeAgents.ts"
import { failureOf } from "../fixtures.ts"
import { alarmOf, dayAhead, inObject, objectName } from "../harness.ts"
import { bindingWorld, hostFailure } from "./bindingWorld.ts"
import {
  abandon,
  bindingWaitsOf,
  converge,
  deliver,
  deliverOk,
  fingerprint,
  generationsOf,
  reportOf,
  rowOf,
  submit,
  tagsOf,
} from "./fixtures.ts"
import { maintenanceSwitchboard } from "../../support/switchboard.ts"

const delays = [5_000, 10_000, 20_000, 40_000, 60_000, 60_000]

const crashes: ReadonlyArray<ThreadMaintenanceFailpointLocation> = [
  "maintenance:binding-retry:before",
  "maintenance:binding-retry:after",
  "maintenance:retry:before",
  "maintenance:retry:after",
]

describe("a binding wait", () => {
  it.effect("is retained across host failures, ensureAlarm and eviction, and survives crashes", () =>
    inObject(objectName("binding-backoff"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const runs = yield* makeRuns
        const { host, incarnation, epochOf } = bindingWorld(ctx, runs)
        const root = yield* submit(yield* incarnation("compatible"), "planner", "three-steps", "root", {
          n: 1,
        })
        const id = root.submissionId
        const alarm = alarmOf(ctx)

        // The runtime alone: the claim fails closed and goes back to the lane.
        let inc = yield* incarnation("changed")
        const yieldAfter = DateTime.makeUnsafe((yield* Clock.currentTimeMillis) + 60_000)
        const direct = yield* Effect.flip(
          inc.runtime.processThreadHead(ThreadId.make("planner"), { yieldAfter }),
        )
        expect(direct._tag).toBe("BindingDigestMismatch")
        expect((yield* rowOf(inc, id)).ownership).toBeUndefined()

        for (const [iteration, delay] of delays.entries()) {
          // A failing host: the due pass claims once, records the wait, then fails.
          host.failing = true
          const claimedFrom = yield* epochOf(inc, id)
          const failed = yield* deliver(ctx, inc.maintenance)
          const before = yield* Clock.currentTimeMillis
          expect(hostFailure(failureOf(failed))).toBe("host delivery remains pending")
          expect(yield* epochOf(inc, id)).toBe(claimedFrom + 1)
          expect((yield* rowOf(inc, id)).ownership).toBeUndefined()
          expect(yield* bindingWaitsOf(ctx)).toMatchObject([
            { submissionId: id, attempts: iteration + 1, notBefore: before + delay },
          ])
          const retryAlarm = (yield* alarm) ?? 0
          expect(retryAlarm).toBeGreaterThanOrEqual(before + 50)
          expect(retryAlarm).toBeLessThanOrEqual(before + 100)
          inc = yield* incarnation("changed")
          yield* inc.maintenance.ensureAlarm
          expect(yield* alarm).toBe(retryAlarm)

          // At that deadline another failing pass does not claim again.
          const epoch = yield* epochOf(inc, id)
          expect(Exit.isFailure(yield* deliver(ctx, inc.maintenance))).toBe(true)
          expect(yield* epochOf(inc, id)).toBe(epoch)

          // A healthy host at the next retry: the alarm is the binding wait, exactly.
          host.failing = false
          expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual(["actionable", 0, 0, 1, "rearmed"])
          expect(yield* alarm).toBe(before + delay)
          yield* inc.maintenance.ensureAlarm
          inc = yield* incarnation("changed")
          yield* inc.maintenance.ensureAlarm
          expect(yield* alarm).toBe(before + delay)

          // A host deadline is serviced early without native recovery, then the wait returns.
          const hostNow = yield* Clock.currentTimeMillis
          host.deadline = iteration === 0 ? hostNow - 1 : before + 1_000
          yield* inc.maintenance.ensureAlarm
          expect(yield* alarm).toBe(iteration === 0 ? hostNow + 50 : before + 1_000)
          const serviced = host.serviced
          expect((yield* deliverOk(ctx, inc.maintenance)).phase).toBe("caught-up")
          expect(host.serviced).toBe(serviced + 1)
          expect(yield* epochOf(inc, id)).toBe(epoch)
          expect(yield* alarm).toBe(before + delay)
          const of = { submissions: [id], threads: ["planner"] }
          const quiet = yield* fingerprint(ctx, inc, of)
          expect((yield* inc.maintenance.pass).phase).toBe("caught-up")
          expect(yield* fingerprint(ctx, inc, of)).toBe(quiet)
          expect(yield* alarm).toBe(before + delay)

          if (iteration === 0) {
            // Other lanes stay independently due: compatible work runs past the blocked head.
            const other = yield* submit(inc, "other", "three-steps", "compatible", { n: 2 })
            expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual([
              "actionable",
              0,
              1,
              1,
              "rearmed",
            ])
            expect((yield* rowOf(inc, other.submissionId)).settlement?.output).toBe(12)
            expect(yield* bindingWaitsOf(ctx)).toMatchObject([{ submissionId: id, attempts: 1 }])
            expect(reportOf(yield* deliverOk(ctx, inc.maintenance))).toEqual([
              "actionable",
              0,
              0,
              1,
              "rearmed",
            ])
            expect(yield* alarm).toBe(before + delay)
          }
        }
        expect(host.serviced).toBe(delays.length)
        expect(yield* tagsOf(inc, id)).toEqual(["SubmissionAccepted"])
        expect((yield* rowOf(inc, id)).state).toBe("ready")
        const pending = yield* generationsOf(ctx)
        expect(pending.dirty).toBeGreaterThan(pending.processed)

        // Crashes around the binding and failure commits; the host keeps failing.
        host.failing = true
        for (const location of crashes) {
          const board = yield* maintenanceSwitchboard()
          const killed = yield* board.freeze(location)
          const doomed = yield* incarnation("changed", board)
          yield* abandon(deliver(ctx, doomed.maintenance))
          yield* killed
          expect((yield* rowOf(doomed, id)).ownership, location).toBeUndefined()
          expect(yield* alarm, location).not.toBeNull()
          inc = yield* incarnation("changed")
          yield* inc.maintenance.ensureAlarm
          const epoch = yield* epochOf(inc, id)
          yield* TestClock.adjust(100)
          expect(Exit.isFailure(yield* Effect.exit(inc.maintenance.pass)), location).toBe(true)
          // Only an unsaved binding outcome lets the next pass claim again.
          const reclaimed = location === "maintenance:binding-retry:before" ? 1 : 0
          expect((yield* epochOf(inc, id)) - epoch, location).toBe(reclaimed)
          yield* TestClock.adjust("60 seconds")
        }

        // Compatible code: the head completes although the host fails, and its wait is removed.
        inc = yield* incarnation("compatible")
        expect(Exit.isFailure(yield* deliver(ctx, inc.maintenance))).toBe(true)
        expect((yield* rowOf(inc, id)).settlement?.outcome).toBe("completed")
        expect(yield* bindingWaitsOf(ctx)).toEqual([])
        host.failing = false
        yield* converge(ctx, inc.maintenance)
        expect(yield* alarm).toBeNull()
        expect(yield* runsOf(runs)).toEqual({ one: 2, two: 2, three: 2 })
        const settled = yield* generationsOf(ctx)
        expect(settled.processed).toBe(settled.dirty)
        expect(host.openAtRetry.length).toBeGreaterThan(0)
        expect(host.openAtRetry.every((open) => open === 0)).toBe(true)
      }),
    ),
  )

  it.effect.each(["maintenance:binding-retry:before", "maintenance:binding-retry:after"] as const)(
    "is cleared without keeping the Object awake after a crash at %s",
    (location) =>
      inObject(objectName(`binding-clearing-${location}`), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          const runs = yield* makeRuns
          const { incarnation } = bindingWorld(ctx, runs)
          const receipt = yield* submit(yield* incarnation("compatible"), "planner", "three-steps", "root", {
            n: 1,
          })
          const changed = yield* incarnation("changed")
          expect(reportOf(yield* deliverOk(ctx, changed.maintenance))).toEqual([
            "actionable",
            0,
            0,
            1,
            "rearmed",
          ])
          const waitedAt = yield* Clock.currentTimeMillis
          expect(yield* alarmOf(ctx)).toBe(waitedAt + 5_000)

          // Compatible code settles the head; the incarnation dies while clearing its wait.
          const board = yield* maintenanceSwitchboard()
          const killed = yield* board.freeze(location)
          const doomed = yield* incarnation("compatible", board)
          yield* abandon(deliver(ctx, doomed.maintenance))
          yield* killed
          expect((yield* rowOf(doomed, receipt.submissionId)).settlement?.outcome).toBe("completed")
          expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })

          const inc = yield* incarnation("compatible")
          yield* inc.maintenance.ensureAlarm
          yield* TestClock.adjust(100)
          expect(reportOf(yield* inc.maintenance.pass)).toEqual(["actionable", 0, 0, 0, "cleared"])
          expect(yield* alarmOf(ctx)).toBeNull()
          expect(yield* bindingWaitsOf(ctx)).toEqual([])
          expect(yield* runsOf(runs)).toEqual({ one: 1, two: 1, three: 1 })
        }),
      ),
  )
})
