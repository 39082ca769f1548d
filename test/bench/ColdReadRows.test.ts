/**
 * Reads of an Object whose storage holds nothing, in real workerd over the bench's counting
 * storage (test/worker/meteredObject.ts counts from the constructor on). Such a read must
 * answer as an empty Object does while writing no row and arming no alarm: before, each built
 * the incarnation, whose migrations wrote the schema and whose first alarm found nothing. The
 * first write then creates the schema as always. Figures are printed for the report.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runInDurableObject } from "cloudflare:test"
import { Effect, Exit } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import type { StorageMeter } from "../../bench/worker/meter.ts"
import { MAINTENANCE_STATE_KEY } from "../../src/internal/maintenance/state.ts"

interface Metered {
  readonly meter: StorageMeter
  readonly raw: DurableObjectStorage
}

const objectName = (label: string) => `cold-${label}-${crypto.randomUUID()}`
const clientOf = (name: string, thread = "t") =>
  ThreadClient.make(env.THREADS_METERED, thread, { objectName: name })
const inside = <A>(name: string, body: (object: Metered) => A | Promise<A>) =>
  Effect.promise(() =>
    runInDurableObject(env.THREADS_METERED.getByName(name), (instance) => body(instance as never)),
  )

/** The bill since the constructor (or the last reset), and what storage holds now (uncounted). */
const billOf = (name: string) =>
  inside(name, async (object) => {
    const counts = object.meter.snapshot()
    return {
      written: counts.sqlRowsWritten + counts.kvPuts + counts.kvDeletes,
      read: counts.sqlRowsRead,
      alarmSets: counts.alarmSets,
      deliveries: counts.alarmDeliveries,
      alarm: await object.raw.getAlarm(),
      tables: object.raw.sql
        .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'")
        .toArray().length,
      keys: [...object.raw.kv.list()].length,
    }
  })

const tagOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit)
    ? (exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error as { _tag?: string } | undefined)
        ?._tag
    : "success"

/** Every read a client (and so the console) makes, over an unknown Submission where it names one. */
const everyRead = (client: ThreadClient.ThreadClient) => {
  const unknown = "no-such-submission"
  return Effect.all({
    status: Effect.exit(client.status(unknown)),
    completedStep: Effect.exit(client.completedStep(unknown, 0)),
    awaitSettlement: Effect.exit(client.awaitSettlement(unknown, 0)),
    explain: Effect.exit(client.explain(unknown)),
    awaitProgress: Effect.exit(client.awaitProgress(unknown, { timeoutMillis: 0 })),
    threadStatus: Effect.exit(client.threadStatus),
    history: Effect.exit(client.history()),
    submissions: Effect.exit(client.submissions()),
    threads: Effect.exit(client.threads),
    submissionPage: Effect.exit(client.submissionPage()),
    unsettledPage: Effect.exit(client.submissionPage({ states: ["ready", "running"] })),
    approvalPage: Effect.exit(client.submissionPage({ waiting: "approval" })),
    noStatePage: Effect.exit(client.submissionPage({ states: ["settled"], waiting: "approval" })),
    threadPage: Effect.exit(client.threadPage()),
    findSubmission: Effect.exit(client.findSubmission("k")),
    schedules: Effect.exit(client.schedules),
    schedulePage: Effect.exit(client.schedulePage()),
    inspectMaintenance: Effect.exit(client.inspectMaintenance),
    obligations: Effect.exit(client.obligations),
    verify: Effect.exit(client.verify),
  })
}

/** The answers with what varies between Objects (the Thread and Object names) left out. */
const answers = (exits: Record<string, Exit.Exit<unknown, unknown>>) =>
  Object.fromEntries(
    Object.entries(exits).map(([name, exit]) => [
      name,
      Exit.isSuccess(exit)
        ? JSON.parse(
            JSON.stringify(exit.value, (key, value: unknown) =>
              typeof value === "bigint" ? `${value}n` : key === "verifiedAt" ? "now" : value,
            ),
          )
        : tagOf(exit),
    ]),
  )

describe("reads of a never-written Object", () => {
  it.live("write no row and arm no alarm; the first submit then creates the Object and settles", () =>
    Effect.gen(function* () {
      const name = objectName("reads")
      const client = clientOf(name)
      const reads = yield* everyRead(client)
      for (const call of ["status", "completedStep", "awaitSettlement", "explain", "awaitProgress"] as const)
        expect(tagOf(reads[call]), call).toBe("SubmissionNotFound")
      const afterReads = yield* billOf(name)
      console.log("reads of an unknown Object:", JSON.stringify(afterReads))
      expect(afterReads).toMatchObject({ written: 0, alarmSets: 0, alarm: null, tables: 0, keys: 0 })

      const receipt = yield* client.submit({
        agentId: "echo",
        idempotencyKey: "first",
        input: { text: "hi" },
      })
      const settlement = yield* client.awaitSettlement(receipt.submissionId, 10_000)
      expect(settlement).toMatchObject({ outcome: "completed", output: "echo: hi" })
      const afterSubmit = yield* billOf(name)
      console.log("reads, then the first submit settled:", JSON.stringify(afterSubmit))
      expect(afterSubmit.tables).toBeGreaterThan(0)
      expect((yield* client.status(receipt.submissionId)).state).toBe("settled")
    }),
  )

  it.live("answer as a built, empty Object does", () =>
    Effect.gen(function* () {
      const cold = answers(yield* everyRead(clientOf(objectName("cold"))))
      // Built by a submit it refuses: the schema and a clean record exist, no Submission, no alarm.
      const builtName = objectName("built")
      const built = clientOf(builtName)
      yield* Effect.exit(built.submit({ agentId: "no-such-agent", idempotencyKey: "k", input: {} }))
      expect((yield* billOf(builtName)).tables).toBeGreaterThan(0)
      const warm = answers(yield* everyRead(built))
      // The maintenance view differs by design: the built Object has its record. So do the
      // obligations' record fields (a clean record's generations); what is owed does not.
      const { inspectMaintenance: coldInspection, obligations: coldOwed, ...coldRest } = cold
      const { inspectMaintenance: warmInspection, obligations: warmOwed, ...warmRest } = warm
      const owed = ({
        obligations,
        impliedAlarm,
        scheduledAlarm,
        mismatch,
        passRunning,
      }: Record<string, unknown>) => ({
        obligations,
        impliedAlarm,
        scheduledAlarm,
        mismatch,
        passRunning,
      })
      expect(owed(coldOwed)).toEqual(owed(warmOwed))
      expect(coldRest).toEqual(warmRest)
      expect(coldOwed).toMatchObject({ obligations: [], impliedAlarm: null, scheduledAlarm: null })
      expect(warmInspection).toMatchObject({ alarm: null, owed: false })
      expect(coldRest).toMatchObject({ status: "SubmissionNotFound", threads: [], findSubmission: null })
      // Nothing is owed where no call ever needed the Object (a caller waits for that).
      expect(coldInspection).toMatchObject({ alarm: null, owed: false })
    }),
  )

  it.live("read a store written beside the Object since its constructor as it is, not as empty", () =>
    Effect.gen(function* () {
      const name = objectName("beside")
      const client = clientOf(name)
      expect(yield* client.inspectMaintenance).not.toHaveProperty("record")
      // A subclass's own method (or a test's fixture) writes the storage directly.
      yield* inside(name, (object) => object.raw.kv.put("application-key", 1))
      const inspection = yield* client.inspectMaintenance
      expect(inspection).toHaveProperty("record")
      expect((yield* billOf(name)).tables).toBeGreaterThan(0)
    }),
  )

  it.live("a new Object built by a call that admits nothing starts at rest: no alarm to find nothing", () =>
    Effect.gen(function* () {
      const name = objectName("refused")
      const client = clientOf(name)
      const refused = yield* Effect.exit(
        client.submit({ agentId: "no-such-agent", idempotencyKey: "k", input: {} }),
      )
      expect(tagOf(refused)).toBe("AdmissionRefused")
      const bill = yield* billOf(name)
      console.log("a refused first submit:", JSON.stringify(bill))
      // Built (schema and record), with a record that owes nothing and no alarm set or left.
      expect(bill).toMatchObject({ alarmSets: 0, alarm: null, keys: 1 })
      expect(bill.tables).toBeGreaterThan(0)
      const record = yield* inside(name, (object) =>
        object.raw.get<{ dirty: string; processed: string }>(MAINTENANCE_STATE_KEY),
      )
      expect(record).toMatchObject({ dirty: "0", processed: "0" })
      // A submit after it is admitted, armed and settles.
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      expect(yield* client.awaitSettlement(receipt.submissionId, 10_000)).toMatchObject({
        outcome: "completed",
      })
    }),
  )

  it.live(
    "a store written beside the Object before its first build still gets the bootstrap's dirty record and an alarm",
    () =>
      Effect.gen(function* () {
        const name = objectName("beside-record")
        const client = clientOf(name)
        // The constructor saw an empty store; a subclass's own method (or a test's fixture) then
        // writes it directly, with no maintenance record, before any call builds the Object.
        yield* inside(name, (object) => object.raw.kv.put("application-key", 1))
        const refused = yield* Effect.exit(
          client.submit({ agentId: "no-such-agent", idempotencyKey: "k", input: {} }),
        )
        expect(tagOf(refused)).toBe("AdmissionRefused")
        const bill = yield* billOf(name)
        console.log("a refused first submit beside a written key:", JSON.stringify(bill))
        // The store was not empty: what it holds gets one pass, as an older store's does.
        expect(bill.alarmSets).toBeGreaterThan(0)
        const record = yield* inside(name, (object) =>
          object.raw.get<{ dirty: string; processed: string }>(MAINTENANCE_STATE_KEY),
        )
        expect(record?.dirty).toBe("1")
        expect(yield* inside(name, (object) => object.raw.get("application-key"))).toBe(1)
      }),
  )

  it.live("first submit to a new Object: its cost, alone", () =>
    Effect.gen(function* () {
      const name = objectName("first")
      const client = clientOf(name)
      const receipt = yield* client.submit({
        agentId: "echo",
        idempotencyKey: "first",
        input: { text: "hi" },
      })
      const bill = yield* billOf(name)
      console.log("first submit (to its receipt):", JSON.stringify(bill))
      expect(yield* client.awaitSettlement(receipt.submissionId, 10_000)).toMatchObject({
        outcome: "completed",
      })
      // Until workerd has delivered every alarm it owes (the slot empty once more).
      for (let round = 0; round < 500 && (yield* billOf(name)).alarm !== null; round++)
        yield* Effect.sleep(10)
      console.log("first submit, settled, no alarm left:", JSON.stringify(yield* billOf(name)))
    }),
  )

  it.live("an existing Object's reads write nothing and answer as before", () =>
    Effect.gen(function* () {
      const name = objectName("existing")
      const client = clientOf(name)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      yield* client.awaitSettlement(receipt.submissionId, 10_000)
      yield* inside(name, (object) => object.meter.reset())
      const status = yield* client.status(receipt.submissionId)
      expect(status.state).toBe("settled")
      expect(yield* client.findSubmission("k")).toMatchObject({ submissionId: receipt.submissionId })
      expect((yield* client.threadPage()).threads.map((thread) => thread.threadId)).toEqual(["t"])
      expect((yield* client.history()).records.length).toBeGreaterThan(0)
      const bill = yield* billOf(name)
      console.log("reads of an existing Object:", JSON.stringify(bill))
      expect(bill.written).toBe(0)
      expect(bill.read).toBeGreaterThan(0)
    }),
  )

  it.live("refused requests (malformed, unauthorized, a malformed routed request) do not build it", () =>
    Effect.gen(function* () {
      const name = objectName("refusals")
      const malformed = yield* Effect.exit(
        clientOf(name).submit({ agentId: "echo", idempotencyKey: "", input: { text: "x" } }),
      )
      expect(tagOf(malformed)).toBe("InvalidRequest")
      const routed = yield* Effect.promise(() =>
        (
          env.THREADS_METERED.getByName(name) as unknown as { portCall(r: unknown): Promise<unknown> }
        ).portCall(null),
      )
      expect(routed).toMatchObject({ ok: false })
      expect(yield* billOf(name)).toMatchObject({ written: 0, alarmSets: 0, alarm: null, tables: 0, keys: 0 })

      // An Object whose policy refuses the caller: refused before anything is built.
      const thread = `tenant:a:${crypto.randomUUID()}`
      const intruder = ThreadClient.make(env.AUTHORIZED_TEST, thread, { caller: { subject: "b" } })
      const refused = yield* Effect.exit(
        intruder.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } }),
      )
      expect(tagOf(refused)).toBe("Unauthorized")
      const stored = yield* Effect.promise(() =>
        runInDurableObject(env.AUTHORIZED_TEST.getByName(thread), async (_instance, state) => ({
          alarm: await state.storage.getAlarm(),
          keys: [...state.storage.kv.list()].length,
          tables: state.storage.sql
            .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'effect_agent%'")
            .toArray().length,
        })),
      )
      expect(stored).toEqual({ alarm: null, keys: 0, tables: 0 })
    }),
  )

  it.live("concurrent first calls build it once: every submit is admitted and settles", () =>
    Effect.gen(function* () {
      const name = objectName("concurrent")
      const client = clientOf(name)
      const submits = ["a", "b", "c"].map((key) =>
        client.submit({ agentId: "echo", idempotencyKey: key, input: { text: key } }),
      )
      const [receipts, statuses] = yield* Effect.all(
        [
          Effect.all(submits, { concurrency: "unbounded" }),
          Effect.all([client.threadStatus, client.threads], { concurrency: "unbounded" }),
        ],
        { concurrency: "unbounded" },
      )
      expect(new Set(receipts.map((receipt) => receipt.submissionId)).size).toBe(3)
      expect(statuses[0].nonterminal).toBeLessThanOrEqual(3)
      for (const receipt of receipts)
        expect(yield* client.awaitSettlement(receipt.submissionId, 10_000)).toMatchObject({
          outcome: "completed",
        })
      expect((yield* client.threadStatus).nonterminal).toBe(0)
    }),
  )
})
