import { describe, it } from "@effect/vitest"
import { Effect, Exit, Cause } from "effect"
import { uniqueName, userClient } from "./support.ts"

const show = <A, E>(label: string, exit: Exit.Exit<A, E>) =>
  Effect.sync(() =>
    console.log(
      "PROBE",
      label,
      Exit.isSuccess(exit)
        ? `ok ${JSON.stringify(exit.value)?.slice(0, 200)}`
        : Cause.pretty(exit.cause).split("\n").slice(0, 2).join(" | ").slice(0, 300),
    ),
  )

describe("probe", () => {
  it.live("client arguments", () =>
    Effect.gen(function* () {
      const thread = uniqueName("probe")
      const client = userClient(thread)
      const r = yield* client.submit({ agentId: "payout", idempotencyKey: "k", input: { amount: 1 } })
      const id = r.submissionId
      for (const t of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1.5, 1e12])
        yield* show(`awaitSettlement ${t}`, yield* Effect.exit(Effect.timeout(client.awaitSettlement(id, t), 3_000)))
      for (const nb of [-1, 0, 1e20, Number.NaN, 8.64e15, 8.64e15 + 1])
        yield* show(
          `notBefore ${nb}`,
          yield* Effect.exit(client.submit({ agentId: "payout", idempotencyKey: `nb-${nb}`, input: { amount: 1 }, notBefore: nb })),
        )
      for (const eventId of ["", "x".repeat(256), "x".repeat(257), "a\u0000b", "\ud800"])
        yield* show(`eventId len ${eventId.length}`, yield* Effect.exit(client.sendEvent(id, "e", 1, { eventId })))
      for (const name of ["", "x".repeat(128), "x".repeat(129)])
        yield* show(`event name len ${name.length}`, yield* Effect.exit(client.sendEvent(id, name, 1)))
      for (const key of ["", "k".repeat(256), "k".repeat(257), "schedule:x:1"])
        yield* show(`key len ${key.length}`, yield* Effect.exit(client.submit({ agentId: "payout", idempotencyKey: key, input: { amount: 1 } })))
      for (const t of [0, -5, 61_000, Number.NaN])
        yield* show(`awaitProgress ${t}`, yield* Effect.exit(Effect.timeout(client.awaitProgress(id, { timeoutMillis: t }), 3_000)))
      for (const limit of [0, 1, 101, Number.NaN])
        yield* show(`submissionPage ${limit}`, yield* Effect.exit(client.submissionPage({ limit })))
      for (const limit of [0, 101])
        yield* show(`threadPage ${limit}`, yield* Effect.exit(client.threadPage({ limit })))
      yield* show("resolveApproval note number", yield* Effect.exit(client.resolveApproval(id, { approved: true, note: 5 as never })))
      yield* show("resolveApproval approved string", yield* Effect.exit(client.resolveApproval(id, { approved: "yes" as never })))
      yield* show("resolveApproval step -1", yield* Effect.exit(client.resolveApproval(id, { approved: true }, { step: -1 })))
      yield* show("submit mode bad", yield* Effect.exit(client.submit({ agentId: "payout", idempotencyKey: "m", input: { amount: 1 }, mode: "later" as never })))
      yield* show("schedule every 999", yield* Effect.exit(client.schedule({ scheduleId: "s", agentId: "payout", input: { amount: 1 }, everyMillis: 999 })))
      yield* show("schedule cron bad tz", yield* Effect.exit(client.schedule({ scheduleId: "s", agentId: "payout", input: { amount: 1 }, cron: "0 2 * * *", timeZone: "Mars/Base" })))
      yield* show("schedule cron 6 fields", yield* Effect.exit(client.schedule({ scheduleId: "s6", agentId: "payout", input: { amount: 1 }, cron: "*/5 * * * * *" })))
      yield* show("schedule unknown agent", yield* Effect.exit(client.schedule({ scheduleId: "s7", agentId: "nobody", input: {}, everyMillis: 60_000 })))
      yield* show("schedule missed bad", yield* Effect.exit(client.schedule({ scheduleId: "s8", agentId: "payout", input: { amount: 1 }, everyMillis: 60_000, missed: "all" as never })))
      yield* show("unschedule missing", yield* Effect.exit(client.unschedule("never")))
      yield* show("schedules", yield* Effect.exit(client.schedules))
      yield* show("forget unsettled", yield* Effect.exit(client.forget(id)))
      yield* show("retry waiting", yield* Effect.exit(client.retry(id)))
      yield* show("explain unknown", yield* Effect.exit(client.explain("sub-nope")))
      yield* show("completedStep -1", yield* Effect.exit(client.completedStep(id, -1)))
      yield* show("findSubmission long", yield* Effect.exit(client.findSubmission("k".repeat(300))))
    }),
    60_000,
  )
})
