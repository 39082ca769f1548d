/**
 * What the common operations cost on Cloudflare's bill, through real `ThreadObject`s at the
 * default configuration over the bench's counting storage (test/worker/meteredObject.ts), with
 * workerd delivering the alarms: billed rows written (SQL rows, index entries included; KV keys
 * put or deleted; and every `setAlarm()`, which Cloudflare bills as a row written), rows read
 * and alarm deliveries (each a billed request). Each operation runs alone on a warm Object (its
 * first Submission settled before counting), the way an interactive caller's Submissions arrive:
 * a burst that shares alarm events costs less (bench/run.ts `--only perItem`). The figures are
 * printed for docs/performance.md ("What each operation costs") and checked here.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runInDurableObject } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import type { StorageMeter } from "../../bench/worker/meter.ts"

type Namespace = typeof env.THREADS_METERED | typeof env.THREADS_METERED_RETAINED
interface Site {
  readonly ns: Namespace
  readonly name: string
}
interface Metered {
  readonly meter: StorageMeter
  readonly raw: DurableObjectStorage
}

const site = (label: string, ns: Namespace = env.THREADS_METERED): Site => ({
  ns,
  name: `cost-${label}-${crypto.randomUUID()}`,
})
const clientOf = (at: Site, thread = "t") => ThreadClient.make(at.ns, thread, { objectName: at.name })
const inside = <A>(at: Site, body: (object: Metered) => A | Promise<A>) =>
  Effect.promise(() => runInDurableObject(at.ns.getByName(at.name), (instance) => body(instance)))
const reset = (at: Site) => inside(at, (object) => object.meter.reset())
const alarmOf = (at: Site) => inside(at, (object) => object.raw.getAlarm())

/** The bill since the last reset. */
const bill = (at: Site) =>
  inside(at, (object) => {
    const counts = object.meter.snapshot()
    return {
      written: counts.sqlRowsWritten + counts.kvPuts + counts.kvDeletes + counts.alarmSets,
      sql: counts.sqlRowsWritten,
      kv: counts.kvPuts + counts.kvDeletes,
      setAlarm: counts.alarmSets,
      read: counts.sqlRowsRead,
      deliveries: counts.alarmDeliveries,
    }
  })

/** Waits, workerd delivering the alarms, until `done` holds. */
const waitUntil = (done: Effect.Effect<boolean, unknown>) =>
  Effect.gen(function* () {
    for (let round = 0; round < 1_000; round++) {
      if (yield* Effect.orDie(done)) return
      yield* Effect.sleep(10)
    }
    return yield* Effect.die(new Error("not done after 10 s"))
  })

/** Waits until no alarm of `sites` is due within `horizon` ms; answers each Object's alarm. */
const quiesce = (sites: ReadonlyArray<Site>, horizon = 1_500) =>
  Effect.gen(function* () {
    for (let round = 0; round < 500; round++) {
      const alarms = yield* Effect.forEach(sites, alarmOf)
      if (alarms.every((alarm) => alarm === null || alarm > Date.now() + horizon)) return alarms
      yield* Effect.sleep(10)
    }
    return yield* Effect.die(new Error("alarms still due after 5 s"))
  })

const inState = (
  client: ThreadClient.ThreadClient,
  id: string,
  state: ThreadClient.SubmissionStatus["state"],
) => Effect.map(client.status(id), (status) => status.state === state)

/** A warm Object: one Submission settled and every due alarm delivered. */
const warm = (at: Site) =>
  Effect.gen(function* () {
    const client = clientOf(at, "warm")
    const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "warm", input: { text: "w" } })
    yield* waitUntil(inState(client, receipt.submissionId, "settled"))
    yield* quiesce([at])
  })

const print = (label: string, figures: unknown) => console.log(`cost ${label}: ${JSON.stringify(figures)}`)

describe("what one operation costs, alone on a warm Object", () => {
  it.live("a one-step Submission; then the idle Object and a caught-up alarm", () =>
    Effect.gen(function* () {
      const at = site("one-step")
      yield* warm(at)
      const client = clientOf(at)
      yield* reset(at)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "a" } })
      yield* waitUntil(inState(client, receipt.submissionId, "settled"))
      expect(yield* quiesce([at])).toEqual([null])
      const oneStep = yield* bill(at)
      print("one-step", oneStep)
      // The 11 of docs/performance.md's breakdown, the maintenance record written by the
      // Submission's own event (shared only when several heads run in one event), and three
      // `setAlarm`: the submit's prearm, its wake hint, the event's begin prearm.
      expect(oneStep).toMatchObject({ written: 15, sql: 10, kv: 2, setAlarm: 3, deliveries: 1 })

      // Idle: nothing owed, no alarm, nothing billed.
      yield* reset(at)
      yield* Effect.sleep(1_000)
      expect(yield* alarmOf(at)).toBeNull()
      const idle = yield* bill(at)
      print("idle 1 s", idle)
      expect(idle).toEqual({ written: 0, sql: 0, kv: 0, setAlarm: 0, read: 0, deliveries: 0 })

      // A caught-up alarm: no SQL, no KV write, but its begin prearm is a `setAlarm`.
      yield* reset(at)
      yield* inside(at, (object) => object.raw.setAlarm(Date.now()))
      expect(yield* quiesce([at])).toEqual([null])
      const caughtUp = yield* bill(at)
      print("caught-up alarm", caughtUp)
      expect(caughtUp).toEqual({ written: 1, sql: 0, kv: 0, setAlarm: 1, read: 0, deliveries: 1 })
    }),
  )

  it.live("a durable sleep, an approval and an event", () =>
    Effect.gen(function* () {
      const at = site("waits")
      yield* warm(at)
      const client = clientOf(at)

      yield* reset(at)
      const nap = yield* client.submit({
        agentId: "nap",
        idempotencyKey: "n",
        input: { text: "a", millis: 300 },
      })
      yield* waitUntil(inState(client, nap.submissionId, "settled"))
      expect(yield* quiesce([at])).toEqual([null])
      const sleep = yield* bill(at)
      print("sleep", sleep)
      expect(sleep).toMatchObject({ written: 20, setAlarm: 5, deliveries: 2 })

      yield* reset(at)
      const review = yield* client.submit({ agentId: "review", idempotencyKey: "r", input: { draft: "d" } })
      yield* waitUntil(inState(client, review.submissionId, "suspended"))
      // Waiting for a person holds no alarm.
      expect(yield* quiesce([at])).toEqual([null])
      const asked = yield* bill(at)
      yield* reset(at)
      yield* client.resolveApproval(review.submissionId, { approved: true })
      yield* waitUntil(inState(client, review.submissionId, "settled"))
      expect(yield* quiesce([at])).toEqual([null])
      const approved = yield* bill(at)
      print("approval: asked", asked)
      print("approval: resolved", approved)
      expect([asked, approved]).toMatchObject([
        { written: 14, setAlarm: 3, deliveries: 1 },
        { written: 13, setAlarm: 3, deliveries: 1 },
      ])

      yield* reset(at)
      const courier = yield* client.submit({
        agentId: "courier",
        idempotencyKey: "c",
        input: { wait: "first" },
      })
      yield* waitUntil(inState(client, courier.submissionId, "suspended"))
      expect(yield* quiesce([at])).toEqual([null])
      const waiting = yield* bill(at)
      yield* reset(at)
      yield* client.sendEvent(courier.submissionId, "shipped", { tracking: "x" })
      yield* waitUntil(inState(client, courier.submissionId, "settled"))
      expect(yield* quiesce([at])).toEqual([null])
      const received = yield* bill(at)
      print("event: waiting", waiting)
      print("event: sent", received)
      expect([waiting, received]).toMatchObject([
        { written: 12, setAlarm: 3, deliveries: 1 },
        // The event's record, its id's row (the index of event ids), the wake and the Attempt.
        { written: 14, setAlarm: 3, deliveries: 1 },
      ])
    }),
  )

  it.live("a child in another Object", () =>
    Effect.gen(function* () {
      const parent = site("parent")
      const child = site("child")
      yield* warm(parent)
      yield* warm(child)
      const client = clientOf(parent)
      yield* reset(parent)
      yield* reset(child)
      const receipt = yield* client.submit({
        agentId: "delegator",
        idempotencyKey: "d",
        input: { claims: ["ok"], verifierObject: child.name },
      })
      yield* waitUntil(inState(client, receipt.submissionId, "settled"))
      expect(yield* quiesce([parent, child])).toEqual([null, null])
      const inParent = yield* bill(parent)
      const inChild = yield* bill(child)
      print("child: parent's Object", inParent)
      print("child: child's Object", inChild)
      // The parent waits in memory for a quick child (`childAwaitMillis`), so how many events
      // it takes depends on the machine's speed: only what both Objects always write is checked.
      expect(inChild).toMatchObject({ written: 18, setAlarm: 3, deliveries: 1 })
      expect(inParent.written).toBeGreaterThanOrEqual(25)
    }),
  )

  it.live("a schedule's occurrence", () =>
    Effect.gen(function* () {
      const at = site("schedule")
      yield* warm(at)
      const client = clientOf(at)
      const scheduled = yield* client.schedule({
        scheduleId: "s",
        everyMillis: 1_000,
        agentId: "echo",
        input: { text: "s" },
      })
      const settled = (occurrence: number) =>
        Effect.map(client.findSubmission(`schedule:s:${occurrence}`), (found) => found?.state === "settled")
      yield* waitUntil(settled(scheduled.nextAt))
      const [listed] = yield* client.schedules
      const next = listed?.nextAt ?? Number.NaN
      yield* reset(at)
      yield* waitUntil(settled(next))
      const occurrence = yield* bill(at)
      print("schedule occurrence", occurrence)
      // The alarm is left at the next occurrence only.
      expect(yield* alarmOf(at)).toBe(next + 1_000)
      yield* client.unschedule("s")
      expect(occurrence).toMatchObject({ written: 15, setAlarm: 2, deliveries: 1 })
    }),
  )

  it.live("retention removing a settled Submission", () =>
    Effect.gen(function* () {
      const at = site("retained", env.THREADS_METERED_RETAINED)
      yield* warm(at)
      yield* quiesce([at], 3_000)
      const client = clientOf(at)
      yield* reset(at)
      const receipt = yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "a" } })
      yield* waitUntil(inState(client, receipt.submissionId, "settled"))
      const settled = yield* bill(at)
      yield* reset(at)
      yield* waitUntil(Effect.map(client.findSubmission("k"), (found) => found === null))
      expect(yield* quiesce([at], 3_000)).toEqual([null])
      const removed = yield* bill(at)
      print("retained: one-step", settled)
      print("retained: removal", removed)
      // One row more than without retention (the settled-rows index entry), and the finish sets
      // the retention deadline instead of clearing the alarm.
      expect(settled).toMatchObject({ written: 17, sql: 11, setAlarm: 4, deliveries: 1 })
      // Its ledger row and three history rows, the Thread's tails and the Object's history
      // floor (it carried the newest of both), and the event's begin prearm.
      expect(removed).toMatchObject({ written: 7, sql: 6, kv: 0, setAlarm: 1, deliveries: 1 })
    }),
  )
})

describe("rows read by a resumed Submission with work queued behind it", () => {
  /** Rows read by the journal reads of a wait's resumption, `queued` Submissions behind it. */
  const journalRowsRead = (kind: "approval" | "sleep" | "event", queued: number) =>
    Effect.gen(function* () {
      const at = site(`queued-${kind}-${queued}`)
      yield* warm(at)
      const client = clientOf(at)
      const agent =
        kind === "approval"
          ? { agentId: "review", input: { draft: "d" } }
          : kind === "sleep"
            ? { agentId: "nap", input: { text: "a", millis: 4_000 } }
            : { agentId: "courier", input: { wait: "first" } }
      const head = yield* client.submit({ ...agent, idempotencyKey: "head" })
      yield* waitUntil(inState(client, head.submissionId, kind === "sleep" ? "waiting" : "suspended"))
      // Delayed, so that none of them runs once the head settles.
      for (let i = 0; i < queued; i++)
        yield* client.submit({
          agentId: "echo",
          idempotencyKey: `q${i}`,
          input: { text: "q" },
          notBefore: Date.now() + 3_600_000,
        })
      yield* quiesce([at], 100)
      yield* reset(at)
      if (kind === "approval") yield* client.resolveApproval(head.submissionId, { approved: true })
      if (kind === "event") yield* client.sendEvent(head.submissionId, "shipped", { tracking: "x" })
      yield* waitUntil(inState(client, head.submissionId, "settled"))
      return yield* inside(at, (object) =>
        object.meter
          .breakdown()
          .filter(
            (each) =>
              each.statement.includes("FROM effect_agent_history WHERE thread_id") ||
              each.statement.includes("journal_from"),
          )
          .reduce((sum, each) => sum + each.rowsRead, 0),
      )
    })

  it.live(
    "grow by one row per Submission admitted after it (docs/operating.md, Known limits)",
    () =>
      Effect.gen(function* () {
        for (const kind of ["approval", "sleep", "event"] as const) {
          const alone = yield* journalRowsRead(kind, 0)
          const behind = yield* journalRowsRead(kind, 100)
          print(`journal rows read resuming ${kind}`, { alone, behind100: behind })
          expect(behind - alone).toBe(100)
        }
      }),
    30_000,
  )
})
