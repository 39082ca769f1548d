/**
 * Drivers: how the bench runs one measurement against one fresh Object of a subject and turns
 * its report into figures. Wall time is taken in Node around the requests, which adds a few
 * milliseconds of loopback latency to runs that last seconds.
 */
import { Effect, Schema } from "effect"
import { performance } from "node:perf_hooks"
import { postJson } from "../test/node/support/localWorker.ts"
import type { LocalWorker } from "../test/node/support/localWorker.ts"
import {
  BurstReport,
  FairnessReport,
  FaninReport,
  IdleReport,
  LoopReport,
  type MeterCounts,
  ParkReport,
  PassReport,
  ProgressReport,
  StopReport,
  ThreadBurstReport,
} from "./worker/report.ts"

/** Named figures of one measurement; see `figureCatalog` for their meaning. */
export type Figures = Readonly<Record<string, number>>

/** Requests to one Object of the bench Worker, addressed as `/<binding>/<name>/<route>`. */
export interface ObjectClient {
  readonly json: <A>(
    schema: Schema.Decoder<A>,
    route: string,
    init?: Parameters<LocalWorker["fetch"]>[1],
  ) => Effect.Effect<A>
  /** Another Object of the same class, named after this one. */
  readonly sibling: (suffix: string) => ObjectClient
  /** An Object of another subject's class (by its binding), named after this one. */
  readonly other: (binding: string, suffix: string) => ObjectClient
  /** Stops the whole local workerd (every Object dies mid-flight) and starts it again over its storage. */
  readonly restart: Effect.Effect<void>
}

/** One measurement on a fresh Object. */
export type Driver = (object: ObjectClient) => Effect.Effect<Figures>

const Submitted = Schema.Struct({ submitted: Schema.Number })
const Started = Schema.Struct({ started: Schema.Number })
const post = { method: "POST" }

/**
 * Rows Cloudflare bills as written: SQL rows (index entries included), KV keys put or deleted,
 * and every `setAlarm()` ("Each `setAlarm()` is billed as a single row written", the pricing
 * page's footnote for SQLite-backed Objects).
 */
export const billedRowsWritten = (counts: MeterCounts): number =>
  counts.sqlRowsWritten + counts.kvPuts + counts.kvDeletes + counts.alarmSets

/** Per-item figures of a burst from the meter's counts. */
const perItem = (counts: MeterCounts, items: number) => {
  const per = (value: number) => (items === 0 ? Number.NaN : value / items)
  return {
    alarmDeliveriesPerItem: per(counts.alarmDeliveries),
    alarmCallsPerItem: per(counts.alarmGets + counts.alarmSets + counts.alarmDeletes),
    sqlStatementsPerItem: per(counts.sqlStatements),
    sqlRowsReadPerItem: per(counts.sqlRowsRead),
    sqlRowsWrittenPerItem: per(counts.sqlRowsWritten),
    totalChangesPerItem: per(counts.totalChanges),
    kvKeysReadPerItem: per(counts.kvGets),
    kvKeysWrittenPerItem: per(counts.kvPuts + counts.kvDeletes),
    alarmSetsPerItem: per(counts.alarmSets),
    billedRowsWrittenPerItem: per(billedRowsWritten(counts)),
  }
}

/** Submits `count` one-step jobs in one request, waits for all, and reports per-item work. */
export const burstDriver =
  (count: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      const started = performance.now()
      yield* object.json(Submitted, "burst", postJson({ count }))
      const { items, counts } = yield* object.json(BurstReport, "wait", post)
      const seconds = (performance.now() - started) / 1000
      return { ...perItem(counts, items), itemsPerSecond: items / seconds }
    })

/**
 * Queues `count` no-op Submissions over `lanes` lanes in the library's Object, lets it drain
 * and reports per-item work, totals and time. A run still draining after `capSeconds` is
 * stopped: its figures cover the items settled by then and `completed` is 0.
 */
export const threadBurstDriver =
  (count: number, lanes: number, capSeconds: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      const started = performance.now()
      yield* object.json(Submitted, "burst", postJson({ count, lanes }))
      const submitSeconds = (performance.now() - started) / 1000
      const deadline = started + capSeconds * 1000
      let settledAt: number
      while (true) {
        const { done } = yield* object.json(ProgressReport, "progress", postJson({ waitMs: 1000 }))
        settledAt = performance.now()
        if (done >= count) break
        if (performance.now() > deadline) {
          const stopped = yield* object.json(StopReport, "stop", post)
          const seconds = (performance.now() - started) / 1000
          return {
            ...perItem(stopped.counts, stopped.done),
            itemsPerSecond: stopped.done / seconds,
            settledAtCap: stopped.done,
            secondsAtCap: seconds,
            completed: 0,
          }
        }
      }
      const report = yield* object.json(ThreadBurstReport, "wait", post)
      // Until the last settlement, as for the raw queue; what the passes owe after it (the
      // acknowledgement, the alarm's clear) is in the counts, not in the time.
      const seconds = (settledAt - started) / 1000
      if (report.settledCounter !== count || report.nonterminal !== 0) {
        return yield* Effect.die(
          new Error(
            `drain incomplete: ${report.settledCounter} settlements counted, ${report.nonterminal} left`,
          ),
        )
      }
      const submitKeys = report.submitCounts.kvPuts + report.submitCounts.kvDeletes
      return {
        ...perItem(report.counts, report.items),
        // What the passes wrote of the maintenance record (the submits' prearms excluded).
        passKvKeysWrittenPerItem:
          (report.counts.kvPuts + report.counts.kvDeletes - submitKeys) / report.items,
        itemsPerSecond: report.items / seconds,
        drainItemsPerSecond: report.drainMs > 0 ? report.items / (report.drainMs / 1000) : Number.NaN,
        seconds,
        submitSeconds,
        totalRowsRead: report.counts.sqlRowsRead,
        totalRowsWritten: report.counts.sqlRowsWritten,
        totalBilledRowsWritten: billedRowsWritten(report.counts),
        totalChanges: report.counts.totalChanges,
        completed: 1,
      }
    })

const passFigures = (prefix: string, pass: PassReport): Figures => ({
  [`${prefix}RowsRead`]: pass.counts.sqlRowsRead,
  [`${prefix}RowsWritten`]: pass.counts.sqlRowsWritten,
  [`${prefix}Statements`]: pass.counts.sqlStatements,
  [`${prefix}Changes`]: pass.counts.totalChanges,
  [`${prefix}KvKeys`]: pass.counts.kvGets + pass.counts.kvPuts + pass.counts.kvDeletes,
  [`${prefix}BilledWritten`]: billedRowsWritten(pass.counts),
  [`${prefix}AlarmCalls`]: pass.counts.alarmGets + pass.counts.alarmSets + pass.counts.alarmDeletes,
  [`${prefix}WallMs`]: pass.wallMs,
})

/**
 * A forced alarm with nothing owed, with `parked` Submissions in approval waits (0: an Object
 * that drained one Submission). With parked waits, also the owed pass that classified them.
 */
export const caughtUpDriver =
  (parked: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      let classify: Figures = {}
      if (parked > 0) {
        const park = yield* object.json(ParkReport, "park", postJson({ count: parked }))
        if (park.parked !== parked || park.classify.nonterminal !== parked || park.classify.alarm !== null) {
          return yield* Effect.die(new Error(`parking failed: ${JSON.stringify(park)}`))
        }
        classify = passFigures("classify", park.classify)
      } else {
        yield* object.json(Submitted, "burst", postJson({ count: 1, lanes: 1 }))
        yield* object.json(ThreadBurstReport, "wait", post)
      }
      const pass = yield* object.json(PassReport, "pass", postJson({ dirty: 0 }))
      if (!pass.caughtUp || pass.alarm !== null) {
        return yield* Effect.die(
          new Error(`the forced pass was not a quiet caught-up pass: ${JSON.stringify(pass)}`),
        )
      }
      return { ...passFigures("caughtUp", pass), ...classify }
    })

/** One lane with `hot` queued and `cold` lanes with one each: the most deliveries a cold lane waits. */
export const fairnessDriver =
  (hot: number, cold: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      const report = yield* object.json(FairnessReport, "fairness", postJson({ hot, cold }))
      if (report.coldSettled !== cold) return yield* Effect.die(new Error("a cold lane never settled"))
      return {
        lanes: report.lanes,
        maxColdWait: report.maxColdWait,
        maxColdWaitMs: report.maxColdWaitMs,
        hotLastDelivery: report.hotLastDelivery,
        deliveries: report.deliveries,
      }
    })

/**
 * Idle cost: once quiescent after draining (`parked` 0) or with `parked` approval waits, the
 * alarm slot and the deliveries seen during a real wait of `waitMs`. An empty slot means no
 * delivery until the next mutation, so the hourly figure is 0 exactly; otherwise the deliveries
 * seen are scaled to an hour.
 */
export const idleDriver =
  (parked: number, waitMs: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      if (parked > 0) {
        yield* object.json(ParkReport, "park", postJson({ count: parked }))
      } else {
        yield* object.json(Submitted, "burst", postJson({ count: 10, lanes: 2 }))
        yield* object.json(ThreadBurstReport, "wait", post)
      }
      const idle = yield* object.json(IdleReport, "idle", postJson({ ms: waitMs }))
      return {
        idleAlarmScheduled: idle.alarm === null ? 0 : 1,
        idleDeliveriesInWindow: idle.deliveries,
        idleDeliveriesPerHour:
          idle.alarm === null && idle.deliveries === 0 ? 0 : (idle.deliveries * 3_600_000) / waitMs,
      }
    })

const Held = Schema.Struct({ startedAt: Schema.NullOr(Schema.Number) })

/**
 * Recovery after a crash: `objects` Objects (one Thread each, as a Thread per Object is
 * hosted) each hold a Claim in a step that does not return, with `queued` more Submissions
 * behind it; then the whole workerd is stopped and started again over the same storage.
 * Measured: the time from the restart to the first pass that serves each such lane again (its
 * step runs in the new workerd), as the slowest and the median Object see it, capped at
 * `capSeconds`. The Objects are asked nothing before they recover (only read).
 */
export const recoveryDriver =
  (objects: number, queued: number, capSeconds: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      const lanes = Array.from({ length: objects }, (_, index) => object.sibling(`lane-${index}`))
      for (const lane of lanes) yield* lane.json(Submitted, "hold", postJson({ count: queued + 1 }))
      const startedBefore = yield* Effect.forEach(lanes, (lane) =>
        Effect.gen(function* () {
          while (true) {
            const { startedAt } = yield* lane.json(Held, "held", post)
            if (startedAt !== null) return startedAt
            yield* Effect.sleep(10)
          }
        }),
      )
      yield* object.restart
      const restartedAt = Date.now()
      const deadline = restartedAt + capSeconds * 1000
      const recovered = yield* Effect.forEach(
        lanes,
        (lane) =>
          Effect.gen(function* () {
            while (Date.now() < deadline) {
              const { startedAt } = yield* lane.json(Held, "held", post)
              if (startedAt !== null) return startedAt - restartedAt
              yield* Effect.sleep(10)
            }
            return Number.NaN
          }),
        { concurrency: "unbounded" },
      )
      const done = recovered.filter(Number.isFinite).sort((a, b) => a - b)
      return {
        recoveryLanes: objects,
        recoveryHeldBefore: startedBefore.length,
        recoveryRecovered: done.length,
        recoveryMedianMs: done[Math.floor(done.length / 2)] ?? Number.NaN,
        recoveryMaxMs: done.length === objects ? (done[done.length - 1] ?? Number.NaN) : Number.NaN,
      }
    })

/**
 * Fan-in: `threads` Threads of one Object each submit one Submission whose agent asks for an
 * approval; the time until every approval request exists, the deliveries that took, and the
 * deliveries once all wait (during `idleMs` more).
 */
export const faninDriver =
  (threads: number, idleMs: number, capSeconds: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      const report = yield* object.json(
        FaninReport,
        "fanin",
        postJson({ count: threads, idleMs, capMs: capSeconds * 1000 }),
      )
      if (report.requested !== threads)
        return yield* Effect.die(new Error(`only ${report.requested} of ${threads} approvals requested`))
      return {
        faninSeconds: report.seconds,
        faninSubmitSeconds: report.submitSeconds,
        faninDeliveries: report.deliveries,
        faninDeliveriesAfter: report.deliveriesAfter,
        faninAlarmScheduled: report.alarm === null ? 0 : 1,
      }
    })

/** Runs a self-re-arming alarm loop for `durationMs` and reports its delivery rate. */
export const alarmLoopDriver =
  (durationMs: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      const started = performance.now()
      yield* object.json(Started, "loop", postJson({ durationMs }))
      const { deliveries, elapsedMs } = yield* object.json(LoopReport, "wait", post)
      const seconds = (performance.now() - started) / 1000
      return {
        loopDeliveriesPerSecond: deliveries / seconds,
        loopDeliveriesPerWorkerdSecond: elapsedMs > 0 ? deliveries / (elapsedMs / 1000) : 0,
      }
    })

/** Every figure a driver may report, in table order, with its label and decimals. */
export const figureCatalog: ReadonlyArray<{
  readonly key: string
  readonly label: string
  readonly digits: number
}> = [
  { key: "alarmDeliveriesPerItem", label: "alarms/item", digits: 2 },
  { key: "alarmCallsPerItem", label: "alarm API calls/item", digits: 2 },
  { key: "sqlStatementsPerItem", label: "SQL stmts/item", digits: 1 },
  { key: "sqlRowsReadPerItem", label: "rows read/item", digits: 1 },
  { key: "sqlRowsWrittenPerItem", label: "rows written/item", digits: 1 },
  { key: "totalChangesPerItem", label: "row changes/item", digits: 2 },
  { key: "kvKeysReadPerItem", label: "KV keys read/item", digits: 2 },
  { key: "kvKeysWrittenPerItem", label: "KV keys written/item", digits: 2 },
  { key: "alarmSetsPerItem", label: "setAlarm calls/item", digits: 2 },
  { key: "billedRowsWrittenPerItem", label: "billed rows written/item", digits: 2 },
  { key: "passKvKeysWrittenPerItem", label: "record writes by passes/item", digits: 2 },
  { key: "itemsPerSecond", label: "items/s", digits: 0 },
  { key: "drainItemsPerSecond", label: "items/s (drain)", digits: 0 },
  { key: "retentionItems", label: "Submissions", digits: 0 },
  { key: "retentionRemoved", label: "removed", digits: 0 },
  { key: "retentionMbHalf", label: "MB at half", digits: 1 },
  { key: "retentionMbEnd", label: "MB at end", digits: 1 },
  { key: "retentionMbMax", label: "MB max", digits: 1 },
  { key: "retentionMbEndKept", label: "MB at end, kept forever", digits: 1 },
  { key: "retentionWrittenPerRemoved", label: "billed rows written/removed", digits: 2 },
  { key: "retentionReadPerRemoved", label: "rows read/removed", digits: 1 },
  { key: "retentionRateOn", label: "items/s pruning", digits: 0 },
  { key: "retentionRateOnMin", label: "min", digits: 0 },
  { key: "retentionRateOnMax", label: "max", digits: 0 },
  { key: "retentionRateOff", label: "items/s keeping", digits: 0 },
  { key: "retentionRateOffMin", label: "min", digits: 0 },
  { key: "retentionRateOffMax", label: "max", digits: 0 },
  { key: "seconds", label: "seconds", digits: 1 },
  { key: "totalRowsRead", label: "rows read", digits: 0 },
  { key: "totalRowsWritten", label: "rows written", digits: 0 },
  { key: "totalBilledRowsWritten", label: "billed rows written", digits: 0 },
  { key: "totalChanges", label: "row changes", digits: 0 },
  { key: "completed", label: "completed", digits: 0 },
  { key: "settledAtCap", label: "settled at cap", digits: 0 },
  { key: "secondsAtCap", label: "seconds at cap", digits: 0 },
  { key: "caughtUpRowsRead", label: "rows read", digits: 0 },
  { key: "caughtUpRowsWritten", label: "rows written", digits: 0 },
  { key: "caughtUpStatements", label: "SQL stmts", digits: 0 },
  { key: "caughtUpChanges", label: "row changes", digits: 0 },
  { key: "caughtUpKvKeys", label: "KV keys", digits: 0 },
  { key: "caughtUpBilledWritten", label: "billed rows written", digits: 0 },
  { key: "caughtUpAlarmCalls", label: "alarm calls", digits: 0 },
  { key: "caughtUpWallMs", label: "wall ms", digits: 1 },
  { key: "classifyRowsRead", label: "owed pass: rows read", digits: 0 },
  { key: "classifyRowsWritten", label: "owed pass: rows written", digits: 0 },
  { key: "classifyBilledWritten", label: "owed pass: billed rows written", digits: 0 },
  { key: "classifyWallMs", label: "owed pass: wall ms", digits: 0 },
  { key: "lanes", label: "lanes", digits: 0 },
  { key: "maxColdWait", label: "max cold-lane wait (deliveries)", digits: 0 },
  { key: "maxColdWaitMs", label: "max cold-lane wait after the submits (ms)", digits: 0 },
  { key: "hotLastDelivery", label: "hot lane done at delivery", digits: 0 },
  { key: "idleAlarmScheduled", label: "alarm scheduled", digits: 0 },
  { key: "idleDeliveriesInWindow", label: "deliveries in window", digits: 0 },
  { key: "idleDeliveriesPerHour", label: "deliveries/hour", digits: 0 },
  { key: "recoveryLanes", label: "lanes holding a Claim", digits: 0 },
  { key: "recoveryRecovered", label: "served again", digits: 0 },
  { key: "recoveryMedianMs", label: "restart to serving, median ms", digits: 0 },
  { key: "recoveryMaxMs", label: "restart to serving, slowest ms", digits: 0 },
  { key: "faninSeconds", label: "seconds to every approval request", digits: 1 },
  { key: "faninSubmitSeconds", label: "of which submitting", digits: 1 },
  { key: "faninDeliveries", label: "deliveries", digits: 0 },
  { key: "faninDeliveriesAfter", label: "deliveries once all wait", digits: 0 },
  { key: "faninAlarmScheduled", label: "alarm scheduled after", digits: 0 },
  { key: "loopDeliveriesPerSecond", label: "deliveries/s", digits: 0 },
  { key: "latencyP50Ms", label: "p50", digits: 1 },
  { key: "latencyP90Ms", label: "p90", digits: 1 },
  { key: "latencyP99Ms", label: "p99", digits: 1 },
  { key: "latencyMaxMs", label: "max", digits: 1 },
  { key: "latencyAlarmsPerSample", label: "alarms/sample", digits: 2 },
  { key: "latencyReadyMs", label: "median: constructor to request", digits: 1 },
  { key: "latencySubmitMs", label: "median: to submitted", digits: 1 },
  { key: "latencyAlarmMs", label: "median: to alarm handler", digits: 1 },
  { key: "latencyAnswerMs", label: "median: to answer", digits: 1 },
  { key: "latencyOutsideMs", label: "median: outside the Object", digits: 1 },
  { key: "loopDeliveriesPerWorkerdSecond", label: "deliveries/s (workerd clock)", digits: 0 },
]
