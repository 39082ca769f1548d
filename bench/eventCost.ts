/**
 * `npx tsx bench/eventCost.ts [--baseline <checkout>] [--samples 400] [--lanes 40] [--rounds 8]
 * [--steps 6] [--fsyncs]`: what one alarm event costs on its own, apart from the Submissions it
 * serves. The Worker (bench/worker/eventCost.ts) loops inside one `ThreadObject` at the default
 * configuration, so no request per Submission is measured:
 * - `own`: each Submission is submitted, awaited, and its alarm event allowed to end before the
 *   next, so each pays an event of its own (as a caller waiting on one Submission at a time does,
 *   and as a fraud desk Object of the refund desk does for each check);
 * - `shared`: `--lanes` Submissions to as many Threads at a time, so they share their events;
 * - `steps`: as `shared`, with `--steps` journaled steps per Submission instead of one;
 * - `child` and `childShared`: as `own` and `shared`, each Submission starting a one-step child
 *   Submission in another Object and awaiting it (a refund's fraud check);
 * - `raw`, the anchor: a plain Object looping items as `own` does, each an INSERT and an alarm
 *   whose handler UPDATEs it (bench/worker/eventCostRaw.ts), the least an item with an alarm of
 *   its own costs workerd here.
 * The CPU time of workerd (user and system, from `/proc`) per Submission gives an event's fixed
 * cost (`own` − `shared`), a step's (`steps` − `shared`, per added step) and a child round trip's
 * (`child` − `own`, `childShared` − `shared`), and what the library adds to a Submission with an
 * event of its own over the anchor (`own` − `raw`); the Objects' storage calls are counted per
 * Submission by a wrapper on their storage.
 * With `--baseline`, the Worker of another checkout (one that has this bench) runs in a runtime of
 * its own at the same time, each workerd pinned to a core of its own and the cores swapped every
 * round; the ratios are given per round and as the geometric mean of each swapped pair of rounds,
 * which cancels a core's steady bias (bench/pairs.ts). The storage calls are counted afterwards,
 * in a runtime of each checkout that counts them, outside the timed runs. `--fsyncs` there also
 * runs each mode but `steps` under `strace` (Linux) and counts the `fsync`s per Submission: the
 * Objects' databases (one per commit) and workerd's alarm scheduler (one per change of an alarm).
 */
import { Effect, Schema } from "effect"
import { Miniflare } from "miniflare"
import { execFileSync, spawn } from "node:child_process"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { parseArgs } from "node:util"
import { bundleWorker } from "../test/node/support/bundle.ts"
import { formatSpread, spread, swapPairMeans } from "./pairs.ts"
import { cpuMillis, cpuSpent, workerdProcesses } from "./procCpu.ts"
import { EventCostReport } from "./worker/report.ts"

const { values } = parseArgs({
  options: {
    baseline: { type: "string" },
    samples: { type: "string", default: "400" },
    lanes: { type: "string", default: "40" },
    rounds: { type: "string", default: "8" },
    steps: { type: "string", default: "6" },
    fsyncs: { type: "boolean", default: false },
  },
})
const samples = Number(values.samples)
const lanes = Number(values.lanes)
const rounds = Number(values.rounds)
const steps = Number(values.steps)
if (![samples, lanes, rounds].every((value) => Number.isInteger(value) && value > 0) || !(steps > 1))
  throw new Error("--samples, --lanes and --rounds must be positive integers, --steps above 1")

const modes = {
  own: `mode=own&n=${samples}`,
  shared: `mode=shared&n=${samples}&lanes=${lanes}`,
  steps: `mode=shared&n=${samples}&lanes=${lanes}&steps=${steps}`,
  child: `mode=own&n=${samples}&child=1`,
  childShared: `mode=shared&n=${samples}&lanes=${lanes}&child=1`,
  raw: `mode=raw&n=${samples}`,
} as const
type Mode = keyof typeof modes

interface Runtime {
  readonly label: string
  readonly mf: Miniflare
  readonly pids: ReadonlyArray<string>
}

const start = async (label: string, checkout: string, countCalls = false): Promise<Runtime> => {
  const before = new Set(workerdProcesses())
  const mf = new Miniflare({
    modules: true,
    script: await Effect.runPromise(
      bundleWorker(pathToFileURL(resolve(checkout, "bench/worker/eventCost.ts"))),
    ),
    compatibilityDate: "2026-04-20",
    compatibilityFlags: ["nodejs_compat"],
    durableObjects: {
      EVENT_COST: { className: "EventCostObject", useSQLite: true },
      EVENT_COST_RAW: { className: "EventCostRawObject", useSQLite: true },
    },
    bindings: { COUNT_CALLS: countCalls ? "1" : "0" },
  })
  await mf.ready
  const pids = workerdProcesses().filter((pid) => !before.has(pid))
  if (pids.length === 0) throw new Error(`no workerd process of ${label} was found in /proc`)
  return { label, mf, pids }
}

const pin = (runtime: Runtime, core: number) => {
  for (const pid of runtime.pids)
    execFileSync("taskset", ["-a", "-p", "-c", String(core), pid], { stdio: "ignore" })
}

const run = async (runtime: Runtime, mode: Mode) => {
  const before = cpuMillis(runtime.pids)
  const response = await runtime.mf.dispatchFetch(`http://bench/?${modes[mode]}`)
  if (!response.ok) throw new Error(`${runtime.label} ${mode}: ${response.status} ${await response.text()}`)
  const report = Schema.decodeUnknownSync(EventCostReport)(await response.json())
  const spent = cpuSpent(before, cpuMillis(runtime.pids))
  return { cpu: (spent.user + spent.system) / report.submissions, report }
}

/** `fsync`s per Submission of one more run of `mode`, by file: the Object's database or the alarm scheduler's. */
const fsyncsOf = async (runtime: Runtime, mode: Mode) => {
  const trace = spawn("strace", ["-f", "-y", "-e", "trace=fsync,fdatasync", "-p", runtime.pids[0]!], {
    stdio: ["ignore", "ignore", "pipe"],
  })
  let text = ""
  trace.stderr.on("data", (chunk) => (text += chunk))
  const exited = new Promise((resolve) => trace.on("exit", resolve))
  await new Promise((resolve) => setTimeout(resolve, 500))
  const { report } = await run(runtime, mode)
  trace.kill("SIGINT")
  await exited
  let object = 0
  let scheduler = 0
  for (const line of text.split("\n")) {
    const file = /(?:fsync|fdatasync)\(\d+<([^>]*)>/.exec(line)?.[1]
    if (file === undefined) continue
    if (/\/metadata\.sqlite/.test(file)) scheduler += 1
    else if (/\.sqlite/.test(file)) object += 1
  }
  return { object: object / report.submissions, scheduler: scheduler / report.submissions }
}

const main = async () => {
  const checkouts = [
    { label: "this checkout", checkout: new URL("..", import.meta.url).pathname },
    ...(values.baseline === undefined
      ? []
      : [{ label: `baseline ${values.baseline}`, checkout: values.baseline }]),
  ]
  // One after the other: each finds its own workerd as the one that was not there before.
  const runtimes: Array<Runtime> = []
  for (const { label, checkout } of checkouts) runtimes.push(await start(label, checkout))
  try {
    const cpu = new Map<string, Array<number>>()
    for (let round = 0; round <= rounds; round++) {
      if (runtimes.length === 2) runtimes.forEach((runtime, index) => pin(runtime, (index + round) % 2))
      for (const mode of Object.keys(modes) as Array<Mode>) {
        const measured = await Promise.all(runtimes.map((runtime) => run(runtime, mode)))
        // Round 0 warms every runtime up and is not reported.
        if (round === 0) continue
        measured.forEach(({ cpu: perSubmission }, index) => {
          const key = `${runtimes[index]!.label}|${mode}`
          cpu.set(key, [...(cpu.get(key) ?? []), perSubmission])
        })
      }
    }
    const series = (label: string, mode: Mode) => cpu.get(`${label}|${mode}`)!
    const derived = (label: string) => {
      const own = series(label, "own")
      const shared = series(label, "shared")
      const stepped = series(label, "steps")
      const child = series(label, "child")
      const childShared = series(label, "childShared")
      const raw = series(label, "raw")
      return {
        own,
        shared,
        raw,
        overRaw: own.map((value, index) => value - raw[index]!),
        event: own.map((value, index) => value - shared[index]!),
        step: stepped.map((value, index) => (value - shared[index]!) / (steps - 1)),
        child: child.map((value, index) => value - own[index]!),
        childShared: childShared.map((value, index) => value - shared[index]!),
      }
    }
    console.log(
      `workerd CPU ms per Submission, ${rounds} rounds of ${samples} Submissions (median, min–max); ` +
        `shared: ${lanes} Threads at a time; a step: (${steps} steps − 1 step) / ${steps - 1}; ` +
        `overRaw: own − raw`,
    )
    for (const { label } of runtimes) {
      const figures = derived(label)
      console.log(`${label}:`)
      for (const [name, values] of Object.entries(figures))
        console.log(`  ${name.padEnd(8)} ${formatSpread(spread(values))}`)
    }
    if (runtimes.length === 2) {
      const [mine, theirs] = runtimes.map(({ label }) => derived(label))
      console.log("this checkout ÷ the baseline, round by round; then the swapped pairs' geometric means:")
      for (const name of [
        "own",
        "shared",
        "raw",
        "overRaw",
        "event",
        "step",
        "child",
        "childShared",
      ] as const) {
        const ratios = mine![name].map((value, index) => value / theirs![name][index]!)
        const pairs = swapPairMeans(ratios)
        console.log(
          `  ${name.padEnd(8)} ${formatSpread(spread(ratios))}` +
            (pairs.length > 0 ? `; pairs ${formatSpread(spread(pairs))}` : ""),
        )
      }
    }
    // Counted apart, in a runtime of each checkout whose Objects count their storage calls.
    for (const { label, checkout } of checkouts) {
      const counting = await start(`${label}, counting`, checkout, true)
      try {
        for (const mode of Object.keys(modes) as Array<Mode>) {
          await run(counting, mode)
          const { report } = await run(counting, mode)
          const per = (count: number) => (count / report.submissions).toFixed(2)
          const calls = Object.entries(report.calls)
            .map(([name, count]) => `${name} ${per(count)}`)
            .join(", ")
          console.log(
            `${label}, ${mode} per Submission: alarm deliveries ${per(report.deliveries)}; ${calls}`,
          )
        }
        if (values.fsyncs) {
          for (const mode of ["own", "shared", "child", "childShared", "raw"] as const) {
            const { object, scheduler } = await fsyncsOf(counting, mode)
            console.log(
              `${label}, ${mode}: fsyncs per Submission: Object database ${object.toFixed(2)}, alarm scheduler ${scheduler.toFixed(2)}`,
            )
          }
        }
      } finally {
        await counting.mf.dispose()
      }
    }
  } finally {
    for (const { mf } of runtimes) await mf.dispose()
  }
}

await main()
