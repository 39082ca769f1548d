/**
 * Drivers: how the bench runs one measurement against one fresh Object of a subject and turns
 * its report into figures. Wall time is taken in Node around the requests, which adds a few
 * milliseconds of loopback latency to runs that last seconds.
 */
import { Effect, Schema } from "effect"
import { performance } from "node:perf_hooks"
import { postJson } from "../test/node/support/localWorker.ts"
import type { LocalWorker } from "../test/node/support/localWorker.ts"
import { BurstReport, LoopReport } from "./worker/report.ts"

/** Named figures of one measurement; see `figureCatalog` for their meaning. */
export type Figures = Readonly<Record<string, number>>

/** Requests to one Object of the bench Worker, addressed as `/<binding>/<name>/<route>`. */
export interface ObjectClient {
  readonly json: <A>(
    schema: Schema.Decoder<A>,
    route: string,
    init?: Parameters<LocalWorker["fetch"]>[1],
  ) => Effect.Effect<A>
}

/** One measurement on a fresh Object. */
export type Driver = (object: ObjectClient) => Effect.Effect<Figures>

const Submitted = Schema.Struct({ submitted: Schema.Number })
const Started = Schema.Struct({ started: Schema.Number })
const post = { method: "POST" }

/** Submits `count` one-step jobs in one request, waits for all, and reports per-item work. */
export const burstDriver =
  (count: number): Driver =>
  (object) =>
    Effect.gen(function* () {
      const started = performance.now()
      yield* object.json(Submitted, "burst", postJson({ count }))
      const { items, counts } = yield* object.json(BurstReport, "wait", post)
      const seconds = (performance.now() - started) / 1000
      const perItem = (value: number) => value / items
      return {
        alarmDeliveriesPerItem: perItem(counts.alarmDeliveries),
        alarmCallsPerItem: perItem(counts.alarmGets + counts.alarmSets + counts.alarmDeletes),
        sqlStatementsPerItem: perItem(counts.sqlStatements),
        sqlRowsReadPerItem: perItem(counts.sqlRowsRead),
        sqlRowsWrittenPerItem: perItem(counts.sqlRowsWritten),
        totalChangesPerItem: perItem(counts.totalChanges),
        kvKeysPerItem: perItem(counts.kvGets + counts.kvPuts + counts.kvDeletes),
        itemsPerSecond: items / seconds,
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
  { key: "alarmDeliveriesPerItem", label: "alarm deliveries / item", digits: 2 },
  { key: "alarmCallsPerItem", label: "alarm API calls / item", digits: 2 },
  { key: "sqlStatementsPerItem", label: "SQL statements / item", digits: 2 },
  { key: "sqlRowsReadPerItem", label: "SQL rows read / item", digits: 2 },
  { key: "sqlRowsWrittenPerItem", label: "SQL rows written / item", digits: 2 },
  { key: "totalChangesPerItem", label: "all SQLite row changes / item", digits: 2 },
  { key: "kvKeysPerItem", label: "KV keys read+written / item", digits: 2 },
  { key: "itemsPerSecond", label: "items/s (burst)", digits: 0 },
  { key: "loopDeliveriesPerSecond", label: "alarm loop deliveries/s", digits: 0 },
  { key: "loopDeliveriesPerWorkerdSecond", label: "  same, by workerd's clock", digits: 0 },
]
