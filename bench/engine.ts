/**
 * `npx tsx bench/engine.ts [--runs 3]`: the same JavaScript (bench/worker/engineCases.ts:
 * arithmetic, allocation, generators, small `Effect.gen` programs) timed in workerd, as the CPU
 * time the workerd process spent on one request (from `/proc`, 10 ms ticks), and in this Node
 * process (wall time of the same loop, the machine otherwise idle). It answers whether code
 * costs more in the Worker than a Node measurement of it says. Each loop runs once at a tenth of
 * its size first, in both, to warm it. Linux only.
 */
import { Effect } from "effect"
import { Miniflare } from "miniflare"
import { parseArgs } from "node:util"
import { bundleWorker } from "../test/node/support/bundle.ts"
import { cpuMillis, cpuSpent, workerdProcesses } from "./procCpu.ts"
import { type EngineCase, engineCases } from "./worker/engineCases.ts"

const runs = Number(parseArgs({ options: { runs: { type: "string", default: "3" } } }).values.runs)

const script = await Effect.runPromise(bundleWorker(new URL("./worker/engineCases.ts", import.meta.url)))
const mf = new Miniflare({
  modules: true,
  script,
  compatibilityDate: "2026-04-20",
  compatibilityFlags: ["nodejs_compat"],
})
try {
  await mf.ready
  const pids = workerdProcesses()
  const inWorkerd = async (name: EngineCase, n: number) => {
    const before = cpuMillis(pids)
    await (await mf.dispatchFetch(`http://engine/?case=${name}&n=${n}`)).text()
    const spent = cpuSpent(before, cpuMillis(pids))
    return spent.user + spent.system
  }
  const inNode = (name: EngineCase, n: number) => {
    const started = performance.now()
    engineCases[name].run(n)
    return performance.now() - started
  }
  console.log("ms per loop, workerd CPU and Node wall time, run by run:")
  for (const [name, { iterations }] of Object.entries(engineCases) as Array<
    [EngineCase, { iterations: number }]
  >) {
    await inWorkerd(name, iterations / 10)
    inNode(name, iterations / 10)
    const rows: Array<string> = []
    for (let run = 0; run < runs; run++) {
      const workerd = await inWorkerd(name, iterations)
      const node = inNode(name, iterations)
      rows.push(`${workerd} / ${node.toFixed(0)} (${(workerd / node).toFixed(2)})`)
    }
    console.log(
      `${name.padEnd(11)} ${iterations.toLocaleString("en").padStart(11)} iterations: ${rows.join(", ")}`,
    )
  }
} finally {
  await mf.dispose()
}
