/**
 * The library's own `ThreadObject` as a bench subject: one agent with one async no-op step,
 * one that parks on an approval, and routes for every measurement of the bench.
 *
 * The subclass hands the library a metered state (bench/worker/meter.ts) and counts alarm
 * deliveries; harness reads and set-up writes use the raw storage so they are not counted.
 * A settlement is counted when the pass whose head ran the step has returned: the step itself
 * only notes it ran, and `/wait` checks the library's own settlement counter at the end.
 * While a burst is being submitted the alarm handler waits, so the backlog is queued in full
 * before the first pass (`hold`), as "drain N queued Submissions" asks.
 */
import { Effect, Schema } from "effect"
import { define } from "../../src/core/AgentRegistration.ts"
import { BETA96_PACING, type CloudflareDurableRuntimeConfigOverrides } from "../../src/CloudflareConfig.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"
import { BurstProgress, json } from "./burst.ts"
import { cloneSubmission } from "./clones.ts"
import { meterState, type StorageMeter } from "./meter.ts"
import type {
  FaninReport,
  MeterCounts,
  ParkReport,
  PassReport,
  SustainReport,
  ThreadBurstReport,
} from "./report.ts"

/** What the agents of one Object report, by Object id (module state of the bench isolate). */
interface Probe {
  /** Alarm deliveries so far. */
  deliveries: number
  /** No-op steps that ran. */
  steps: number
  /** The delivery during which each Thread's last step ran. */
  readonly stepDelivery: Map<string, number>
  /** When each Thread's last step ran (the Object's clock). */
  readonly stepAt: Map<string, number>
}

const probes = new Map<string, Probe>()

const probeOf = (id: string): Probe => {
  let probe = probes.get(id)
  if (probe === undefined) {
    probe = { deliveries: 0, steps: 0, stepDelivery: new Map(), stepAt: new Map() }
    probes.set(id, probe)
  }
  return probe
}

/** One async no-op step, then the Submission settles with its input number. */
export const noopAgent = define({
  id: "bench-noop",
  version: "1",
  input: Schema.Struct({ probe: Schema.String, n: Schema.Int }),
  output: Schema.Int,
  program: ({ probe, n }, ctx) =>
    ctx
      .step(
        "noop",
        Effect.promise(async () => {
          await Promise.resolve()
          return n
        }),
      )
      .pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            const state = probeOf(probe)
            state.steps += 1
            state.stepDelivery.set(ctx.threadId, state.deliveries)
            state.stepAt.set(ctx.threadId, Date.now())
          }),
        ),
      ),
})

/** Parks on an approval: a stable external wait. */
export const approvalAgent = define({
  id: "bench-approval",
  version: "1",
  input: Schema.Struct({ n: Schema.Int }),
  output: Schema.Int,
  program: ({ n }, ctx) => Effect.as(ctx.requestApproval({ n }), n),
})

/**
 * Objects whose held step must not return in this isolate. Module state: a restart of workerd
 * starts with none, so the same step, replayed by the next incarnation, returns at once.
 */
const holding = new Set<string>()

/** When the held step first ran in this isolate, per Object: the recovery figure reads it. */
const heldStepRuns = new Map<string, number>()

/** One step that holds its Claim (never returns) while its Object is in `holding`. */
export const holdingAgent = define({
  id: "bench-hold",
  version: "1",
  input: Schema.Struct({ probe: Schema.String, n: Schema.Int }),
  output: Schema.Int,
  program: ({ probe, n }, ctx) =>
    ctx.step(
      "hold",
      Effect.promise(
        () =>
          new Promise<number>((resolve) => {
            if (!heldStepRuns.has(probe)) heldStepRuns.set(probe, Date.now())
            if (!holding.has(probe)) resolve(n)
          }),
      ),
    ),
})

const SUBMISSIONS_TABLE = "effect_agent_submissions"

/** Statements only retention runs: its reads of candidates and ends, its deletes and deferrals. */
const RETENTION_STATEMENT =
  /^DELETE |prune_after <= \?|SET prune_after = \?|ORDER BY prune_after|thread_tails \(|history_floor \(|message_id > \? AND message_id < \?|WHERE position = \(SELECT max\(position\) FROM effect_agent_history\)$|SELECT submission_id, sequence \+ records/
const maintenanceKey = "effect-agent:thread-maintenance:v1"

/** The Thread id of lane `index` of `lanes`, zero-padded so lanes sort by index. */
export const laneName = (prefix: string, index: number): string =>
  `${prefix}-${String(index).padStart(5, "0")}`

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Builds the bench class of the library's Object with these configuration overrides. */
export const benchThreadObject = (config: CloudflareDurableRuntimeConfigOverrides) =>
  class BenchThreadObject extends ThreadObject.make(
    ThreadObject.layer([noopAgent, approvalAgent, holdingAgent]),
    { config },
  ) {
    readonly meter: StorageMeter
    readonly progress = new BurstProgress()
    readonly #raw: { readonly id: DurableObjectId; readonly storage: DurableObjectStorage }
    readonly #probe: Probe
    /** Alarm handlers wait on this while a burst is being submitted. */
    #held: Promise<void> = Promise.resolve()
    #release: () => void = () => {}
    #stopped = false
    /** Alarm handlers running now: the slot reads empty while one is delivered. */
    #inFlight = 0
    #passWaiters: Array<() => void> = []
    #drainStartedAt = 0
    /** The meter's counts when the burst was submitted in full. */
    #submitCounts: MeterCounts | undefined
    #lastSettledAt = 0
    #accounted = 0

    constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
      const meter = meterState(ctx)
      const raw = { id: ctx.id, storage: ctx.storage }
      // workerd's base class accepts only its own state object, so the metered storage is
      // installed on it as an own property that shadows the native getter.
      Object.defineProperty(ctx, "storage", { value: meter.storage, configurable: true })
      super(ctx, env)
      this.meter = meter
      this.#raw = raw
      this.#probe = probeOf(ctx.id.toString())
    }

    override async alarm(): Promise<void> {
      this.#inFlight += 1
      try {
        await this.#held
        if (this.#stopped) return
        this.meter.delivered()
        this.#probe.deliveries += 1
        await this.#pass()
      } finally {
        this.#inFlight -= 1
      }
    }

    async #pass(): Promise<void> {
      try {
        await super.alarm?.()
      } finally {
        const done = this.#probe.steps - this.#accounted
        this.#accounted = this.#probe.steps
        for (let i = 0; i < done; i++) this.progress.itemDone()
        if (done > 0) this.#lastSettledAt = Date.now()
        for (const wake of this.#passWaiters.splice(0)) wake()
      }
    }

    /** Resolves after the next alarm delivery has run its pass. */
    #nextPass(): Promise<void> {
      return new Promise((resolve) => this.#passWaiters.push(resolve))
    }

    #hold(): void {
      this.#held = new Promise((resolve) => {
        this.#release = resolve
      })
    }

    #releaseHold(): void {
      this.#drainStartedAt = Date.now()
      this.#submitCounts = this.meter.snapshot()
      this.#release()
    }

    async #submitOne(threadId: string, agentId: string, key: string, input: unknown): Promise<void> {
      const result = await this.submit({ threadId, agentId, idempotencyKey: key, input })
      if (!result.ok) throw new Error(`submit refused: ${JSON.stringify(result.error)}`)
    }

    /** Queues `count` no-op Submissions round-robin over `lanes` lanes, then lets passes run. */
    async #burst(count: number, lanes: number, prefix: string): Promise<void> {
      this.meter.reset()
      this.progress.begin(count)
      this.#hold()
      try {
        const probe = this.#raw.id.toString()
        for (let n = 0; n < count; n++) {
          await this.#submitOne(laneName(prefix, n % lanes), noopAgent.id, `item-${n}`, { probe, n })
        }
      } finally {
        this.#releaseHold()
      }
    }

    /** Waits until no alarm is scheduled (nothing owed) and none is being delivered. */
    async #quiescent(timeoutMs = 60_000): Promise<void> {
      const deadline = Date.now() + timeoutMs
      while (this.#inFlight > 0 || (await this.#raw.storage.getAlarm()) !== null) {
        if (Date.now() > deadline) throw new Error("the Object did not quiesce")
        await sleep(10)
      }
    }

    #nonterminal(): number {
      return this.#raw.storage.sql
        .exec<{ n: number }>(`SELECT count(*) AS n FROM ${SUBMISSIONS_TABLE} WHERE state <> 'settled'`)
        .one().n
    }

    #suspended(): number {
      return this.#raw.storage.sql
        .exec<{ n: number }>(`SELECT count(*) AS n FROM ${SUBMISSIONS_TABLE} WHERE state = 'suspended'`)
        .one().n
    }

    /**
     * `count` Threads of this Object each submit one Submission that asks for an approval, as
     * traffic comes (alarms run meanwhile): how long until every approval request exists, and
     * whether any delivery follows once all wait.
     */
    async #fanin(count: number, idleMs: number, capMs: number): Promise<FaninReport> {
      const before = this.#probe.deliveries
      const startedAt = Date.now()
      for (let n = 0; n < count; n++)
        await this.#submitOne(laneName("fanin", n), approvalAgent.id, `fanin-${n}`, { n })
      const submittedAt = Date.now()
      while (this.#suspended() < count) {
        if (Date.now() - startedAt > capMs) throw new Error(`${this.#suspended()} of ${count} parked in time`)
        await sleep(5)
      }
      const parkedAt = Date.now()
      const atPark = this.#probe.deliveries
      await this.#quiescent()
      await sleep(idleMs)
      return {
        requested: this.#suspended(),
        seconds: (parkedAt - startedAt) / 1000,
        submitSeconds: (submittedAt - startedAt) / 1000,
        deliveries: atPark - before,
        deliveriesAfter: this.#probe.deliveries - atPark,
        alarm: await this.#raw.storage.getAlarm(),
      }
    }

    async #settledCounter(): Promise<number> {
      const result = await this.inspectMaintenance({ threadId: "bench" })
      if (!result.ok) throw new Error("inspectMaintenance failed")
      return (result.value as { counters: { settled: number } }).counters.settled
    }

    /** Forces one delivery now and measures its pass; `dirty` first makes a generation owed. */
    async #measurePass(dirty: boolean): Promise<PassReport> {
      await this.#quiescent()
      if (dirty) {
        const record = (await this.#raw.storage.get<Record<string, unknown>>(maintenanceKey)) ?? {}
        await this.#raw.storage.put(maintenanceKey, {
          ...record,
          dirty: String(BigInt(String(record["dirty"] ?? "0")) + 1n),
        })
      }
      const before = await this.inspectMaintenance({ threadId: "bench" })
      this.meter.reset()
      const pass = this.#nextPass()
      const startedAt = performance.now()
      await this.#raw.storage.setAlarm(Date.now())
      await pass
      const wallMs = performance.now() - startedAt
      const counts = this.meter.snapshot()
      const after = await this.inspectMaintenance({ threadId: "bench" })
      type Inspected = { counters: { caughtUpPasses: number }; record?: { nonterminal: number } }
      const view = (result: typeof after) => (result.ok ? (result.value as Inspected) : undefined)
      return {
        counts,
        wallMs,
        caughtUp: (view(after)?.counters.caughtUpPasses ?? 0) > (view(before)?.counters.caughtUpPasses ?? 0),
        nonterminal: view(after)?.record?.nonterminal ?? -1,
        alarm: await this.#raw.storage.getAlarm(),
      }
    }

    /**
     * Parks `count` Submissions in approval waits, one per lane: one is parked by the library,
     * then its ledger row and history records are cloned through raw SQL under new ids (so the
     * set-up stays linear before the fixes); an owed pass then classifies them all.
     */
    async #park(count: number): Promise<ParkReport> {
      const template = laneName("park", 0)
      await this.#submitOne(template, approvalAgent.id, "park-0", { n: 0 })
      await this.#quiescent()
      // The copies are written behind the history's back, which remembers the Object's counts
      // between appends (`ends.ts`); the last Submission is submitted as traffic is: its append
      // finds its position taken by a copy, forgets what it remembered and reads the true ends.
      const row = cloneSubmission(this.#raw.storage, template, Math.max(1, count - 1), (index) => ({
        threadId: laneName("park", index),
        idempotencyKey: `park-${index}`,
      }))
      if (row["state"] !== "suspended") throw new Error(`the template is ${String(row["state"])}`)
      if (count > 1) {
        await this.#submitOne(laneName("park", count - 1), approvalAgent.id, `park-${count - 1}`, {
          n: count - 1,
        })
        await this.#quiescent()
      }
      const classify = await this.#measurePass(true)
      return { parked: this.#nonterminal(), classify }
    }

    override async fetch(request: Request): Promise<Response> {
      const { pathname } = new URL(request.url)
      const text = await request.text()
      const body = text === "" ? {} : (JSON.parse(text) as Record<string, number>)
      switch (pathname) {
        case "/burst": {
          const count = body["count"] ?? 0
          const lanes = body["lanes"] ?? 1
          if (!Number.isInteger(count) || count < 1 || !Number.isInteger(lanes) || lanes < 1)
            return json({ error: "count and lanes must be positive integers" }, 400)
          await this.#burst(count, lanes, "lane")
          return json({ submitted: count })
        }
        case "/sustain": {
          // One chunk of a sustained run: `count` Submissions queued, then drained; what it cost,
          // and the database's size and rows once drained (retention may be removing meanwhile).
          const count = body["count"] ?? 0
          const lanes = body["lanes"] ?? 1
          // What the statements only retention runs cost since the last call (its passes run
          // between chunks too); the reads it shares with other work (a row by id) are left out.
          const pruning = this.meter.breakdown().filter((each) => RETENTION_STATEMENT.test(each.statement))
          const rowsBefore = this.#raw.storage.sql
            .exec<{ n: number }>(`SELECT count(*) AS n FROM ${SUBMISSIONS_TABLE}`)
            .one().n
          this.meter.reset()
          this.progress.begin(count)
          this.#hold()
          const startedAt = Date.now()
          try {
            const probe = this.#raw.id.toString()
            const offset = body["offset"] ?? 0
            for (let n = 0; n < count; n++) {
              await this.#submitOne(laneName("sustain", n % lanes), noopAgent.id, `s-${offset + n}`, {
                probe,
                n,
              })
            }
          } finally {
            this.#releaseHold()
          }
          if (count > 0) await this.progress.settled()
          const report: SustainReport = {
            items: count,
            ms: this.#lastSettledAt - startedAt,
            counts: this.meter.snapshot(),
            rowsBefore,
            pruneRowsRead: pruning.reduce((sum, each) => sum + each.rowsRead, 0),
            pruneRowsWritten: pruning.reduce((sum, each) => sum + each.rowsWritten, 0),
            databaseBytes: this.#raw.storage.sql.databaseSize,
            rows: this.#raw.storage.sql
              .exec<{ n: number }>(`SELECT count(*) AS n FROM ${SUBMISSIONS_TABLE}`)
              .one().n,
          }
          return json(report)
        }
        case "/breakdown":
          return json({ items: this.progress.done, statements: this.meter.breakdown() })
        case "/progress":
          // Answers once every item is done, or after `waitMs`: the driver sees the last
          // settlement when it happens, as the raw queue's `/wait` does, not at its next poll.
          await Promise.race([this.progress.settled(), sleep(body["waitMs"] ?? 0)])
          return json({ done: this.progress.done })
        case "/wait": {
          await this.progress.settled()
          // Whatever the last passes still owed (acknowledgement, alarm clear) is part of the cost.
          await this.#quiescent()
          const counts = this.meter.snapshot()
          const report: ThreadBurstReport = {
            items: this.progress.done,
            counts,
            drainMs: this.#lastSettledAt - this.#drainStartedAt,
            settledCounter: await this.#settledCounter(),
            nonterminal: this.#nonterminal(),
            submitCounts: this.#submitCounts ?? counts,
          }
          return json(report)
        }
        case "/stop": {
          // Ends a run that exceeded its time cap: later deliveries do nothing.
          this.#stopped = true
          await this.#raw.storage.deleteAlarm()
          return json({ stopped: true, done: this.progress.done, counts: this.meter.snapshot() })
        }
        case "/fanin":
          return json(
            await this.#fanin(body["count"] ?? 200, body["idleMs"] ?? 2_000, body["capMs"] ?? 1_200_000),
          )
        case "/pass":
          return json(await this.#measurePass(body["dirty"] === 1))
        case "/park":
          return json(await this.#park(body["count"] ?? 1))
        case "/fairness": {
          const hot = body["hot"] ?? 1000
          const cold = body["cold"] ?? 100
          this.meter.reset()
          this.progress.begin(hot + cold)
          this.#hold()
          const probe = this.#raw.id.toString()
          try {
            for (let n = 0; n < hot; n++)
              await this.#submitOne("lane-hot", noopAgent.id, `hot-${n}`, { probe, n })
            for (let n = 0; n < cold; n++)
              await this.#submitOne(laneName("lane-cold", n), noopAgent.id, `cold-${n}`, { probe, n })
          } finally {
            this.#releaseHold()
          }
          const releasedAt = Date.now()
          await this.progress.settled()
          const ofColdLanes = (entries: Map<string, number>) =>
            [...entries.entries()]
              .filter(([threadId]) => threadId.startsWith("lane-cold"))
              .map(([, value]) => value)
          const waits = ofColdLanes(this.#probe.stepDelivery)
          return json({
            lanes: cold + 1,
            coldSettled: waits.length,
            maxColdWait: Math.max(...waits),
            maxColdWaitMs: Math.max(...ofColdLanes(this.#probe.stepAt)) - releasedAt,
            hotLastDelivery: this.#probe.stepDelivery.get("lane-hot") ?? -1,
            deliveries: this.#probe.deliveries,
          })
        }
        case "/hold": {
          // `count` Submissions in one lane whose first holds its Claim until workerd restarts.
          const count = body["count"] ?? 1
          const probe = this.#raw.id.toString()
          holding.add(probe)
          for (let n = 0; n < count; n++)
            await this.#submitOne("held", holdingAgent.id, `held-${n}`, { probe, n })
          return json({ submitted: count })
        }
        case "/held":
          // Since when the held step runs in this isolate (null before it ran): the first
          // reading is before the restart, the second after it.
          return json({ startedAt: heldStepRuns.get(this.#raw.id.toString()) ?? null })
        case "/idle": {
          await this.#quiescent()
          const alarm = await this.#raw.storage.getAlarm()
          const before = this.#probe.deliveries
          await sleep(body["ms"] ?? 2_000)
          return json({ alarm, deliveries: this.#probe.deliveries - before })
        }
        default:
          return json({ error: "no such route" }, 404)
      }
    }
  }

/** The library's Object at beta.96's one head per event, `alarmBackoffBase` 1 ms (its fastest cadence). */
export class ThreadBenchObject extends benchThreadObject({
  ...BETA96_PACING,
  alarmBackoffBase: 1,
  limits: { maxQueueDepthPerLane: 20_000 },
}) {}

/** The library's Object at its default configuration (several heads per event). */
export class ThreadBenchDefaultObject extends benchThreadObject({
  limits: { maxQueueDepthPerLane: 20_000 },
}) {}

/** The library's Object at beta.96's pacing: one head per event, every timing at its default. */
export class ThreadBenchMultiObject extends benchThreadObject({
  ...BETA96_PACING,
  limits: { maxQueueDepthPerLane: 20_000 },
}) {}

/**
 * `ThreadBenchMultiObject` with a short retention: settled Submissions are removed two seconds
 * after they settle, in passes at most one second apart for it.
 */
export class ThreadBenchRetentionObject extends benchThreadObject({
  maxHeadsPerEvent: 1_000,
  limits: { maxQueueDepthPerLane: 20_000 },
  retention: { settledForMillis: 2_000, windowMillis: 1_000 },
}) {}
