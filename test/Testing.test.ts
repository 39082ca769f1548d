import { runDurableObjectAlarm } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { AlarmsNotQuiet, DurableRuntimeFailpointError, runAlarmsUntilQuiet } from "../src/Testing.ts"
import * as ThreadClient from "../src/ThreadClient.ts"
import { isQuiet } from "../src/internal/testing/quiet.ts"
import { clientOf, ledgerRows, stubOf, threadName } from "./object/support.ts"
import { switchboard } from "./worker/threadObject.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined

describe("Testing", () => {
  it.live(
    "reports an injected runtime failure to the caller as an internal failure, and keeps the admission",
    () =>
      Effect.gen(function* () {
        const thread = threadName("injected")
        const client = clientOf(thread)
        const id = stubOf(thread).id
        switchboard.install(id, {
          runtime: (location) =>
            location === "submit:after-admit"
              ? Effect.fail(new DurableRuntimeFailpointError({ location, message: "injected" }))
              : Effect.void,
        })
        const exit = yield* Effect.exit(
          client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } }),
        ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(id))))
        const failure = failureOf(exit)
        expect(failure).toBeInstanceOf(ThreadClient.ThreadObjectFailure)
        expect(failure).toMatchObject({ entryPoint: "submit", reason: "internal" })
        // The admission committed before the failpoint: the same key replays its receipt.
        const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
        expect(receipt.replayed).toBe(true)
      }),
  )

  it("keeps test-only errors out of the client's error union", () => {
    const injected = new DurableRuntimeFailpointError({ location: "claim:after-claim", message: "x" })
    expect(Schema.is(ThreadClient.ThreadObjectError)(injected)).toBe(false)
  })

  it.live("shows storage failpoints every durable write of a mutation, and fails the one that throws", () =>
    Effect.gen(function* () {
      const thread = threadName("storage")
      const client = clientOf(thread)
      yield* client.threadStatus
      const id = stubOf(thread).id
      const seen: Array<string> = []
      switchboard.install(id, { storage: (location, detail) => void seen.push(`${location} ${detail}`) })
      yield* client.submit({ agentId: "echo", idempotencyKey: "seen", input: { text: "x" } })
      expect(seen).toContain("storage:sql:before insert effect_agent_submissions")
      expect(seen.some((entry) => entry.startsWith("storage:alarm:after"))).toBe(true)
      switchboard.install(id, {
        storage: (location, detail) => {
          if (location === "storage:sql:before" && detail.startsWith("insert effect_agent_submissions")) {
            throw new Error("refused by the test")
          }
        },
      })
      const refused = yield* Effect.exit(
        client.submit({ agentId: "echo", idempotencyKey: "refused", input: { text: "y" } }),
      ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(id))))
      expect(failureOf(refused)).toMatchObject({ _tag: "ThreadObjectFailure", reason: "storage" })
      // The refused admission wrote nothing: only the first Submission has a row.
      expect(yield* ledgerRows(thread)).toHaveLength(1)
    }),
  )
})

describe("runAlarmsUntilQuiet", () => {
  const quiet = (thread: string, options: { readonly maxDeliveries?: number } = {}) =>
    runAlarmsUntilQuiet({
      client: clientOf(thread),
      runAlarm: () => runDurableObjectAlarm(stubOf(thread)),
      ...options,
    })

  it("is quiet only with no pass running and nothing owed: an empty slot with work owed is not", () => {
    const owed = ThreadClient.ObjectObligations.make({
      obligations: [ThreadClient.Obligation.make({ source: "generation-owed", dueAt: 0, detail: "owed" })],
      impliedAlarm: 0,
      scheduledAlarm: null,
      passRunning: false,
      observedAt: 0,
    })
    // workerd empties the slot as it starts a delivery, a moment before the pass counts as running.
    expect(isQuiet(owed)).toBe(false)
    expect(isQuiet(ThreadClient.ObjectObligations.make({ ...owed, obligations: [] }))).toBe(true)
    expect(
      isQuiet(ThreadClient.ObjectObligations.make({ ...owed, obligations: [], passRunning: true })),
    ).toBe(false)
    expect(
      isQuiet(ThreadClient.ObjectObligations.make({ ...owed, obligations: [], scheduledAlarm: 5 })),
    ).toBe(true)
  })

  it.live("delivers alarms until every queued Submission has settled and no alarm is left", () =>
    Effect.gen(function* () {
      const thread = threadName("quiet")
      const client = clientOf(thread)
      const receipts = yield* Effect.forEach(["a", "b", "c"], (text) =>
        client.submit({ agentId: "echo", idempotencyKey: text, input: { text } }),
      )
      const result = yield* quiet(thread)
      expect(result.obligations).toMatchObject({ obligations: [], scheduledAlarm: null, passRunning: false })
      for (const { submissionId } of receipts) {
        expect((yield* client.status(submissionId)).state).toBe("settled")
      }
    }),
  )

  it.live("stops at a stable wait: a pending approval owes nothing and keeps no alarm", () =>
    Effect.gen(function* () {
      const thread = threadName("approval")
      const client = clientOf(thread)
      const { submissionId } = yield* client.submit({
        agentId: "review",
        idempotencyKey: "draft",
        input: { draft: "terms" },
      })
      yield* quiet(thread)
      expect((yield* client.explain(submissionId)).reason._tag).toBe("WaitingForApproval")
      expect((yield* client.obligations).scheduledAlarm).toBeNull()
    }),
  )

  it.live("waits for a delivery the pool started by itself, whose alarm slot is empty meanwhile", () =>
    Effect.gen(function* () {
      const thread = threadName("pool")
      const client = clientOf(thread)
      const id = stubOf(thread).id
      // The pool's own delivery of the submit's alarm pauses before its begin transaction: the
      // slot is empty then (the delivery took the alarm, the prearm is not written yet).
      let paused = false
      switchboard.install(id, {
        maintenance: (location) =>
          location === "maintenance:begin:before" && !paused
            ? Effect.andThen(
                Effect.sync(() => (paused = true)),
                // Long enough for a loaded machine to look at the Object meanwhile.
                Effect.sleep(1_000),
              )
            : Effect.void,
      })
      const { submissionId } = yield* client.submit({
        agentId: "echo",
        idempotencyKey: "k",
        input: { text: "x" },
      })
      yield* Effect.promise(async () => {
        for (
          let round = 0;
          round < 400 && !(await Effect.runPromise(client.obligations)).passRunning;
          round++
        ) {
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      })
      expect(yield* client.obligations).toMatchObject({ passRunning: true, scheduledAlarm: null })
      yield* quiet(thread).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(id))))
      expect((yield* client.status(submissionId)).state).toBe("settled")
    }),
  )

  it.live("fails with AlarmsNotQuiet, naming what is owed, when the bound is reached", () =>
    Effect.gen(function* () {
      const thread = threadName("never")
      const id = stubOf(thread).id
      switchboard.install(id, {
        runtime: (location) =>
          location === "claim:after-claim"
            ? Effect.fail(new DurableRuntimeFailpointError({ location, message: "always" }))
            : Effect.void,
      })
      yield* clientOf(thread).submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      const exit = yield* Effect.exit(quiet(thread, { maxDeliveries: 2 })).pipe(
        Effect.ensuring(Effect.sync(() => switchboard.remove(id))),
      )
      const error = failureOf(exit)
      expect(error).toBeInstanceOf(AlarmsNotQuiet)
      // Each failed pass backs off: the loop waits for the retry (never runs the alarm before
      // it), until two deliveries or a retry later than its time.
      expect((error as AlarmsNotQuiet).deliveries).toBeLessThanOrEqual(2)
      // The pool's own deliveries fail too, so the backoff may also outgrow the bound.
      expect((error as AlarmsNotQuiet).message).toMatch(/at most 2|next due in|out of time/)
      expect((error as AlarmsNotQuiet).obligations?.obligations.map((o) => o.source)).toContain(
        "maintenance-retry",
      )
    }),
  )

  it.live("waits out a failed pass's backoff instead of running the alarm before it", () =>
    Effect.gen(function* () {
      const thread = threadName("backoff")
      const id = stubOf(thread).id
      let failures = 4
      switchboard.install(id, {
        runtime: (location) =>
          location === "claim:after-claim" && failures-- > 0
            ? Effect.fail(new DurableRuntimeFailpointError({ location, message: "not yet" }))
            : Effect.void,
      })
      const receipt = yield* clientOf(thread).submit({
        agentId: "echo",
        idempotencyKey: "k",
        input: { text: "x" },
      })
      const settled = yield* quiet(thread).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(id))))
      // A delivery per failed pass and one that settles, give or take the pool's own: not 50.
      expect(settled.deliveries).toBeLessThanOrEqual(8)
      expect((yield* clientOf(thread).status(receipt.submissionId)).state).toBe("settled")
    }),
  )

  it.live("keeps to timeoutMillis when a delivery never answers: AlarmsNotQuiet, not a test timeout", () =>
    Effect.gen(function* () {
      // A pass stuck in a handler that never returns: the loop's own delivery never settles.
      const owed = ThreadClient.ObjectObligations.make({
        obligations: [ThreadClient.Obligation.make({ source: "generation-owed", dueAt: 0, detail: "owed" })],
        impliedAlarm: 0,
        scheduledAlarm: 0,
        passRunning: false,
        observedAt: 0,
      })
      const started = Date.now()
      const exit = yield* Effect.exit(
        runAlarmsUntilQuiet({
          client: { obligations: Effect.succeed(owed) },
          runAlarm: () => new Promise<boolean>(() => {}),
          timeoutMillis: 300,
        }),
      ).pipe(Effect.timeout(3_000))
      const error = failureOf(exit)
      expect(error).toBeInstanceOf(AlarmsNotQuiet)
      expect((error as AlarmsNotQuiet).message).toMatch(/out of time/)
      expect((error as AlarmsNotQuiet).message).toMatch(/a delivery still running/)
      expect(Date.now() - started).toBeLessThan(1_500)
    }),
  )

  it.live(
    "keeps to timeoutMillis when the Object does not answer obligations: AlarmsNotQuiet, not a test timeout",
    () =>
      Effect.gen(function* () {
        // An incarnation held in its constructor gate (a handler at `maintenance:ensure:*` that
        // holds) answers no call, `obligations` included.
        const started = Date.now()
        const exit = yield* Effect.exit(
          runAlarmsUntilQuiet({
            client: { obligations: Effect.never },
            runAlarm: () => Promise.resolve(true),
            timeoutMillis: 300,
          }),
        ).pipe(Effect.timeout(3_000))
        const error = failureOf(exit)
        expect(error).toBeInstanceOf(AlarmsNotQuiet)
        expect((error as AlarmsNotQuiet).message).toMatch(/out of time, the Object did not answer/)
        expect((error as AlarmsNotQuiet).obligations).toBeUndefined()
        expect(Date.now() - started).toBeLessThan(1_500)
      }),
  )

  it.live(
    "waits for the alarm the Object set when its owed work cannot move yet (a mutation in flight)",
    () =>
      Effect.gen(function* () {
        // A mutation held before its body (`maintenance:mutation:armed`) keeps its generation owed:
        // each pass meanwhile is caught up and sets the alarm at the scan interval. Running the
        // alarm before then runs pass after pass that cannot acknowledge it.
        let deliveries = 0
        const owed = () =>
          ThreadClient.ObjectObligations.make({
            obligations: [
              ThreadClient.Obligation.make({ source: "generation-owed", dueAt: Date.now(), detail: "owed" }),
            ],
            impliedAlarm: Date.now(),
            scheduledAlarm: Date.now() + 200,
            passRunning: false,
            observedAt: Date.now(),
          })
        const exit = yield* Effect.exit(
          runAlarmsUntilQuiet({
            client: { obligations: Effect.sync(owed) },
            runAlarm: () => Promise.resolve(++deliveries > 0),
            timeoutMillis: 500,
          }),
        )
        const error = failureOf(exit)
        expect(error).toBeInstanceOf(AlarmsNotQuiet)
        expect((error as AlarmsNotQuiet).message).toMatch(/out of time|next due in|alarm is set in/)
        expect(deliveries).toBeLessThanOrEqual(3)
      }),
  )
})
