import { describe, it } from "@effect/vitest"
import { Effect, Exit, Cause } from "effect"
import { uniqueName, userClient } from "./support.ts"

const show = <A, E>(label: string, exit: Exit.Exit<A, E>) =>
  Effect.sync(() =>
    console.log("PROBE", label, Exit.isSuccess(exit) ? `ok ${JSON.stringify(exit.value)?.slice(0, 300)}` : Cause.pretty(exit.cause).split("\n")[0]),
  )

describe("probe2", () => {
  it.live("event ids", () =>
    Effect.gen(function* () {
      const thread = uniqueName("probe2")
      const client = userClient(thread)
      const r = yield* client.submit({ agentId: "payout", idempotencyKey: "k", input: { amount: 1 } })
      const id = r.submissionId
      yield* show("a", yield* Effect.exit(client.sendEvent(id, "e", 1, { eventId: "\ud800" })))
      yield* show("a again", yield* Effect.exit(client.sendEvent(id, "e", 1, { eventId: "\ud800" })))
      yield* show("b", yield* Effect.exit(client.sendEvent(id, "e", 2, { eventId: "\udbff" })))
      yield* show("c name ctrl", yield* Effect.exit(client.sendEvent(id, "e\u0000x", 2, { eventId: "c" })))
      yield* show("d name surrogate", yield* Effect.exit(client.sendEvent(id, "\ud800", 2, { eventId: "d" })))
      yield* show("e name surrogate other", yield* Effect.exit(client.sendEvent(id, "\udbff", 2, { eventId: "d" })))
      const h = yield* client.history()
      yield* Effect.sync(() => console.log("PROBE history", JSON.stringify(h.filter((x: any) => x._tag === "EventReceived" || x.record?._tag === "EventReceived").map((x: any) => x), null, 0).slice(0, 2000)))
    }),
    60_000,
  )
})
