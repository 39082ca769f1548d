import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { TestClock } from "effect/testing"
import type { RuntimeFailpointLocation } from "../../../src/core/RuntimeFailpoint.ts"
import { charging, makeRuns, runsOf, threeSteps } from "../../core/runtimeAgents.ts"
import { alarmOf, dayAhead, inObject, objectName } from "../harness.ts"
import { abandon, converge, deliver, rowOf, submit, tagsOf } from "./fixtures.ts"
import { runtimeSwitchboard } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"

const evictions: ReadonlyArray<RuntimeFailpointLocation | "none"> = [
  "none",
  "abort:after-intent",
  "ledger:settle:before",
  "ledger:settle:after",
]

describe("an authorized abort", () => {
  it.effect.each(evictions)(
    "releases an unknown head after a lost external reply (eviction: %s)",
    (eviction) =>
      inObject(objectName(`abort-unknown-${eviction}`), (ctx) =>
        Effect.gen(function* () {
          yield* dayAhead
          const runs = yield* makeRuns
          const agents = [charging(runs), threeSteps(runs)]

          // The charge runs, then the incarnation dies before its reply is journaled.
          const lossy = yield* runtimeSwitchboard()
          const lost = yield* Deferred.make<void>()
          yield* lossy.once(
            "uncertain:after-start-append",
            lossy.once(
              "history:append:before",
              Effect.andThen(Deferred.succeed(lost, undefined), Effect.never),
            ),
          )
          const first = yield* incarnation(ctx, { agents, runtime: lossy.handler })
          const head = yield* submit(first, "lane", "charging", "head", { n: 1 })
          const follower = yield* submit(first, "lane", "three-steps", "follower", { n: 1 })
          yield* abandon(deliver(ctx, first.maintenance))
          yield* Deferred.await(lost)
          yield* TestClock.adjust("31 seconds")

          // Recovery marks the outcome unknown; the head and its follower wait without an alarm.
          const second = yield* incarnation(ctx, { agents })
          yield* second.maintenance.ensureAlarm
          yield* converge(ctx, second.maintenance)
          expect((yield* rowOf(second, head.submissionId)).state).toBe("unknown")
          expect((yield* rowOf(second, follower.submissionId)).state).toBe("ready")
          expect(yield* alarmOf(ctx)).toBeNull()

          const killer = yield* runtimeSwitchboard()
          const third = yield* incarnation(ctx, { agents, runtime: killer.handler })
          const abort = third.maintenance.withMutation(third.runtime.abort(head.submissionId))
          let survivor = third
          if (eviction === "none") {
            yield* abort
            yield* converge(ctx, third.maintenance)
          } else {
            const killed = yield* killer.freeze(eviction)
            if (eviction === "abort:after-intent") {
              yield* abandon(abort)
            } else {
              yield* abort
              yield* abandon(deliver(ctx, third.maintenance))
            }
            yield* killed
            expect(yield* alarmOf(ctx)).not.toBeNull()
            survivor = yield* incarnation(ctx, { agents })
            yield* survivor.maintenance.ensureAlarm
            yield* converge(ctx, survivor.maintenance)
          }

          const tags = yield* tagsOf(survivor, head.submissionId)
          const count = (tag: string) => tags.filter((found) => found === tag).length
          expect([count("UncertainStepStarted"), count("UnknownOutcomeRecorded")]).toEqual([1, 1])
          expect([
            count("UnknownOutcomeResolved"),
            count("AbortRequested"),
            count("SubmissionSettled"),
          ]).toEqual([0, 1, 1])
          const outcomes = yield* Effect.forEach([head, follower], (receipt) =>
            Effect.map(rowOf(survivor, receipt.submissionId), (row) => row.settlement?.outcome),
          )
          expect(outcomes).toEqual(["aborted", "completed"])
          expect(yield* runsOf(runs)).toEqual({ prepare: 1, charge: 1, one: 1, two: 1, three: 1 })
          expect(yield* alarmOf(ctx)).toBeNull()
        }),
      ),
  )
})
