/**
 * `schedules` answers every schedule of the Object with its input in one call: when they are over
 * the 32 MiB a call can carry, the call fails with `InvalidRequest` naming the answer's size, not
 * as a request of the caller's that was too large; `obligations` still lists every schedule, and
 * `schedulePage` answers them a bounded page at a time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { env } from "cloudflare:test"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { echoAgent } from "../worker/threadObject.ts"
import { failureOf, threadName } from "./support.ts"

describe("ThreadObject schedules over what a call can carry", () => {
  it.live(
    "fails schedules with InvalidRequest naming the answer, and obligations lists them",
    () =>
      Effect.gen(function* () {
        const thread = threadName("schedule-list")
        // The default limits: inputs of up to 1 MiB.
        const client = ThreadClient.make(env.THREADS_RETAINED, thread)
        const text = "x".repeat(1_000_000)
        const ids = Array.from({ length: 36 }, (_, i) => `s${i}`)
        for (const scheduleId of ids) {
          yield* client.agent(echoAgent).schedule({ text }, { scheduleId, everyMillis: 3_600_000 })
        }
        const listed = yield* Effect.exit(client.schedules)
        expect(failureOf(listed)).toMatchObject({
          _tag: "InvalidRequest",
          entryPoint: "schedules",
          message: expect.stringContaining("the request or its answer is over the 32 MiB a call can carry"),
        })
        const owed = yield* client.obligations
        expect(owed.obligations.filter((o) => o.source === "schedule")).toHaveLength(ids.length)
        // `schedulePage` answers the same schedules a bounded page at a time: each page stops
        // before its inputs near what a call carries, and `next` goes on after its last id.
        const paged: Array<string> = []
        let after: string | undefined
        for (let page = 0; page < ids.length; page++) {
          const answer = yield* client.schedulePage({ ...(after === undefined ? {} : { after }), limit: 100 })
          expect(answer.schedules.length).toBeGreaterThan(0)
          expect(answer.schedules.length).toBeLessThan(ids.length)
          paged.push(...answer.schedules.map((info) => info.scheduleId))
          after = answer.next
          if (after === undefined) break
        }
        expect(paged).toEqual([...ids].sort())
        expect((yield* client.schedulePage({ limit: 2 })).next).toBe([...ids].sort()[1])
        // A page size or a cursor the Object cannot use is refused by name.
        for (const bad of [{ limit: 0 }, { limit: 101 }, { after: "" }]) {
          const refused = yield* Effect.exit(client.schedulePage(bad))
          expect(failureOf(refused)).toMatchObject({ _tag: "InvalidRequest", entryPoint: "schedulePage" })
        }
        for (const scheduleId of ids) yield* client.unschedule(scheduleId)
        expect(yield* client.schedules).toEqual([])
      }),
    60_000,
  )
})
