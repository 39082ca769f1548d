/**
 * `npx tsx bench/timers.ts --runs 3 --count 200 --sleepers 100000`: the storage cost of durable
 * timers in the library's Object (bench/worker/timerSubject.ts, alarmBackoffBase 1 ms, one head
 * per event, default timer settings), measured in workerd through Miniflare with real alarms.
 *
 * - Per Submission: `count` Submissions of one agent queued in one lane and drained, as the
 *   bench's per-item figure; billed rows written per item (SQL rows written, index entries
 *   included, plus KV keys put or deleted), for one step, a sleep then the step, two sleeps then
 *   the step, and the step failing once then succeeding after a durable backoff. The marginal
 *   rows of a sleep or a retry are the difference to the one-step agent; a sleep's own rows are
 *   what its park statement wrote.
 * - With `sleepers` sleepers parked: the rows a caught-up pass reads, and, for the passes that
 *   serve the first clusters of due times (10 timers within 5 ms, 20 clusters 300 ms apart), the
 *   rows read per timer served and the alarm deliveries per cluster.
 *
 * Each figure is the median and the range over `runs`, every run on fresh Objects. The tables
 * are printed and written to bench/timers.md, which bench/results.md links to.
 */
import { Effect, Schema } from "effect"
import { writeFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { postJson, startLocalWorker } from "../test/node/support/localWorker.ts"
import { tempDir } from "../test/node/support/tempDir.ts"
import { billedRowsWritten } from "./drivers.ts"
import { MeterCounts } from "./worker/report.ts"

const options = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    count: { type: "string", default: "200" },
    sleepers: { type: "string", default: "100000" },
    lead: { type: "string", default: "20000" },
  },
}).values

const Statement = Schema.Struct({
  statement: Schema.String,
  calls: Schema.Number,
  rowsRead: Schema.Number,
  rowsWritten: Schema.Number,
})
const Cost = Schema.Struct({ items: Schema.Number, counts: MeterCounts, statements: Schema.Array(Statement) })
const Sleepers = Schema.Struct({
  sleepers: Schema.Number,
  setupMs: Schema.Number,
  firstDue: Schema.Number,
  alarmAfterSetup: Schema.NullOr(Schema.Number),
  alarmAfterCaughtUp: Schema.NullOr(Schema.Number),
  caughtUp: MeterCounts,
  served: Schema.Number,
  clusters: Schema.Number,
  deliveries: Schema.Number,
  servedCounts: MeterCounts,
  waiting: Schema.Number,
})

const AGENTS = ["timer-step", "timer-sleep", "timer-two-sleeps", "timer-retry"] as const

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN
}
const show = (values: ReadonlyArray<number>, digits = 2) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`

/** Rows the timed park statements wrote (a first park from a lane Claim, a further one in place). */
const parkRows = (statements: ReadonlyArray<typeof Statement.Type>) =>
  statements
    .filter(
      (each) => each.statement.includes("SET state = 'waiting'") && each.statement.includes("due_at = ?"),
    )
    .reduce((sum, each) => sum + each.rowsWritten, 0)

const main = Effect.gen(function* () {
  const runs = Number(options.runs)
  const count = Number(options.count)
  const worker = yield* startLocalWorker({
    entry: new URL("./worker/index.ts", import.meta.url),
    durableObjects: { TIMERS: "TimerBenchObject" },
    persistDir: yield* tempDir("bench-timers"),
  })
  const billed: Record<string, Array<number>> = {}
  const read: Record<string, Array<number>> = {}
  const deliveries: Record<string, Array<number>> = {}
  const parks: Record<string, Array<number>> = {}
  for (let run = 0; run < runs; run++) {
    for (const agent of AGENTS) {
      const cost = yield* worker.json(
        Cost,
        `/TIMERS/${agent}-${run}-${crypto.randomUUID()}/cost`,
        postJson({ agent, count, millis: 5 }),
      )
      ;(billed[agent] ??= []).push(billedRowsWritten(cost.counts) / cost.items)
      ;(read[agent] ??= []).push(cost.counts.sqlRowsRead / cost.items)
      ;(deliveries[agent] ??= []).push(cost.counts.alarmDeliveries / cost.items)
      ;(parks[agent] ??= []).push(parkRows(cost.statements) / cost.items)
    }
  }
  const marginal = (agent: string) =>
    (billed[agent] ?? []).map((value, index) => value - (billed["timer-step"]?.[index] ?? Number.NaN))
  const further = (billed["timer-two-sleeps"] ?? []).map(
    (value, index) => value - (billed["timer-sleep"]?.[index] ?? Number.NaN),
  )

  const caughtRead: Array<number> = []
  const caughtStatements: Array<number> = []
  const caughtWritten: Array<number> = []
  const perTimer: Array<number> = []
  const perCluster: Array<number> = []
  const setup: Array<number> = []
  for (let run = 0; run < runs; run++) {
    const report = yield* worker.json(
      Sleepers,
      `/TIMERS/sleepers-${run}-${crypto.randomUUID()}/sleepers`,
      postJson({ count: Number(options.sleepers), leadMs: Number(options.lead) }),
    )
    if (report.alarmAfterSetup === null || report.alarmAfterSetup < report.firstDue)
      throw new Error(
        `run ${run}: the alarm ${report.alarmAfterSetup} is before the first due time ${report.firstDue}`,
      )
    caughtRead.push(report.caughtUp.sqlRowsRead)
    caughtStatements.push(report.caughtUp.sqlStatements)
    caughtWritten.push(billedRowsWritten(report.caughtUp))
    perTimer.push(report.servedCounts.sqlRowsRead / report.served)
    perCluster.push(report.deliveries / report.clusters)
    setup.push(report.setupMs)
  }

  const rows = (agent: string, label: string) =>
    `| ${label} | ${show(billed[agent] ?? [])} | ${show(marginal(agent))} | ${show(parks[agent] ?? [])} | ${show(deliveries[agent] ?? [])} | ${show(read[agent] ?? [], 1)} |`
  const text = `# Durable timers

Written by \`npx tsx bench/timers.ts --runs ${runs} --count ${count} --sleepers ${options.sleepers} --lead ${options.lead}\`
(workerd through Miniflare, real alarms; the library's Object at \`alarmBackoffBase\` 1 ms, one head per
event, \`maxTimersPerEvent\` 16, \`timerCoalesceMillis\` 10). Median (min–max) over ${runs} runs, each on fresh
Objects; billed rows written are SQL rows written (index entries included) plus KV keys put or deleted,
counted by bench/worker/meter.ts.

Per Submission: ${count} Submissions of one agent queued in one lane, then drained (the shape of the
per-item figure of section 2 in [results.md](results.md)). Marginal rows are the difference to the one-step agent; a sleep's own rows are
what its park statement wrote (row, parked entry, due entry for a first park; row and due entry for a
park claimed in place). Rows read grow with the lane's backlog: a resumed Submission reads its Thread's
history from its first record, the queued Submissions' acceptances included.

| agent | billed rows written / item | marginal | its timed parks' rows / item | alarm deliveries / item | rows read / item |
| --- | --- | --- | --- | --- | --- |
${rows("timer-step", "one step")}
${rows("timer-sleep", "a 5 ms sleep, then the step")}
${rows("timer-two-sleeps", "two 5 ms sleeps, then the step")}
${rows("timer-retry", "the step failing once, retried after 5 ms")}

A further sleep's marginal rows (two sleeps minus one): ${show(further)}.

With ${Number(options.sleepers).toLocaleString("en-US")} sleepers parked (one parked by the library, the others copies of
it through raw SQL, one per lane, in ${show(setup, 0)} ms), of which 20 clusters of 10 are due within 5 ms each,
300 ms apart, and the rest a day later:

| figure | value |
| --- | --- |
| a caught-up pass (a delivery with nothing due): SQL statements | ${show(caughtStatements, 0)} |
| a caught-up pass: rows read | ${show(caughtRead, 0)} |
| a caught-up pass: billed rows written | ${show(caughtWritten, 0)} |
| rows read per due timer served (the passes serving the clusters, Attempts included) | ${show(perTimer)} |
| alarm deliveries per cluster of 10 timers due within 5 ms | ${show(perCluster)} |
`
  console.log(text)
  yield* Effect.promise(() => writeFile(fileURLToPath(new URL("./timers.md", import.meta.url)), text))
})

Effect.runPromise(Effect.scoped(main)).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
