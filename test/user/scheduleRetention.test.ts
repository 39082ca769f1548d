/**
 * A schedule under `overlap: "skip"` every three seconds in an Object whose retention (one
 * second, in one-second windows) removes each settled occurrence before the next falls due: an
 * occurrence whose Submission retention removed has settled, so the next is admitted, not
 * passed over.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { tickAgent, userRuns } from "../worker/userObject.ts"
import { deliverUntil, uniqueName, userClient } from "./support.ts"

describe("schedule with retention", () => {
  it.live(
    "keeps admitting occurrences while retention removes the settled ones",
    () =>
      Effect.gen(function* () {
        const thread = uniqueName("ticks")
        const client = userClient(thread)
        const source = crypto.randomUUID()
        yield* client
          .agent(tickAgent)
          .schedule({ source }, { scheduleId: "tick", everyMillis: 3_000, overlap: "skip" })
        yield* deliverUntil(
          [thread],
          Effect.sync(() => (userRuns.get(`tick:${source}`) ?? 0) >= 3),
          1_000,
          "three ticks",
        )
        const schedule = (yield* client.schedules).find((s) => s.scheduleId === "tick")!
        expect(schedule.lastRefusal).toBeUndefined()
        // Retention did remove the earlier occurrences.
        expect((yield* client.submissions()).length).toBeLessThan(3)
        yield* client.unschedule("tick")
        expect((yield* client.verify).violations).toEqual([])
      }),
    60_000,
  )
})
