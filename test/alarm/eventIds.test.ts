/**
 * The index of event ids on Durable Object SQLite: an Object upgraded with events already
 * recorded (the release before `thread-store/011-event-ids` had no index) answers a repeat as
 * replayed and an id taken under another name as `id-conflict`, from the records the migration
 * indexed, events appended together included; and retention leaves no id of a Submission it
 * removes behind.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { define } from "../../src/core/AgentRegistration.ts"
import type { HistoryEntry } from "../../src/core/ThreadHistory.ts"
import { MIGRATIONS_TABLE } from "../../src/core/internal/migrations.ts"
import { EVENT_IDS_TABLE } from "../../src/core/internal/schema.ts"
import { incarnation, type Incarnation } from "../support/incarnation.ts"
import { converge, rowOf, submit } from "./actionable/fixtures.ts"
import { dayAhead, inObject, objectName } from "./harness.ts"

const Done = AgentEvent.make("done", Schema.Struct({ ok: Schema.Boolean }))

/** Waits for `done` and returns its payload. */
const waiter = define({
  id: "waiter",
  version: "1",
  input: Schema.Struct({}),
  output: Schema.Boolean,
  events: [Done],
  program: (_, ctx) => Effect.map(ctx.waitForEvent(Done), (payload) => payload.ok),
})

const send = (inc: Incarnation, submissionId: string, event: string, eventId: string) =>
  inc.maintenance.withMutation(
    inc.runtime.receiveEvent({
      submissionId: submissionId as never,
      event,
      eventId,
      payload: event === "done" ? { ok: true } : { eventId },
    }),
  )

const received = (event: string, eventId: string): HistoryEntry => ({
  _tag: "EventReceived",
  event,
  eventId,
  payload: { eventId },
})

/** The index rows of one Submission, by id. */
const indexed = (ctx: DurableObjectState, submissionId: string) =>
  ctx.storage.sql
    .exec(
      `SELECT event_id, event FROM ${EVENT_IDS_TABLE} WHERE submission_id = ? ORDER BY event_id`,
      submissionId,
    )
    .toArray()

describe("the index of event ids", () => {
  it.effect("answers events recorded before the upgrade as replayed or id-conflict", () =>
    inObject(objectName("event-ids-upgrade"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const before = yield* incarnation(ctx, { agents: [waiter] })
        const receipt = yield* submit(before, "t", waiter.id, "k", {})
        yield* before.maintenance.ensureAlarm
        yield* converge(ctx, before.maintenance)
        const id = receipt.submissionId
        yield* send(before, id, "note", "n1")
        // Two events appended together, in one history row.
        const row = yield* rowOf(before, id)
        yield* before.history.appendAll(
          id,
          [received("note", "n2"), received("other", "n3")],
          { _tag: "Input", submissionId: id, producerEpoch: row.producerEpoch, state: row.state },
          Date.now(),
        )
        // The release before the index: its schema without the table, the migration not run.
        ctx.storage.sql.exec(`DROP TABLE ${EVENT_IDS_TABLE}`)
        ctx.storage.sql.exec(`DELETE FROM ${MIGRATIONS_TABLE} WHERE name = 'thread-store/011-event-ids'`)

        const after = yield* incarnation(ctx, { agents: [waiter] })
        expect(indexed(ctx, id)).toEqual([
          { event_id: "n1", event: "note" },
          { event_id: "n2", event: "note" },
          { event_id: "n3", event: "other" },
        ])
        const delivered = (event: string, eventId: string) =>
          Effect.map(send(after, id, event, eventId), (delivery) =>
            delivery._tag === "Received" ? delivery.receipt.replayed : undefined,
          )
        expect(yield* delivered("note", "n1")).toBe(true)
        expect(yield* delivered("note", "n2")).toBe(true)
        expect(yield* delivered("other", "n3")).toBe(true)
        const conflict = yield* Effect.flip(send(after, id, "done", "n3"))
        expect(conflict).toMatchObject({ _tag: "EventRefused", reason: "id-conflict" })
        const preview = yield* Effect.flip(
          after.runtime.previewEvent({
            submissionId: id,
            event: "done",
            eventId: "n1",
            payload: { ok: true },
          }),
        )
        expect(preview).toMatchObject({ _tag: "EventRefused", reason: "id-conflict" })
        expect(yield* delivered("done", "d1")).toBe(false)
        yield* converge(ctx, after.maintenance)
        const settled = yield* rowOf(after, id)
        expect([settled.state, settled.settlement?.output]).toEqual(["settled", true])
        expect(indexed(ctx, id)).toHaveLength(4)
      }),
    ),
  )

  it.effect("removes a Submission's event ids with its records, and no other's", () =>
    inObject(objectName("event-ids-retention"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        const inc = yield* incarnation(ctx, { agents: [waiter] })
        const gone = yield* submit(inc, "a", waiter.id, "gone", {})
        const kept = yield* submit(inc, "b", waiter.id, "kept", {})
        yield* inc.maintenance.ensureAlarm
        yield* converge(ctx, inc.maintenance)
        for (const target of [gone, kept]) {
          yield* send(inc, target.submissionId, "note", "n1")
          yield* send(inc, target.submissionId, "done", "d1")
        }
        yield* converge(ctx, inc.maintenance)
        const settled = yield* rowOf(inc, gone.submissionId)
        expect(settled.state).toBe("settled")
        expect(indexed(ctx, gone.submissionId)).toHaveLength(2)
        expect(
          yield* inc.ledger.removeSettled([
            { submissionId: settled.submissionId, receiptId: settled.receiptId },
          ]),
        ).toEqual([gone.submissionId])
        expect(indexed(ctx, gone.submissionId)).toEqual([])
        expect(indexed(ctx, kept.submissionId)).toHaveLength(2)
        // Nothing of the removed Submission answers: it is not found.
        const missing = yield* Effect.flip(send(inc, gone.submissionId, "note", "n1"))
        expect(missing._tag).toBe("SubmissionNotFound")
      }),
    ),
  )
})
