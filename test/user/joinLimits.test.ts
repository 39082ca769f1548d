/**
 * Follow-ups that join a running Submission, each within `limits.maxInputBytes` (1 MiB by
 * default): the host reads them with `receiveJoined`, whose journal record is one SQLite row
 * (Cloudflare allows 2 MB), so one read takes the oldest that fit together and a later read (or
 * the lane, once the host ends) the rest. Every accepted Submission settles.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { collectorAgent } from "../worker/userObject.ts"
import { deliverUntil, stateIs, uniqueName, userClient } from "./support.ts"

describe("joined inputs at the input limit", () => {
  it.live(
    "a host whose joins together pass one row settles, and so does every join",
    () =>
      Effect.gen(function* () {
        const thread = uniqueName("collector")
        const client = userClient(thread)
        const collector = client.agent(collectorAgent)
        const host = yield* collector.submit({ blob: "h" }, { idempotencyKey: "host" })
        yield* deliverUntil([thread], stateIs(client, host.submissionId, "suspended"), 200, "host parked")
        // Each input is within the 1 MiB limit; together they are over Cloudflare's 2 MB row.
        const size = 1_000_000
        const joins = []
        for (const key of ["a", "b", "c"])
          joins.push(
            yield* collector.submit({ blob: key.repeat(size) }, { idempotencyKey: key, mode: "join" }),
          )
        yield* client.resolveApproval(host.submissionId, { approved: true })
        // The host's read took the first join; the others ran on their own after it.
        yield* deliverUntil([thread], stateIs(client, host.submissionId, "settled"), 100, "host settled")
        expect(yield* collector.awaitSettlement(host.submissionId, 1_000)).toMatchObject({
          outcome: "completed",
          output: 1 + size,
        })
        expect((yield* client.awaitSettlement(joins[0]!.submissionId, 1_000)).outcome).toBe("completed")
        // The others waited for their own approval as Submissions of their own.
        for (const join of joins.slice(1)) {
          yield* deliverUntil([thread], stateIs(client, join.submissionId, "suspended"), 100, "join parked")
          yield* client.resolveApproval(join.submissionId, { approved: true })
          yield* deliverUntil([thread], stateIs(client, join.submissionId, "settled"), 100, "join settled")
          expect(yield* collector.awaitSettlement(join.submissionId, 1_000)).toMatchObject({
            outcome: "completed",
            output: size,
          })
        }
        expect((yield* client.verify).violations).toEqual([])
      }),
    60_000,
  )
})
