/**
 * A poll schedule under `overlap: "skip"` whose occurrence waits for a person: the occurrences
 * due meanwhile are passed over, an abort of the waiting one lets the next be admitted, retention
 * (one second) removes the settled ones while the schedule goes on, and unschedule ends it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { pollAgent, userRuns } from "../worker/userObject.ts"
import { deliverUntil, failureOf, stateIs, uniqueName, userClient } from "./support.ts"

describe("schedule: skip overlap, abort, retention", () => {
  it.live(
    "passes over occurrences while one waits; after an abort the next runs; retention removes the old",
    () =>
      Effect.gen(function* () {
        const thread = uniqueName("poll")
        const client = userClient(thread)
        const source = crypto.randomUUID()
        const polls = client.agent(pollAgent)
        const scheduled = yield* polls.schedule(
          { source },
          { scheduleId: "poll", everyMillis: 1_000, overlap: "skip", missed: "skip" },
        )
        expect(scheduled).toMatchObject({ scheduleId: "poll", overlap: "skip" })
        const pollSchedule = Effect.map(client.schedules, (all) => all.find((s) => s.scheduleId === "poll")!)
        // The first occurrence is admitted and parks for its approval.
        yield* deliverUntil(
          [thread],
          Effect.map(pollSchedule, (s) => s.lastSubmissionId !== undefined),
          200,
          "line 25",
        )
        const first = (yield* pollSchedule).lastSubmissionId!
        yield* deliverUntil([thread], stateIs(client, first, "suspended"), 200, "line 27")
        // Later occurrences are passed over, naming the overlap.
        yield* deliverUntil(
          [thread],
          Effect.map(pollSchedule, (s) => s.lastRefusal?.reason === "overlap"),
          200,
          "line 29",
        )
        expect((yield* pollSchedule).lastSubmissionId).toBe(first)
        expect((yield* client.submissions()).length).toBe(1)
        // The operator aborts the stuck poll: the next occurrence is admitted.
        yield* client.abort(first)
        yield* deliverUntil([thread], stateIs(client, first, "settled"), 200, "line 34")
        expect((yield* client.awaitSettlement(first, 1_000)).outcome).toBe("aborted")
        yield* deliverUntil(
          [thread],
          Effect.map(pollSchedule, (s) => s.lastSubmissionId !== first),
          200,
          "line 36",
        )
        const second = (yield* pollSchedule).lastSubmissionId!
        yield* deliverUntil([thread], stateIs(client, second, "suspended"), 200, "line 38")
        yield* client.resolveApproval(second, { approved: true })
        yield* deliverUntil([thread], stateIs(client, second, "settled"), 200, "line 40")
        expect(yield* polls.awaitSettlement(second, 1_000)).toMatchObject({
          outcome: "completed",
          output: `polled ${source}`,
        })
        // Retention (one second) removes the aborted one; the schedule goes on.
        yield* deliverUntil(
          [thread],
          Effect.map(
            Effect.exit(client.status(first)),
            (exit) => failureOf(exit)?._tag === "SubmissionNotFound",
          ),
        )
        yield* client.unschedule("poll")
        const runsAtUnschedule = userRuns.get(`poll:${source}`) ?? 0
        const admitted = (yield* client.submissions()).map((s) => s.submissionId)
        yield* Effect.sleep(2_200)
        yield* deliverUntil([thread], Effect.succeed(false), 5).pipe(Effect.exit)
        expect((yield* client.schedules).find((s) => s.scheduleId === "poll")).toBeUndefined()
        const unsettledAfter = (yield* client.submissions()).filter(
          (s) => s.state !== "settled" && !admitted.includes(s.submissionId),
        )
        expect(unsettledAfter).toEqual([])
        expect(userRuns.get(`poll:${source}`) ?? 0).toBe(runsAtUnschedule)
        expect((yield* client.verify).violations).toEqual([])
      }),
    30_000,
  )
})
