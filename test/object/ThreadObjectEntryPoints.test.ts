import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import type * as ThreadClient from "../../src/ThreadClient.ts"
import {
  built,
  clientOf,
  deliverUntil,
  inState,
  ledgerRows,
  putMaintenanceRecord,
  storedMaintenance,
  stubOf,
  threadName,
} from "./support.ts"
import type { ThreadObjectRpc } from "../../src/ThreadObject.ts"
import type { RpcResult } from "../../src/internal/object/rpc.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined

describe("ThreadObject entry points", () => {
  it.live("submits, settles through alarms, and answers status, history and await", () =>
    Effect.gen(function* () {
      const thread = threadName("round-trip")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k1", input: { text: "hi" } })
      expect(receipt).toMatchObject({ threadId: thread, queueSequence: 1, replayed: false })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      const settlement = yield* client.awaitSettlement(receipt.submissionId, 1_000)
      expect(settlement).toMatchObject({ outcome: "completed", output: "echo: hi" })
      const page = yield* client.history({ limit: 2 })
      expect(page.records.map((record) => record.entry._tag)).toEqual(["SubmissionAccepted", "InputApplied"])
      expect(page.next).toBe(2)
      const rest = yield* client.history({ after: 2 })
      expect(rest.records.map((record) => record.entry._tag)).toEqual(["StepCompleted", "SubmissionSettled"])
      expect(yield* client.threadStatus).toMatchObject({ threadId: thread, nonterminal: 0 })
      const again = yield* client.submit({ agentId: "echo", idempotencyKey: "k1", input: { text: "hi" } })
      expect(again).toMatchObject({ submissionId: receipt.submissionId, replayed: true })
    }),
  )

  it.live(
    "refuses malformed, oversized and misaddressed input with a typed error naming it, writing nothing",
    () =>
      Effect.gen(function* () {
        const thread = threadName("refusals")
        const client = clientOf(thread)
        yield* built(client)
        const before = yield* storedMaintenance(thread)
        const cases: Array<Effect.Effect<unknown, ThreadClient.ThreadClientError>> = [
          client.submit({ agentId: "echo", idempotencyKey: "", input: { text: "x" } }),
          client.submit({ agentId: "echo", idempotencyKey: "k\u0000", input: { text: "x" } }),
          client.submit({ agentId: "echo", idempotencyKey: "k".repeat(257), input: { text: "x" } }),
          client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x".repeat(200_000) } }),
          // Over what a call may carry at all (32 MiB): refused, not reported as unreachable.
          client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x".repeat(34_000_000) } }),
          clientOf("bad\nthread").submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } }),
          client.history({ limit: 0 }),
          client.awaitSettlement("s", 120_000),
        ]
        for (const call of cases) {
          const failure = failureOf(yield* Effect.exit(call))
          expect(failure?._tag).toBe("InvalidRequest")
          expect((failure as { message: string }).message.length).toBeGreaterThan(0)
        }
        const refusals = [
          [client.submit({ agentId: "missing", idempotencyKey: "k", input: {} }), "unknown-agent"],
          [client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: 3 } }), "malformed-input"],
          [
            client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "y".repeat(5_000) } }),
            "input-bytes",
          ],
        ] as const
        for (const [call, reason] of refusals) {
          expect(failureOf(yield* Effect.exit(call))).toMatchObject({ _tag: "AdmissionRefused", reason })
        }
        expect(yield* ledgerRows(thread)).toEqual([])
        expect(yield* storedMaintenance(thread)).toEqual(before)
      }),
  )

  it.live("refuses a full lane before the mutation gate: no generation, no alarm, no row", () =>
    Effect.gen(function* () {
      const thread = threadName("full-lane")
      const client = clientOf(thread)
      const submit = (key: string) =>
        client.submit({ agentId: "review", idempotencyKey: key, input: { draft: key } })
      // The test Object's lanes hold 3: a head parked on its approval and two dormant followers.
      for (const key of ["a", "b", "c"]) yield* submit(key)
      yield* deliverUntil(
        thread,
        Effect.map(storedMaintenance(thread), (stored) => stored.alarm === null),
      )
      const before = { rows: yield* ledgerRows(thread), maintenance: yield* storedMaintenance(thread) }
      expect(failureOf(yield* Effect.exit(submit("d")))).toMatchObject({
        _tag: "AdmissionRefused",
        reason: "queue-depth",
      })
      expect(yield* ledgerRows(thread)).toEqual(before.rows)
      expect(yield* storedMaintenance(thread)).toEqual(before.maintenance)
      // A replayed key is not new work: a full lane still answers it.
      expect(yield* submit("b")).toMatchObject({ replayed: true })
    }),
  )

  it.live("decodes every raw RPC request at the boundary and names what is wrong, writing nothing", () =>
    Effect.gen(function* () {
      const thread = threadName("raw-rpc")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "review", idempotencyKey: "k", input: { draft: "d" } })
      // Quiescent first (parked on its approval, no alarm, nothing owed), so nothing but the
      // calls could write: an empty slot alone can be an alarm workerd is delivering.
      yield* deliverUntil(
        thread,
        Effect.map(storedMaintenance(thread), (stored) => {
          const record = stored.record as { dirty: string; processed: string } | undefined
          return stored.alarm === null && record?.dirty === record?.processed
        }),
      )
      const before = { rows: yield* ledgerRows(thread), maintenance: yield* storedMaintenance(thread) }
      const rpc = stubOf(thread) as unknown as ThreadObjectRpc
      const address = { threadId: thread, submissionId: receipt.submissionId }
      // Each bad request, and a word its refusal must name.
      const cases: ReadonlyArray<readonly [string, () => Promise<RpcResult>, string]> = [
        ["submit", () => rpc.submit(null), "Expected object"],
        ["submit", () => rpc.submit({ threadId: thread, agentId: "echo", input: {} }), "idempotencyKey"],
        [
          "submit",
          () => rpc.submit({ threadId: thread, agentId: 7, idempotencyKey: "x", input: {} }),
          "agentId",
        ],
        ["abort", () => rpc.abort({ threadId: thread }), "submissionId"],
        ["abort", () => rpc.abort({ threadId: "", submissionId: receipt.submissionId }), "threadId"],
        ["resolveApproval", () => rpc.resolveApproval({ ...address, decision: "yes" }), "decision"],
        [
          "resolveUnknown",
          () => rpc.resolveUnknown({ ...address, resolution: { _tag: "Maybe" } }),
          "resolution",
        ],
        ["retry", () => rpc.retry({ ...address, submissionId: "s\u0007" }), "submissionId"],
        ["submissionStatus", () => rpc.submissionStatus({ submissionId: receipt.submissionId }), "threadId"],
        ["threadStatus", () => rpc.threadStatus("not an object"), "Expected object"],
        ["history", () => rpc.history({ threadId: thread, after: -1 }), "after"],
        ["history", () => rpc.history({ threadId: thread, limit: 10_000 }), "limit"],
        ["awaitSettlement", () => rpc.awaitSettlement({ ...address, timeoutMillis: 1.5 }), "timeoutMillis"],
      ]
      for (const [entryPoint, call, named] of cases) {
        const result = yield* Effect.promise(call)
        expect(result.ok, entryPoint).toBe(false)
        const error = (result as { readonly error: { _tag: string; entryPoint: string; message: string } })
          .error
        expect(error).toMatchObject({ _tag: "InvalidRequest", entryPoint })
        expect(error.message, entryPoint).toContain(named)
      }
      expect(yield* ledgerRows(thread)).toEqual(before.rows)
      expect(yield* storedMaintenance(thread)).toEqual(before.maintenance)
    }),
  )

  it.live("answers only for Submissions of the addressed Thread", () =>
    Effect.gen(function* () {
      const object = threadName("lanes")
      const first = clientOf(`${object}-a`, object)
      const second = clientOf(`${object}-b`, object)
      const receipt = yield* first.submit({ agentId: "review", idempotencyKey: "k", input: { draft: "d" } })
      const misaddressed: Array<Effect.Effect<unknown, ThreadClient.ThreadClientError>> = [
        second.status(receipt.submissionId),
        second.abort(receipt.submissionId),
        second.resolveApproval(receipt.submissionId, { approved: true }),
        second.awaitSettlement(receipt.submissionId, 10),
      ]
      for (const call of misaddressed) {
        expect(failureOf(yield* Effect.exit(call))).toMatchObject({ _tag: "SubmissionNotFound" })
      }
      expect((yield* first.status(receipt.submissionId)).state).not.toBe("settled")
    }),
  )

  it.live("refuses to resolve what is not pending, and times out an unsettled await", () =>
    Effect.gen(function* () {
      const thread = threadName("not-pending")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      expect(
        failureOf(yield* Effect.exit(client.resolveApproval(receipt.submissionId, { approved: true }))),
      ).toMatchObject({
        _tag: "NotPending",
        expected: "approval",
      })
      expect(
        failureOf(
          yield* Effect.exit(client.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: 1 })),
        ),
      ).toMatchObject({ _tag: "NotPending", expected: "unknown-outcome" })
      const waiting = yield* client.submit({ agentId: "review", idempotencyKey: "w", input: { draft: "d" } })
      expect(failureOf(yield* Effect.exit(client.awaitSettlement(waiting.submissionId, 20)))).toMatchObject({
        _tag: "SettlementTimeout",
      })
    }),
  )

  it.live("refuses a mutation whose prearm fails, and runs nothing", () =>
    Effect.gen(function* () {
      const thread = threadName("prearm")
      const client = clientOf(thread)
      yield* client.threadStatus
      yield* putMaintenanceRecord(thread, {
        schemaVersion: 1,
        dirty: "not a number",
        processed: "0",
        nonterminal: 0,
      })
      const failure = failureOf(
        yield* Effect.exit(client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })),
      )
      expect(failure).toMatchObject({ _tag: "MaintenanceRecordDamaged", field: "dirty" })
      expect(yield* ledgerRows(thread)).toEqual([])
      // The damaged record is reported, never silently reset.
      expect((yield* storedMaintenance(thread)).record).toMatchObject({ dirty: "not a number" })
      const inspected = yield* client.inspectMaintenance
      expect(inspected.record).toBeUndefined()
      expect(inspected.damage).toMatchObject({ field: "dirty" })
    }),
  )

  it.live("never touches maintenance state from a read-only entry point", () =>
    Effect.gen(function* () {
      const thread = threadName("read-only")
      const client = clientOf(thread)
      const receipt = yield* client.submit({ agentId: "review", idempotencyKey: "k", input: { draft: "d" } })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
      yield* deliverUntil(
        thread,
        Effect.map(storedMaintenance(thread), (stored) => stored.alarm === null),
      )
      const before = yield* storedMaintenance(thread)
      yield* client.status(receipt.submissionId)
      yield* client.threadStatus
      yield* client.history()
      yield* Effect.exit(client.awaitSettlement(receipt.submissionId, 50))
      const inspection = yield* client.inspectMaintenance
      expect(yield* storedMaintenance(thread)).toEqual(before)
      expect(inspection).toMatchObject({ owed: false, alarm: null, record: { nonterminal: 1 } })
    }),
  )

  it.live("hosts several Threads in one Object, sharing its alarm and maintenance record", () =>
    Effect.gen(function* () {
      const object = threadName("shared")
      const lanes = ["a", "b", "c"].map((lane) => clientOf(`${object}-${lane}`, object))
      const receipts = yield* Effect.forEach(lanes, (lane) =>
        lane.submit({ agentId: "echo", idempotencyKey: "k", input: { text: lane.threadId } }),
      )
      yield* deliverUntil(
        object,
        Effect.map(
          Effect.forEach(receipts, (receipt, index) => lanes[index]!.status(receipt.submissionId)),
          (states) => states.every((status) => status.state === "settled"),
        ),
      )
      for (const [index, lane] of lanes.entries()) {
        const settlement = yield* lane.awaitSettlement(receipts[index]!.submissionId, 100)
        expect(settlement).toMatchObject({ threadId: lane.threadId, output: `echo: ${lane.threadId}` })
      }
      // One record for the Object: its lane cursor names one of the Threads it hosts.
      const inspection = yield* lanes[0]!.inspectMaintenance
      expect(lanes.map((lane) => lane.threadId)).toContain(inspection.record?.lastServedThreadId)
      expect(yield* lanes[2]!.inspectMaintenance).toMatchObject({ record: inspection.record })
    }),
  )
})
