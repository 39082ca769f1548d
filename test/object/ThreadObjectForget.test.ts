/**
 * `forget` on a real `ThreadObject`: an operator removes one settled Submission's data now (its
 * row, records and key), is refused while it is not settled, and gets the same answer for an id
 * already forgotten, unknown, or of another Thread.
 */
import { describe, expect, it } from "@effect/vitest"
import { runDurableObjectAlarm } from "cloudflare:test"
import { Effect } from "effect"
import type { SubmissionId } from "../../src/core/Identifiers.ts"
import { switchboard } from "../worker/threadObject.ts"
import {
  clientOf,
  deliverUntil,
  inState,
  ledgerRows,
  putMaintenanceRecord,
  stubOf,
  threadName,
} from "./support.ts"

/** Delivers the alarms of a parent's Object and its children's until `done` holds. */
const runBoth = (
  parentObject: string,
  childObject: string,
  done: Effect.Effect<boolean, unknown>,
  pause: Effect.Effect<void> = Effect.sleep(5),
) =>
  Effect.gen(function* () {
    for (let round = 0; round < 30 && !(yield* done); round++) {
      for (const name of [parentObject, childObject])
        yield* Effect.promise(() => runDurableObjectAlarm(stubOf(name)).catch(() => false))
      yield* pause
    }
  })

/**
 * Forgets a parent's settled Submission, admits its key again (under the same id), runs both
 * Objects until it settles, and answers its settlement.
 */
const forgetAndAdmitAgain = (
  parent: ReturnType<typeof clientOf>,
  objects: { readonly parentObject: string; readonly childObject: string },
  first: { readonly submissionId: SubmissionId },
  submit: () => Effect.Effect<{ readonly submissionId: SubmissionId }, unknown>,
) =>
  Effect.gen(function* () {
    yield* parent.forget(first.submissionId)
    const again = yield* submit()
    expect(again).toMatchObject({ submissionId: first.submissionId, replayed: false })
    yield* runBoth(objects.parentObject, objects.childObject, inState(parent, again.submissionId, "settled"))
    return yield* parent.awaitSettlement(again.submissionId, 1_000)
  })

describe("ThreadObject forget", () => {
  it.live(
    "removes a settled Submission now and answers a repeat, an unknown id and another Thread's alike",
    () =>
      Effect.gen(function* () {
        const thread = threadName("forget")
        const client = clientOf(thread)
        const done = yield* client.submit({ agentId: "echo", idempotencyKey: "a", input: { text: "bye" } })
        const kept = yield* client.submit({ agentId: "echo", idempotencyKey: "b", input: { text: "stay" } })
        yield* deliverUntil(thread, inState(client, kept.submissionId, "settled"))

        // Another Thread hosted in the same Object cannot forget it.
        const neighbour = clientOf(threadName("neighbour"), thread)
        yield* neighbour.forget(done.submissionId)
        expect((yield* ledgerRows(thread)).map((row) => row.submission_id)).toContain(done.submissionId)

        yield* client.forget(done.submissionId)
        const rows = (yield* ledgerRows(thread)).map((row) => row.submission_id)
        expect(rows).toEqual([kept.submissionId])
        expect((yield* client.history()).records.map((record) => record.submissionId)).not.toContain(
          done.submissionId,
        )
        expect(yield* Effect.flip(client.status(done.submissionId))).toMatchObject({
          _tag: "SubmissionNotFound",
        })
        yield* client.forget(done.submissionId)
        yield* client.forget("sub-unknown")
        // Its key admits a new Submission, after the ones already in the lane.
        const again = yield* client.submit({ agentId: "echo", idempotencyKey: "a", input: { text: "bye" } })
        expect(again).toMatchObject({ submissionId: done.submissionId, replayed: false, queueSequence: 3 })
        // The gaps it left in the Thread's sequence and the lane's positions are not violations.
        yield* deliverUntil(thread, inState(client, again.submissionId, "settled"))
        expect((yield* client.verify).violations).toEqual([])
      }),
  )

  it.live("answers every call about a forgotten Submission with SubmissionNotFound, at once", () =>
    Effect.gen(function* () {
      const thread = threadName("forget-calls")
      const client = clientOf(thread)
      const gone = yield* client.submit({ agentId: "echo", idempotencyKey: "g", input: { text: "gone" } })
      yield* deliverUntil(thread, inState(client, gone.submissionId, "settled"))
      yield* client.forget(gone.submissionId)
      const id = gone.submissionId
      const started = Date.now()
      const failures = yield* Effect.all(
        [
          client.awaitSettlement(id, 30_000),
          client.awaitProgress(id, { after: "1.0.settled.0", timeoutMillis: 30_000 }),
          client.sendEvent(id, "shipped", { tracking: "T" }),
          client.resolveApproval(id, { approved: true }),
          client.resolveUnknown(id, { _tag: "Failed", message: "no" }),
          client.abort(id),
          client.retry(id),
          client.explain(id),
          client.status(id),
        ].map((call) => Effect.flip(call as Effect.Effect<unknown, { readonly _tag: string }>)),
      )
      expect(failures.map((failure) => failure._tag)).toEqual(Array(9).fill("SubmissionNotFound"))
      expect(Date.now() - started).toBeLessThan(5_000)
    }),
  )

  it.live("refuses with MaintenanceRecordDamaged, naming the field, while the record is damaged", () =>
    Effect.gen(function* () {
      const thread = threadName("forget-damaged")
      const client = clientOf(thread)
      const done = yield* client.submit({ agentId: "echo", idempotencyKey: "d", input: { text: "d" } })
      yield* deliverUntil(thread, inState(client, done.submissionId, "settled"))
      yield* putMaintenanceRecord(thread, { schemaVersion: 1, dirty: "4", processed: "oops", nonterminal: 0 })
      expect(yield* Effect.flip(client.forget(done.submissionId))).toMatchObject({
        _tag: "MaintenanceRecordDamaged",
        field: "processed",
      })
      expect((yield* ledgerRows(thread)).map((row) => row.submission_id)).toEqual([done.submissionId])
      // Repaired, the same call removes it.
      yield* client.repairMaintenance
      yield* client.forget(done.submissionId)
      expect(yield* ledgerRows(thread)).toEqual([])
    }),
  )

  it.live("reports a storage failure of its removal as the Object's storage, removing nothing", () =>
    Effect.gen(function* () {
      const thread = threadName("forget-storage")
      const client = clientOf(thread)
      const done = yield* client.submit({ agentId: "echo", idempotencyKey: "s", input: { text: "s" } })
      yield* deliverUntil(thread, inState(client, done.submissionId, "settled"))
      switchboard.install(stubOf(thread).id, {
        storage: (location, detail) => {
          if (location === "storage:sql:before" && detail === "delete effect_agent_submissions")
            throw new Error("disk full")
        },
      })
      const failure = yield* Effect.flip(client.forget(done.submissionId)).pipe(
        Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(thread).id))),
      )
      expect(failure).toMatchObject({ _tag: "ThreadObjectFailure", reason: "storage" })
      expect((yield* ledgerRows(thread)).map((row) => row.submission_id)).toEqual([done.submissionId])
    }),
  )

  it.live("refuses a Submission that is not settled, removing nothing", () =>
    Effect.gen(function* () {
      const thread = threadName("forget-open")
      const client = clientOf(thread)
      const waiting = yield* client.submit({
        agentId: "review",
        idempotencyKey: "r",
        input: { draft: "plan" },
      })
      yield* deliverUntil(thread, inState(client, waiting.submissionId, "suspended"))
      const refused = yield* Effect.flip(client.forget(waiting.submissionId))
      expect(refused).toMatchObject({
        _tag: "ForgetRefused",
        submissionId: waiting.submissionId,
        reason: "not-settled",
      })
      expect((yield* ledgerRows(thread)).map((row) => row.state)).toEqual(["suspended"])
    }),
  )

  it.live(
    "runs a forgotten parent's children again when its key is admitted again under the same id",
    () =>
      Effect.gen(function* () {
        const parentObject = threadName("parent")
        const childObject = threadName("children")
        const parent = clientOf("desk", parentObject)
        const submit = (claim: string) =>
          parent.submit({
            agentId: "delegator",
            idempotencyKey: "claims-1",
            input: { claims: [claim], verifierObject: childObject },
          })
        const first = yield* submit("real invoice")
        yield* runBoth(parentObject, childObject, inState(parent, first.submissionId, "settled"))
        expect(yield* parent.awaitSettlement(first.submissionId, 1_000)).toMatchObject({ output: ["true"] })
        // The parent's data goes (its child's stays in the other Object); its key admits anew.
        const settlement = yield* forgetAndAdmitAgain(parent, { parentObject, childObject }, first, () =>
          submit("fake invoice"),
        )
        // Its child checked the new claim: not the first child's answer, and no endless wait.
        expect(settlement).toMatchObject({
          outcome: "completed",
          output: ["false"],
        })
      }),
    60_000,
  )
})

describe("ThreadObject forget, a child's settlement still owed", () => {
  it.live(
    "does not hand a forgotten parent's child settlement to the parent admitted again under its id",
    () =>
      Effect.gen(function* () {
        const parentObject = threadName("parent-owed")
        const childObject = threadName("children-owed")
        const parent = clientOf("desk", parentObject)
        const submit = (claim: string) =>
          parent.submit({
            agentId: "delegator",
            idempotencyKey: "claims-1",
            input: { claims: [claim], verifierObject: childObject },
          })
        // The child's Object loses the parent's acknowledgements of its settlement (as when the
        // reply to a delivery is lost), so the settlement stays owed and is sent again; and,
        // while `admissionsRefused`, it cannot admit a child (its parent sends it again later).
        let ackLost = true
        let admissionsRefused = false
        switchboard.install(stubOf(childObject).id, {
          storage: (location, detail) => {
            if (location !== "storage:sql:before") return
            if (ackLost && detail === "update effect_agent_outbox") throw new Error("acknowledgement lost")
            if (admissionsRefused && detail === "insert effect_agent_submissions")
              throw new Error("admission refused for now")
          },
        })
        const first = yield* submit("real invoice")
        yield* runBoth(parentObject, childObject, inState(parent, first.submissionId, "settled"))
        expect(yield* parent.awaitSettlement(first.submissionId, 1_000)).toMatchObject({ output: ["true"] })
        // Its child's admission is acknowledged: the parent may be forgotten, and its key admits anew.
        yield* parent.forget(first.submissionId)
        admissionsRefused = true
        const again = yield* submit("fake invoice")
        expect(again).toMatchObject({ submissionId: first.submissionId, replayed: false })
        // The new parent starts its own child (not admitted yet) while the first child's settlement
        // is still being sent to the same parent id and step.
        for (let round = 0; round < 10; round++) {
          for (const name of [parentObject, childObject])
            yield* Effect.promise(() => runDurableObjectAlarm(stubOf(name)).catch(() => false))
          yield* Effect.sleep(20)
        }
        ackLost = false
        admissionsRefused = false
        yield* runBoth(
          parentObject,
          childObject,
          inState(parent, again.submissionId, "settled"),
          Effect.sleep(100),
        ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(stubOf(childObject).id))))
        // Its own child checked the new claim: the first child's answer is not taken for it.
        expect(yield* parent.awaitSettlement(again.submissionId, 1_000)).toMatchObject({
          outcome: "completed",
          output: ["false"],
        })
      }),
    60_000,
  )

  it.live(
    "hands a parent admitted again the settlement of the child its key names, which the first one heard",
    () =>
      Effect.gen(function* () {
        const parentObject = threadName("parent-keyed")
        const childObject = threadName("children-keyed")
        const parent = clientOf("desk", parentObject)
        const submit = () =>
          parent.submit({
            agentId: "keyed-delegator",
            idempotencyKey: "claim-1",
            input: { claim: "real invoice", childKey: "check-1", verifierObject: childObject },
          })
        const first = yield* submit()
        yield* runBoth(parentObject, childObject, inState(parent, first.submissionId, "settled"))
        expect(yield* parent.awaitSettlement(first.submissionId, 1_000)).toMatchObject({ output: "true" })
        // The same key starts the same child, which settled already and stays in its Object.
        const settlement = yield* forgetAndAdmitAgain(parent, { parentObject, childObject }, first, submit)
        expect(settlement).toMatchObject({
          outcome: "completed",
          output: "true",
        })
      }),
    60_000,
  )

  it.live(
    "decides a parent admitted again its own child's admission, not the first one's refusal",
    () =>
      Effect.gen(function* () {
        const parentObject = threadName("parent-refused")
        const childObject = threadName("children-refused")
        const parent = clientOf("desk", parentObject)
        // The child's Thread is full (its lane holds the limit of 3): the first child is refused.
        const lane = clientOf("verify-0", childObject)
        const queued = yield* Effect.forEach(["r1", "r2", "r3"], (key) =>
          lane.submit({ agentId: "review", idempotencyKey: key, input: { draft: key } }),
        )
        const submit = () =>
          parent.submit({
            agentId: "delegator",
            idempotencyKey: "claims-1",
            input: { claims: ["real invoice"], verifierObject: childObject },
          })
        const first = yield* submit()
        yield* runBoth(parentObject, childObject, inState(parent, first.submissionId, "settled"))
        expect(yield* parent.awaitSettlement(first.submissionId, 1_000)).toMatchObject({ output: ["failed"] })
        // The lane empties; the parent is forgotten and its key admitted again under the same id.
        yield* Effect.forEach(queued, (receipt) => lane.abort(receipt.submissionId))
        yield* deliverUntil(
          childObject,
          Effect.map(
            Effect.forEach(queued, (receipt) => lane.status(receipt.submissionId)),
            (all) => all.every((status) => status.state === "settled"),
          ),
        )
        const settlement = yield* forgetAndAdmitAgain(parent, { parentObject, childObject }, first, submit)
        // Its own child ran: the lane had room for it, whatever the first one was told.
        expect(settlement).toMatchObject({
          outcome: "completed",
          output: ["true"],
        })
      }),
    60_000,
  )
})
