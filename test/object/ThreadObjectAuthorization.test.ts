/**
 * Authorization of every call: the application's check sees the call, its kind, the caller and
 * the target before anything runs, and a refusal is a typed `Unauthorized`.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { authorizationLog, operatorToken } from "../worker/threadObject.ts"
import { failureOf, storedEverything, threadName } from "./support.ts"

const clientAs = (thread: string, caller?: { subject: string; credential?: string }) =>
  ThreadClient.make(env.AUTHORIZED_TEST, thread, caller === undefined ? {} : { caller })

const stored = (thread: string) => storedEverything(env.AUTHORIZED_TEST.getByName(thread))

/** No pass running, nothing owed, no alarm set, and the record caught up. */
const atRest = (thread: string) =>
  Effect.gen(function* () {
    const owed = yield* clientAs(thread, { subject: "sam", credential: operatorToken }).obligations
    const { alarm, kv } = yield* stored(thread)
    const record = kv.find(([key]) => key === "effect-agent:thread-maintenance:v1")?.[1] as
      { dirty: string; processed: string } | undefined
    return (
      !owed.passRunning &&
      owed.obligations.length === 0 &&
      alarm === null &&
      record !== undefined &&
      record.dirty === record.processed
    )
  })

/**
 * Delivers alarms until the Object is at rest twice in a row, a moment apart, so no pass runs
 * while the test compares snapshots: workerd empties the alarm slot as it starts a delivery of
 * its own, a moment before that pass counts as running. Fails rather than compare a snapshot a
 * pending pass is about to change.
 */
const quiet = (thread: string) =>
  Effect.gen(function* () {
    const until = Date.now() + 20_000
    while (Date.now() < until) {
      if (yield* atRest(thread)) {
        yield* Effect.sleep(50)
        if (yield* atRest(thread)) return
        continue
      }
      yield* Effect.promise(() =>
        runDurableObjectAlarm(env.AUTHORIZED_TEST.getByName(thread)).catch(() => false),
      )
      yield* Effect.sleep(5)
    }
    return yield* Effect.die(new Error(`${thread} did not come to rest within 20 s`))
  })

describe("ThreadObject authorization", () => {
  it.live(
    "refuses privileged calls without a valid credential, writing nothing, and allows the operator",
    () =>
      Effect.gen(function* () {
        const thread = threadName("authorized")
        const anonymous = clientAs(thread)
        const intruder = clientAs(thread, { subject: "mallory", credential: "guess" })
        const operator = clientAs(thread, { subject: "sam", credential: operatorToken })
        // This policy leaves submitting and reading open.
        const receipt = yield* anonymous.submit({
          agentId: "review",
          idempotencyKey: "k",
          input: { draft: "x" },
        })
        // Let it park in its approval wait, so no pass runs while the refusals are checked.
        yield* quiet(thread)
        expect((yield* anonymous.status(receipt.submissionId)).state).toBe("suspended")
        const before = yield* stored(thread)
        const attempts = [
          ["abort", anonymous.abort(receipt.submissionId)],
          ["abort", intruder.abort(receipt.submissionId)],
          ["retry", intruder.retry(receipt.submissionId)],
          ["resolveApproval", intruder.resolveApproval(receipt.submissionId, { approved: true })],
          ["resolveUnknown", intruder.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: 1 })],
          ["repairMaintenance", intruder.repairMaintenance],
        ] as const
        for (const [entryPoint, call] of attempts) {
          const failure = failureOf(yield* Effect.exit(call))
          expect(failure).toMatchObject({ _tag: "Unauthorized", entryPoint })
        }
        expect(failureOf(yield* Effect.exit(anonymous.abort(receipt.submissionId)))).toMatchObject({
          message: "no caller identity",
        })
        expect(yield* stored(thread)).toEqual(before)
        yield* anonymous.explain(receipt.submissionId)

        yield* operator.abort(receipt.submissionId)
        expect((yield* operator.status(receipt.submissionId)).abortRequested).toBe(true)
        expect(yield* operator.repairMaintenance).toMatchObject({ repaired: false })
      }),
  )

  it.live("checks every call with its kind, reads included, and keeps one tenant's Thread from another", () =>
    Effect.gen(function* () {
      const thread = `tenant:acme:${crypto.randomUUID()}`
      const owner = clientAs(thread, { subject: "acme" })
      const rival = clientAs(thread, { subject: "globex" })
      const operator = clientAs(thread, { subject: "sam", credential: operatorToken })
      const receipt = yield* owner.submit({ agentId: "review", idempotencyKey: "k", input: { draft: "x" } })
      yield* owner.history()
      yield* owner.wake
      yield* quiet(thread)

      // The owner's calls (the operator's reads while waiting for rest are checked too).
      const seen = authorizationLog.filter((entry) => entry.threadId === thread && entry.subject === "acme")
      expect(seen).toEqual([
        { entryPoint: "submit", kind: "mutate", threadId: thread, subject: "acme" },
        { entryPoint: "history", kind: "read", threadId: thread, subject: "acme" },
        { entryPoint: "wake", kind: "mutate", threadId: thread, subject: "acme" },
      ])

      const before = yield* stored(thread)
      const refused: Array<Effect.Effect<unknown, ThreadClient.ThreadClientError>> = [
        rival.status(receipt.submissionId),
        rival.history(),
        rival.awaitSettlement(receipt.submissionId, 10),
        rival.explain(receipt.submissionId),
        rival.submit({ agentId: "review", idempotencyKey: "r", input: { draft: "y" } }),
        rival.sendEvent(receipt.submissionId, "note", null),
      ]
      for (const call of refused) {
        expect(failureOf(yield* Effect.exit(call))).toMatchObject({
          _tag: "Unauthorized",
          message: `${thread} belongs to another tenant`,
        })
      }
      expect(yield* stored(thread)).toEqual(before)
      expect(
        authorizationLog.filter((entry) => entry.subject === "globex").map((entry) => entry.kind),
      ).toEqual(["read", "read", "read", "read", "mutate", "mutate"])

      // An operator call is checked as `operate`; the operator may also read the tenant's Thread.
      yield* operator.abort(receipt.submissionId)
      expect(authorizationLog.at(-1)).toMatchObject({ entryPoint: "abort", kind: "operate", subject: "sam" })
      expect((yield* operator.status(receipt.submissionId)).abortRequested).toBe(true)
    }),
  )

  it.live("keeps one tenant from reading, replacing or removing another's schedule in a shared Object", () =>
    Effect.gen(function* () {
      // Two tenants' Threads in one Object: its schedule ids are the Object's, not a Thread's.
      const objectName = threadName("shared-schedules")
      const acme = `tenant:acme:${crypto.randomUUID()}`
      const globex = `tenant:globex:${crypto.randomUUID()}`
      const as = (thread: string, caller: { subject: string; credential?: string }) =>
        ThreadClient.make(env.AUTHORIZED_TEST, thread, { objectName, caller })
      const operator = as(acme, { subject: "sam", credential: operatorToken })
      const rival = as(globex, { subject: "globex" })
      const nightly = { scheduleId: "nightly", agentId: "echo", cron: "0 2 * * *" } as const
      yield* operator.schedule({ ...nightly, input: { text: "acme's secret" } })

      const attempts: ReadonlyArray<
        readonly [string, Effect.Effect<unknown, ThreadClient.ThreadClientError>]
      > = [
        ["schedules", rival.schedules],
        ["unschedule", rival.unschedule("nightly")],
        ["schedule", rival.schedule({ ...nightly, input: { text: "globex's" } })],
      ]
      for (const [entryPoint, call] of attempts) {
        expect(failureOf(yield* Effect.exit(call))).toMatchObject({ _tag: "Unauthorized", entryPoint })
      }
      const [kept] = yield* operator.schedules
      expect(kept).toMatchObject({ scheduleId: "nightly", threadId: acme, input: { text: "acme's secret" } })
      yield* operator.unschedule("nightly")
    }),
  )

  it.live("refuses a caller the Object would refuse, by name, at each call and without throwing", () =>
    Effect.gen(function* () {
      const thread = threadName("bad-caller")
      // Built without throwing: a Worker that passes a request's bearer token along answers
      // its refusal instead of failing the fetch.
      const empty = clientAs(thread, { subject: "" })
      const long = clientAs(thread, { subject: "acme", credential: "t".repeat(5_000) })
      for (const client of [empty, long]) {
        const refused = failureOf(yield* Effect.exit(client.threadStatus))
        expect(refused).toMatchObject({ _tag: "InvalidRequest", entryPoint: "threadStatus" })
        expect(refused).toHaveProperty("message", expect.stringContaining("the caller is invalid"))
      }
      expect(authorizationLog.filter((entry) => entry.threadId === thread)).toEqual([])
    }),
  )
})
