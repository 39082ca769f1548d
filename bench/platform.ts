/**
 * `npx tsx bench/platform.ts [--rounds 5]`: what workerd here charges, in CPU time, for the
 * events and storage calls a Thread is made of, with no library code (bench/worker/
 * platformCases.ts): a request from outside into an Object, an alarm event that arms the next,
 * a call from one Object to another, a point read, a one-row write, a one-write
 * `transactionSync`, a KV read and write, and an `exec` whose cursor is never read to its end.
 * Each is the workerd process's CPU (user and system, from `/proc`, 10 ms ticks) over a batch,
 * divided by the batch; storage persists to a folder as in the dev server. Rounds run the cases
 * one after another, so each case's spread is over rounds. It gives the floor under a measured
 * cost: a refund in bench/refundDrain.ts cannot cost less than the events and statements it
 * makes. Linux only.
 */
import { Effect } from "effect"
import { parseArgs } from "node:util"
import { startLocalWorker } from "../test/node/support/localWorker.ts"
import { tempDir } from "../test/node/support/tempDir.ts"
import { cpuMillis, cpuSpent, workerdProcesses } from "./procCpu.ts"

const rounds = Number(parseArgs({ options: { rounds: { type: "string", default: "5" } } }).values.rounds)

/** Each case and its batch: how many units one measurement divides its CPU by. */
const cases = [
  { name: "request", unit: "request from outside, answered at once", batch: 1_000 },
  { name: "alarm", unit: "alarm event that arms the next", batch: 1_000 },
  { name: "rpc", unit: "call to another Object", batch: 5_000 },
  { name: "read", unit: "point SELECT of a 5-column row", batch: 20_000 },
  { name: "write", unit: "one-row UPDATE", batch: 20_000 },
  { name: "transaction", unit: "transactionSync around one UPDATE", batch: 20_000 },
  { name: "kvGet", unit: "KV get", batch: 20_000 },
  { name: "kvPut", unit: "KV put", batch: 20_000 },
  { name: "unconsumed", unit: "point SELECT whose cursor is not read", batch: 5_000 },
] as const

const measure = Effect.gen(function* () {
  const worker = yield* startLocalWorker({
    entry: new URL("./worker/platformCases.ts", import.meta.url),
    durableObjects: { PLATFORM: "PlatformObject" },
    persistDir: yield* tempDir("platform"),
  })
  const ask = (name: string, n: number) =>
    Effect.flatMap(worker.fetch(`/?case=${name}&n=${n}`), (response) =>
      Effect.promise(async () => Number(await response.text())),
    )
  const pids = workerdProcesses()
  // CPU microseconds per unit of one batch of a case.
  const batch = (name: string, n: number) =>
    Effect.gen(function* () {
      const before = cpuMillis(pids)
      if (name === "request") for (let i = 0; i < n; i++) yield* ask("request", 0)
      else yield* ask(name, n)
      // The alarm events run after the answer; the few requests asking for them are counted in.
      if (name === "alarm") while ((yield* ask("left", 0)) > 0) yield* Effect.sleep(100)
      const spent = cpuSpent(before, cpuMillis(pids))
      return ((spent.user + spent.system) * 1_000) / n
    })
  for (const { name, batch: n } of cases) yield* batch(name, Math.ceil(n / 10))
  const perUnit = new Map<string, Array<number>>()
  for (let round = 0; round < rounds; round++)
    for (const { name, batch: n } of cases)
      perUnit.set(name, [...(perUnit.get(name) ?? []), yield* batch(name, n)])
  console.log(`CPU µs per unit, median (min–max) of ${rounds} rounds:`)
  for (const { name, unit } of cases) {
    const values = [...(perUnit.get(name) ?? [])].sort((a, b) => a - b)
    const median = values[Math.floor(values.length / 2)] ?? Number.NaN
    const range = `${(values[0] ?? Number.NaN).toFixed(1)}–${(values.at(-1) ?? Number.NaN).toFixed(1)}`
    console.log(`${name.padEnd(12)} ${median.toFixed(1).padStart(7)} (${range})  ${unit}`)
  }
})

Effect.runPromise(Effect.scoped(measure)).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
