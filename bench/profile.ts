/**
 * `npx tsx bench/profile.ts [--count 1000] [--binding THREADS_MULTI] [--out profile.cpuprofile]`:
 * a CPU profile of one burst in the bench Worker, taken through workerd's inspector, with a
 * summary of the functions that took the most self time. Open the .cpuprofile in Chrome
 * DevTools for the full picture. With `--latency` it profiles `--count` sequential one-step
 * Submissions of a latency subject instead (`--binding LATENCY_THREADS` or `LATENCY_RAW`), each
 * answered once settled, after 20 unprofiled ones; with `--cold` as well, each to a new Object.
 * After the functions it lists the self time of each source module of the bundle.
 */
import { Effect } from "effect"
import { Miniflare } from "miniflare"
import { writeFile } from "node:fs/promises"
import { parseArgs } from "node:util"
import { bundleWorker } from "../test/node/support/bundle.ts"
import { moduleTimes, type Profile, selfTimes, workerSession } from "./inspector.ts"
import { subjects } from "./subjects.ts"

const { values } = parseArgs({
  options: {
    count: { type: "string", default: "1000" },
    lanes: { type: "string", default: "1" },
    binding: { type: "string", default: "THREADS_MULTI" },
    out: { type: "string", default: "bench/profile.cpuprofile" },
    top: { type: "string", default: "40" },
    latency: { type: "boolean", default: false },
    cold: { type: "boolean", default: false },
  },
})

const main = async () => {
  const script = await Effect.runPromise(bundleWorker(new URL("./worker/index.ts", import.meta.url)))
  const inspectorPort = 9300 + Math.floor(Math.random() * 500)
  const mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: "2026-04-20",
    compatibilityFlags: ["nodejs_compat"],
    inspectorPort,
    durableObjects: Object.fromEntries(
      Object.values(subjects).map((subject) => [
        subject.binding,
        { className: subject.className, useSQLite: true },
      ]),
    ),
  })
  await mf.ready
  try {
    const post = (name: string, path: string, body: unknown) =>
      mf.dispatchFetch(`http://worker/${values.binding}/${name}/${path}`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      })
    const count = Number(values.count)
    // With --cold every sample goes to a new Object: the profile is of constructors and first
    // Submissions.
    const sequential = async (name: string, first: number, samples: number) => {
      for (let n = first; n < first + samples; n++)
        await (await post(values.cold ? `${name}-${n}` : name, "latency", { n })).text()
    }
    // Warm up once so the profile shows steady state, not compilation.
    if (values.latency) await sequential("profiled", 0, 20)
    else {
      await (await post("warmup", "burst", { count: 100, lanes: Number(values.lanes) })).text()
      await (await post("warmup", "wait", {})).text()
    }
    const devtools = await workerSession(inspectorPort)
    await devtools.send("Profiler.enable")
    await devtools.send("Profiler.start")
    const started = performance.now()
    if (values.latency) await sequential("profiled", 20, count)
    else await (await post("profiled", "burst", { count, lanes: Number(values.lanes) })).text()
    const submitted = performance.now()
    if (!values.latency) await (await post("profiled", "wait", {})).text()
    const ended = performance.now()
    const { profile } = await devtools.send<{ profile: Profile }>("Profiler.stop")
    devtools.close()
    await writeFile(values.out, JSON.stringify(profile))
    const sampled = profile.timeDeltas.reduce((sum, delta) => sum + delta, 0) / 1000
    console.log(
      `${count} items: submit ${(submitted - started).toFixed(0)} ms, drain ${(ended - submitted).toFixed(0)} ms; ` +
        `profile ${sampled.toFixed(0)} ms sampled, written to ${values.out}`,
    )
    for (const [name, micros] of selfTimes(profile).slice(0, Number(values.top))) {
      console.log(`${(micros / 1000).toFixed(1).padStart(8)} ms  ${name}`)
    }
    console.log("self time by source module:")
    for (const [module, micros] of moduleTimes(profile, script).slice(0, Number(values.top))) {
      console.log(`${(micros / 1000).toFixed(1).padStart(8)} ms  ${module}`)
    }
  } finally {
    await mf.dispose()
  }
}

await main()
