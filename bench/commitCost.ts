/**
 * `npx tsx bench/commitCost.ts [--calls 2000] [--rounds 3]`: what workerd itself charges for the
 * pieces a refund is made of, with no library in the way. A plain Object loops `--calls` times:
 * - `call`: a call to another Object that writes nothing;
 * - `call+commit`: a call to another Object that writes a row, so its answer waits for the commit;
 * - `commit`: a row written in its own turn (a commit of the Object's own database);
 * - `nothing`: the loop alone.
 * Each runs with the Objects' storage on the disk (the project's `.tmp/`, where `wrangler dev`
 * keeps `.wrangler/state`) and in `/dev/shm` (memory), and reports the CPU time of workerd (user
 * and system, from `/proc`) and the wall time per call, median (min–max) over `--rounds`. The
 * difference between the two storages is what a commit's `fsync` costs here.
 */
import { Effect } from "effect"
import { Miniflare } from "miniflare"
import { parseArgs } from "node:util"
import { memoryDir, tempDir } from "../test/node/support/tempDir.ts"
import { formatSpread, spread } from "./pairs.ts"
import { cpuMillis, workerdProcesses } from "./procCpu.ts"

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "2000" },
    rounds: { type: "string", default: "3" },
  },
})
const calls = Number(values.calls)
const rounds = Number(values.rounds)
if (![calls, rounds].every((value) => Number.isInteger(value) && value > 0))
  throw new Error("--calls and --rounds must be positive integers")

const script = `
import { DurableObject } from "cloudflare:workers"
const table = "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)"
export class Callee extends DurableObject {
  async call(n) { return n }
  async callWrite(n) {
    this.ctx.storage.sql.exec(table)
    this.ctx.storage.sql.exec("INSERT OR REPLACE INTO t VALUES (?, ?)", n % 100, "v")
    return n
  }
}
export class Caller extends DurableObject {
  async loop(calls, mode) {
    for (let n = 0; n < calls; n++) {
      const callee = this.env.CALLEE.getByName("callee-" + (n % 8))
      if (mode === "call") await callee.call(n)
      else if (mode === "call+commit") await callee.callWrite(n)
      else if (mode === "commit") {
        this.ctx.storage.sql.exec(table)
        this.ctx.storage.sql.exec("INSERT OR REPLACE INTO t VALUES (?, ?)", n % 100, "v")
        await new Promise((resolve) => setTimeout(resolve, 0))
      } else await Promise.resolve()
    }
  }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    await env.CALLER.getByName("caller").loop(Number(url.searchParams.get("calls")), url.searchParams.get("mode"))
    return new Response("ok")
  },
}
`

const modes = ["nothing", "call", "call+commit", "commit"] as const

/** CPU and wall ms per call of each mode, one round, over storage in `persist`. */
const round = (persist: string) =>
  Effect.promise(async () => {
    const mf = new Miniflare({
      modules: true,
      script,
      compatibilityDate: "2026-04-20",
      durableObjectsPersist: persist,
      durableObjects: {
        CALLER: { className: "Caller", useSQLite: true },
        CALLEE: { className: "Callee", useSQLite: true },
      },
    })
    try {
      await mf.ready
      const pids = workerdProcesses()
      const run = async (mode: string, count: number) =>
        (await mf.dispatchFetch(`http://bench/?calls=${count}&mode=${encodeURIComponent(mode)}`)).text()
      for (const mode of modes) await run(mode, 200)
      const costs: Array<{ mode: string; cpu: number; wall: number }> = []
      for (const mode of modes) {
        const before = cpuMillis(pids)
        const started = performance.now()
        await run(mode, calls)
        const wall = performance.now() - started
        const after = cpuMillis(pids)
        const cpu = after.user + after.system - before.user - before.system
        costs.push({ mode, cpu: cpu / calls, wall: wall / calls })
      }
      return costs
    } finally {
      await mf.dispose()
    }
  })

const main = Effect.gen(function* () {
  const results = new Map<string, Array<{ cpu: number; wall: number }>>()
  for (let n = 0; n < rounds; n++) {
    // Alternate which storage goes first.
    for (const storage of n % 2 === 0 ? ["disk", "tmpfs"] : ["tmpfs", "disk"]) {
      const costs = yield* Effect.scoped(
        Effect.flatMap(storage === "disk" ? tempDir("commit-cost") : memoryDir("commit-cost"), round),
      )
      for (const { mode, cpu, wall } of costs) {
        const key = `${mode} on ${storage}`
        results.set(key, [...(results.get(key) ?? []), { cpu, wall }])
      }
    }
  }
  for (const [key, values] of results) {
    console.log(
      `${key.padEnd(24)} CPU ms per call ${formatSpread(spread(values.map((value) => value.cpu)))}, wall ms per call ${formatSpread(spread(values.map((value) => value.wall)))}`,
    )
  }
})

Effect.runPromise(main).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
