/**
 * `npx tsx bench/cpu.ts [--samples 500] [--blocks 5] [--baseline <checkout>]`: workerd's CPU
 * time per settled one-step Submission, submitted and awaited one at a time (the latency
 * section's warm case), on the raw Durable Object and on the library's Object in alternating
 * blocks; with `--baseline`, also on the library's Object of another checkout (e.g. main before
 * a change, its `node_modules` linked), in a runtime of its own, in the same rotation. Wall time
 * on a shared machine is noisy and a pass's work after the answer does not show in it; the CPU
 * time the workerd process spent (user and system, read from `/proc`, 10 ms ticks, so blocks are
 * long) is what the work costs. The first block of each is a warm-up and not reported. With a
 * baseline it also prints the ratio of the two libraries' user CPU round by round: blocks of one
 * round run back to back, so the ratio cancels most of the machine's drift. Linux only.
 */
import { Effect } from "effect"
import { Miniflare } from "miniflare"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { parseArgs } from "node:util"
import { bundleWorker } from "../test/node/support/bundle.ts"
import { cpuMillis, cpuSpent, workerdProcesses } from "./procCpu.ts"
import { subjects } from "./subjects.ts"

const { values } = parseArgs({
  options: {
    samples: { type: "string", default: "500" },
    blocks: { type: "string", default: "5" },
    baseline: { type: "string" },
  },
})

const median = (values: ReadonlyArray<number>) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const runtimeOf = async (entry: URL) =>
  new Miniflare({
    modules: true,
    script: await Effect.runPromise(bundleWorker(entry)),
    compatibilityDate: "2026-04-20",
    compatibilityFlags: ["nodejs_compat"],
    durableObjects: Object.fromEntries(
      Object.values(subjects).map((subject) => [
        subject.binding,
        { className: subject.className, useSQLite: true },
      ]),
    ),
  })

const main = async () => {
  const mf = await runtimeOf(new URL("./worker/index.ts", import.meta.url))
  const baseline =
    values.baseline === undefined
      ? undefined
      : await runtimeOf(pathToFileURL(resolve(values.baseline, "bench/worker/index.ts")))
  try {
    await mf.ready
    await baseline?.ready
    const pids = workerdProcesses()
    if (pids.length === 0) throw new Error("no workerd process of this run was found in /proc")
    const samples = Number(values.samples)
    let next = 0
    // Every runtime's process is counted: the idle one adds nothing to a block of the other.
    const block = async (runtime: Miniflare, binding: string) => {
      const before = cpuMillis(pids)
      for (let index = 0; index < samples; index++) {
        const response = await runtime.dispatchFetch(`http://worker/${binding}/cpu/latency`, {
          method: "POST",
          body: JSON.stringify({ n: next++ }),
          headers: { "content-type": "application/json" },
        })
        await response.text()
      }
      const spent = cpuSpent(before, cpuMillis(pids))
      return { user: spent.user / samples, system: spent.system / samples }
    }
    const subjectsCompared: ReadonlyArray<readonly [string, Miniflare, string]> = [
      ["raw Durable Object", mf, "LATENCY_RAW"],
      ["ThreadObject (default config)", mf, "LATENCY_THREADS"],
      ...(baseline === undefined
        ? []
        : [[`ThreadObject of ${values.baseline}`, baseline, "LATENCY_THREADS"] as const]),
    ]
    const figures = new Map<string, Array<{ user: number; system: number }>>()
    for (let round = 0; round <= Number(values.blocks); round++) {
      for (const [label, runtime, binding] of subjectsCompared) {
        const measured = await block(runtime, binding)
        if (round > 0) figures.set(label, [...(figures.get(label) ?? []), measured])
      }
    }
    console.log(
      `workerd CPU ms per settled Submission, ${values.blocks} blocks of ${samples} (median, min-max):`,
    )
    for (const [label, blocks] of figures) {
      const user = blocks.map((each) => each.user)
      const system = blocks.map((each) => each.system)
      console.log(
        `${label.padEnd(40)} user ${median(user).toFixed(2)} (${Math.min(...user).toFixed(2)}-${Math.max(...user).toFixed(2)})` +
          `  system ${median(system).toFixed(2)} (${Math.min(...system).toFixed(2)}-${Math.max(...system).toFixed(2)})`,
      )
    }
    // Blocks of one round ran back to back, so their ratio cancels the machine's drift between
    // rounds: the figure to compare a change by.
    const ours = figures.get("ThreadObject (default config)") ?? []
    const theirs = baseline === undefined ? undefined : figures.get(`ThreadObject of ${values.baseline}`)
    if (theirs !== undefined) {
      const ratios = ours.map((block, round) => block.user / theirs[round]!.user)
      console.log(
        `user CPU of this checkout ÷ the baseline's, round by round: median ${median(ratios).toFixed(3)} ` +
          `(${ratios.map((ratio) => ratio.toFixed(2)).join(", ")})`,
      )
    }
  } finally {
    await mf.dispose()
    await baseline?.dispose()
  }
}

await main()
