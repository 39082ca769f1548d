/**
 * Events with timeouts under `TestClock`, on both ledgers: an event sent before the wait is
 * kept and taken without parking; each wait takes the earliest event of its name not taken yet;
 * an event id is recorded once; a refused event writes nothing; a timeout is typed and final; an
 * event recorded while the Attempt runs is found by the park's own transaction; a taken event is
 * taken once across a failed Attempt and a new incarnation.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import { AgentId, IdempotencyKey, type SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import type { RuntimeFailpointHandler } from "../../src/core/RuntimeFailpoint.ts"
import { DurableRuntimeFailpointError } from "../../src/core/internal/runtime/shared/failpointError.ts"
import { entriesOf, processDue, processHead, rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import { type Incarnation, runtimeHarnesses, runtimeOf } from "./runtimeHarness.ts"

const Shipped = AgentEvent.make("shipped", Schema.Struct({ tracking: Schema.String }))

/** Waits `waits` times for `shipped` (with a timeout when given) and lists what each wait got. */
const courier = define({
  id: "courier",
  version: "1",
  input: Schema.Struct({ waits: Schema.Int, timeoutMillis: Schema.optionalKey(Schema.Int) }),
  output: Schema.Array(Schema.String),
  events: [Shipped],
  program: ({ waits, timeoutMillis }, ctx) =>
    Effect.gen(function* () {
      const got: Array<string> = []
      for (let index = 0; index < waits; index++) {
        got.push(
          timeoutMillis === undefined
            ? (yield* ctx.waitForEvent(Shipped)).tracking
            : yield* ctx.waitForEvent(Shipped, { timeoutMillis }).pipe(
                Effect.map((payload) => payload.tracking),
                Effect.catchTag("EventTimeout", (timeout) =>
                  Effect.succeed(`timeout at step ${timeout.step}`),
                ),
              ),
        )
      }
      return got
    }),
})

/** Waits for an undeclared `note`, decoded at the wait, then for `go`; a bad note is reported. */
const listener = define({
  id: "listener",
  version: "1",
  input: Schema.Struct({}),
  output: Schema.String,
  program: (_, ctx) =>
    Effect.gen(function* () {
      const note = yield* ctx.waitForEvent("note", Schema.Struct({ text: Schema.String })).pipe(
        Effect.map((payload) => payload.text),
        Effect.catchTag("EventPayloadInvalid", (invalid) => Effect.succeed(`invalid ${invalid.eventId}`)),
      )
      yield* ctx
        .waitForEvent("go", Schema.Null)
        .pipe(Effect.mapError((invalid) => new AgentFailure({ message: invalid.message })))
      return note
    }),
})

/** Parks on an approval; joins may reach it. */
const host = define({
  id: "host",
  version: "1",
  input: Schema.Struct({}),
  output: Schema.Boolean,
  acceptsJoinedInput: true,
  program: (_, ctx) => Effect.map(ctx.requestApproval({}), (decision) => decision.approved),
})

const agents = [courier, listener, host]

const send = (
  incarnation: Incarnation,
  submissionId: SubmissionId,
  event: string,
  eventId: string,
  payload: Schema.Json,
) =>
  Effect.map(runtimeOf(incarnation).receiveEvent({ submissionId, event, eventId, payload }), (delivery) =>
    delivery._tag === "Received" ? delivery.receipt : undefined,
  )

const shipped = (incarnation: Incarnation, submissionId: SubmissionId, eventId: string, tracking = eventId) =>
  send(incarnation, submissionId, "shipped", eventId, { tracking })

const eventTags = (incarnation: Incarnation, submissionId: SubmissionId) =>
  Effect.map(tagsOf(incarnation, submissionId), (tags) => tags.filter((tag) => tag.startsWith("Event")))

for (const harness of runtimeHarnesses) {
  describe(`AgentContext waitForEvent (${harness.label})`, () => {
    it.effect("keeps an event sent before the wait, and the wait takes it without parking", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents })
          const receipt = yield* submitTo(incarnation, "lane", "courier", "k", { waits: 1 })
          // Sent while the Submission is queued: kept in its history before its first Claim.
          expect(yield* shipped(incarnation, receipt.submissionId, "e1", "T-1")).toMatchObject({
            eventId: "e1",
            replayed: false,
            resumed: false,
          })
          const settled = yield* processHead(incarnation, "lane")
          expect(Option.map(settled, (s) => [s.outcome, s.output])).toEqual(
            Option.some(["completed", ["T-1"]]),
          )
          expect(yield* tagsOf(incarnation, receipt.submissionId)).toEqual([
            "SubmissionAccepted",
            "EventReceived",
            "InputApplied",
            "EventConsumed",
            "SubmissionSettled",
          ])
        }),
      ),
    )

    it.effect("gives each wait the earliest event of its name not taken yet, in the order they arrived", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents })
          const receipt = yield* submitTo(incarnation, "lane", "courier", "k", { waits: 3 })
          yield* shipped(incarnation, receipt.submissionId, "b", "first")
          yield* shipped(incarnation, receipt.submissionId, "a", "second")
          // Two are taken, the third wait parks in a stable wait: nothing else ends it.
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const parked = yield* rowOf(incarnation, receipt.submissionId)
          expect([parked.state, parked.dueAt, parked.wait?._tag]).toEqual(["suspended", undefined, "Event"])
          const resumed = yield* shipped(incarnation, receipt.submissionId, "c", "third")
          expect(resumed).toMatchObject({ replayed: false, resumed: true })
          expect((yield* rowOf(incarnation, receipt.submissionId)).state).toBe("ready")
          const settled = yield* processHead(incarnation, "lane")
          expect(Option.map(settled, (s) => s.output)).toEqual(Option.some(["first", "second", "third"]))
          const consumed = (yield* entriesOf(incarnation, receipt.submissionId)).flatMap((entry) =>
            entry._tag === "EventConsumed" ? [[entry.step, entry.eventId]] : [],
          )
          expect(consumed).toEqual([
            [0, "b"],
            [1, "a"],
            [2, "c"],
          ])
        }),
      ),
    )

    it.effect("records an event id once, whatever happened since", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents })
          const receipt = yield* submitTo(incarnation, "lane", "courier", "k", { waits: 2 })
          yield* shipped(incarnation, receipt.submissionId, "same", "one")
          expect(yield* shipped(incarnation, receipt.submissionId, "same", "other")).toMatchObject({
            replayed: true,
            resumed: false,
          })
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          expect(yield* shipped(incarnation, receipt.submissionId, "same", "one")).toMatchObject({
            replayed: true,
          })
          yield* shipped(incarnation, receipt.submissionId, "next", "two")
          expect(Option.isSome(yield* processHead(incarnation, "lane"))).toBe(true)
          // Settled: a repeat still answers as the first send did.
          expect(yield* shipped(incarnation, receipt.submissionId, "same", "one")).toMatchObject({
            replayed: true,
          })
          // One record per id; the first wait's consumption is journaled with the park that
          // follows it, so a parked row's journal tells which events are left.
          expect(yield* eventTags(incarnation, receipt.submissionId)).toEqual([
            "EventReceived",
            "EventConsumed",
            "EventReceived",
            "EventConsumed",
          ])
        }),
      ),
    )

    it.effect("refuses an event it cannot take, and writes nothing", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents, config: { maxStoredValueBytes: 64 } })
          const receipt = yield* submitTo(incarnation, "lane", "courier", "k", { waits: 1 })
          const refusal = (event: string, payload: Schema.Json, id = receipt.submissionId) =>
            Effect.flip(
              runtimeOf(incarnation).receiveEvent({ submissionId: id, event, eventId: "x", payload }),
            )
          const before = yield* entriesOf(incarnation, receipt.submissionId)
          const rowBefore = yield* rowOf(incarnation, receipt.submissionId)
          expect(yield* refusal("shipped", { tracking: 7 })).toMatchObject({
            _tag: "EventRefused",
            reason: "malformed-payload",
          })
          expect(yield* refusal("other", { text: "x".repeat(100) })).toMatchObject({
            _tag: "EventRefused",
            reason: "payload-bytes",
          })
          expect(yield* entriesOf(incarnation, receipt.submissionId)).toEqual(before)
          expect(yield* rowOf(incarnation, receipt.submissionId)).toEqual(rowBefore)
          // A joined Submission runs no program; a settled one has no wait left.
          const parked = yield* submitTo(incarnation, "chat", "host", "h", {})
          yield* processHead(incarnation, "chat")
          const joined = yield* runtimeOf(incarnation).submit({
            threadId: ThreadId.make("chat"),
            agentId: AgentId.make("host"),
            idempotencyKey: IdempotencyKey.make("j"),
            input: {},
            mode: "join",
          })
          expect((yield* rowOf(incarnation, joined.submissionId)).state).toBe("joining")
          expect(yield* refusal("shipped", { tracking: "t" }, joined.submissionId)).toMatchObject({
            reason: "joined",
          })
          yield* runtimeOf(incarnation).abort(parked.submissionId)
          yield* shipped(incarnation, receipt.submissionId, "e1")
          expect(Option.isSome(yield* processHead(incarnation, "lane"))).toBe(true)
          const settled = yield* entriesOf(incarnation, receipt.submissionId)
          expect(yield* refusal("shipped", { tracking: "late" })).toMatchObject({ reason: "settled" })
          expect(yield* entriesOf(incarnation, receipt.submissionId)).toEqual(settled)
          expect(yield* refusal("shipped", { tracking: "t" }, "missing" as SubmissionId)).toMatchObject({
            _tag: "SubmissionNotFound",
          })
        }),
      ),
    )

    it.effect("times out with a typed EventTimeout at its due time, final once journaled", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const incarnation = yield* world.incarnation({ agents })
          const start = yield* Clock.currentTimeMillis
          const receipt = yield* submitTo(incarnation, "lane", "courier", "k", {
            waits: 2,
            timeoutMillis: 1_000,
          })
          expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
          const parked = yield* rowOf(incarnation, receipt.submissionId)
          expect([parked.state, parked.dueAt]).toEqual(["waiting", start + 1_000])
          yield* TestClock.adjust(999)
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({ _tag: "Unclaimed" })
          yield* TestClock.adjust(1)
          // The first wait times out; the second parks with its own due time.
          expect(yield* processDue(incarnation, receipt.submissionId)).toEqual({
            _tag: "Parked",
            wait: "waiting",
          })
          expect((yield* rowOf(incarnation, receipt.submissionId)).dueAt).toBe(start + 2_000)
          // A late event ends the second wait, never the first: a replay takes the same branch.
          expect(yield* shipped(incarnation, receipt.submissionId, "late")).toMatchObject({ resumed: true })
          const settled = yield* processHead(incarnation, "lane")
          expect(Option.map(settled, (s) => s.output)).toEqual(Option.some(["timeout at step 0", "late"]))
          expect(yield* eventTags(incarnation, receipt.submissionId)).toEqual([
            "EventWaitTimedOut",
            "EventReceived",
            "EventConsumed",
          ])
        }),
      ),
    )

    it.effect(
      "decodes an undeclared event at the wait; one that does not decode is consumed and fails it",
      () =>
        harness.run((world) =>
          Effect.gen(function* () {
            const incarnation = yield* world.incarnation({ agents })
            const receipt = yield* submitTo(incarnation, "lane", "listener", "k", {})
            // Accepted as JSON: the agent declares no `note`.
            yield* send(incarnation, receipt.submissionId, "note", "bad", { text: 5 })
            yield* send(incarnation, receipt.submissionId, "note", "good", { text: "hi" })
            expect(yield* processHead(incarnation, "lane")).toEqual(Option.none())
            yield* send(incarnation, receipt.submissionId, "go", "go", null)
            const settled = yield* processHead(incarnation, "lane")
            expect(Option.map(settled, (s) => s.output)).toEqual(Option.some("invalid bad"))
            const consumed = (yield* entriesOf(incarnation, receipt.submissionId)).flatMap((entry) =>
              entry._tag === "EventConsumed" ? [entry.eventId] : [],
            )
            expect(consumed).toEqual(["bad", "go"])
          }),
        ),
    )

    for (const timed of [false, true]) {
      it.effect(
        `finds an event recorded while the Attempt ran in the park's transaction (${timed ? "timed" : "stable"} wait)`,
        () =>
          harness.run((world) =>
            Effect.gen(function* () {
              let race: Effect.Effect<unknown, unknown> | undefined
              const failpoint: RuntimeFailpointHandler = (location) => {
                if (location !== "ledger:park:before" || race === undefined) return Effect.void
                const send = race
                race = undefined
                return Effect.orDie(Effect.asVoid(send))
              }
              const incarnation = yield* world.incarnation({ agents, failpoint })
              const receipt = yield* submitTo(
                incarnation,
                "lane",
                "courier",
                "k",
                timed ? { waits: 1, timeoutMillis: 60_000 } : { waits: 1 },
              )
              // Sent after the wait read the journal and found nothing, before the park commits.
              race = shipped(incarnation, receipt.submissionId, "racer")
              const first = yield* processHead(incarnation, "lane")
              expect(first).toEqual(Option.none())
              const left = yield* rowOf(incarnation, receipt.submissionId)
              const start = yield* Clock.currentTimeMillis
              // Not parked on a recorded event: runnable at once, by its lane or the due path.
              if (timed) expect([left.state, left.dueAt]).toEqual(["waiting", start])
              else expect(left.state).toBe("ready")
              const settled = timed
                ? yield* Effect.map(processDue(incarnation, receipt.submissionId), (attempt) =>
                    attempt._tag === "Settled" ? Option.some(attempt.settlement) : Option.none(),
                  )
                : yield* processHead(incarnation, "lane")
              expect(Option.map(settled, (s) => s.output)).toEqual(Option.some(["racer"]))
            }),
          ),
      )
    }

    it.effect("takes an event once across a failed Attempt and a new incarnation", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          let failing = true
          const failpoint: RuntimeFailpointHandler = (location) =>
            failing && location === "ledger:park:before"
              ? Effect.fail(new DurableRuntimeFailpointError({ location, message: "killed" }))
              : Effect.void
          const incarnation = yield* world.incarnation({ agents, failpoint })
          const receipt = yield* submitTo(incarnation, "lane", "courier", "k", {
            waits: 2,
            timeoutMillis: 500,
          })
          yield* shipped(incarnation, receipt.submissionId, "only")
          // The first wait takes the event; the Attempt dies as the second one parks.
          expect(yield* Effect.flip(processHead(incarnation, "lane"))).toMatchObject({
            _tag: "DurableRuntimeFailpointError",
          })
          failing = false
          const later = yield* world.incarnation({ agents })
          expect(yield* processHead(later, "lane")).toEqual(Option.none())
          yield* TestClock.adjust(500)
          const settled = yield* processDue(later, receipt.submissionId)
          expect(settled._tag === "Settled" ? settled.settlement.output : undefined).toEqual([
            "only",
            "timeout at step 1",
          ])
          const consumed = (yield* entriesOf(later, receipt.submissionId)).flatMap((entry) =>
            entry._tag === "EventConsumed" ? [entry.eventId] : [],
          )
          expect(consumed).toEqual(["only"])
        }),
      ),
    )
  })
}
