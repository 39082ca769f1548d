/**
 * `tsx bench/breakdown.ts --count 1000 --lanes 1`: drains one burst in the library's Object
 * (alarmBackoffBase 1 ms) and prints SQL rows per settled Submission by statement text, to see
 * which statements the per-item figures of bench/run.ts come from. `SUBJECT=multi` measures the
 * `maxHeadsPerEvent` 1,000 subject instead.
 */
import { Effect, Schema } from "effect"
import { parseArgs } from "node:util"
import { startLocalWorker } from "../test/node/support/localWorker.ts"
import { tempDir } from "../test/node/support/tempDir.ts"
import { type ObjectClient, threadBurstDriver } from "./drivers.ts"
import { subjects } from "./subjects.ts"

const options = parseArgs({
  options: {
    count: { type: "string", default: "1000" },
    lanes: { type: "string", default: "1" },
    width: { type: "string", default: "110" },
  },
}).values

const Breakdown = Schema.Struct({
  items: Schema.Number,
  statements: Schema.Array(
    Schema.Struct({
      statement: Schema.String,
      calls: Schema.Number,
      rowsRead: Schema.Number,
      rowsWritten: Schema.Number,
    }),
  ),
})

const main = Effect.gen(function* () {
  const count = Number(options.count)
  const lanes = Number(options.lanes)
  const width = Number(options.width)
  const subject = process.env.SUBJECT === "multi" ? subjects.threadMulti : subjects.thread
  const worker = yield* startLocalWorker({
    entry: new URL("./worker/index.ts", import.meta.url),
    durableObjects: { [subject.binding]: subject.className },
    persistDir: yield* tempDir("bench-breakdown"),
  })
  const base = `/${subject.binding}/breakdown-${count}-${lanes}`
  const object: ObjectClient = {
    json: (schema, route, init) => worker.json(schema, `${base}/${route}`, init),
    sibling: () => object,
    other: () => object,
    restart: worker.restart,
  }
  const figures = yield* threadBurstDriver(count, lanes, 600)(object)
  const { items, statements } = yield* worker.json(Breakdown, `${base}/breakdown`, { method: "POST" })
  const per = (value: number) => (value / items).toFixed(2).padStart(8)
  console.log(`${items} items over ${lanes} lane(s); rows read/item ${figures["sqlRowsReadPerItem"]}`)
  console.log(`${"calls/item".padStart(10)} ${"read/item".padStart(9)} ${"wrt/item".padStart(8)}  statement`)
  for (const each of statements) {
    console.log(
      `${per(each.calls).padStart(10)} ${per(each.rowsRead).padStart(9)} ${per(each.rowsWritten)}  ${each.statement.slice(0, width)}`,
    )
  }
  const total = statements.reduce((sum, each) => sum + each.rowsRead, 0)
  console.log(`total rows read/item ${(total / items).toFixed(2)}`)
})

Effect.runPromise(Effect.scoped(main)).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
