/**
 * `npx tsx bench/refundDrain.ts --refunds 400 --threads 20 --runs 3 --shards 1,8`: the refund desk
 * example (examples/refund-desk) at its configuration (the library's defaults) takes a burst of
 * refunds spread over desk Threads, is stopped the moment the last submit is answered (Miniflare
 * disposes workerd; storage stays in the persist folder, as after a crash of the whole runtime),
 * started again with no request, and drains: every refund asks the fraud desk (a child Submission
 * in another Object) before it pays. Reported per run: refunds still unsettled at the stop, the
 * time from the restart to the last settlement (the newest `settledAt` on the Objects' clock), and
 * when the first, the tenth percentile, the middle and the ninetieth percentile of all settlements
 * happened (negative: before the restart), and the CPU time workerd spent from the restart until
 * the drain was seen over, and its system part (from `/proc`, Linux only). During the drain each
 * Thread is only asked how many Submissions it has left, every 250 ms (`--poll`), until it has
 * none; the settlement times are read once it is over. Each run measures every `--shards` count
 * (`FRAUD_DESK_SHARDS`; 1 puts every fraud check in one Object) and, with `--baseline <checkout>`,
 * the example of another checkout (e.g. main before a change) at the same counts, one after the
 * other, so the variants alternate on a shared machine; every other run reverses the order, and
 * the summary gives each count's CPU and drain ratios to the baseline's in the same run.
 * `--runtime wrangler` serves each variant with `wrangler dev` from its checkout (what `npm start`
 * runs, with the checkout's `.dev.vars`) instead of Miniflare, and stops it with SIGKILL to the dev
 * server's whole process group (`kill -9`); it then also reports how long the restarted server took
 * to answer (`bootMs`, from the restart command), the time from the restart command to the last
 * settlement, and the CPU of wrangler's own processes beside workerd's.
 * `--storage disk,tmpfs` runs every variant with its persist folder on the disk (the default:
 * the project's `.tmp/`, where `wrangler dev` keeps `.wrangler/state` too) and in `/dev/shm`
 * (memory, where an `fsync` costs nothing), alternating, and reports each variant's drain on tmpfs
 * against on disk: what the commits' `fsync`s add to the drain on this machine.
 * `--paired` (with `--baseline`, under Miniflare) loads both variants of a shard count in
 * runtimes of their own, then restarts and drains them at the same time, each workerd pinned to a
 * core of its own (`taskset`, swapped every run): what else the machine does falls on both alike,
 * so their ratio of CPU per refund left at the stop resolves a few percent, where drains one after
 * the other spread by ±15% here. Both share the machine, so the drains' wall times are longer than
 * alone and are not the figure to report; the ratios are.
 * `--profile <file>` takes a CPU profile of workerd's isolate from the restart to the last
 * settlement (of the last run and variant) and prints the functions with the most self time
 * (`--top`). `--perf <file>` takes a native profile of the restarted workerd over the same span
 * with Linux `perf` (bench/nativeProfile.ts: the runtime's own work too, such as preparing
 * statements and committing) and prints where its samples fell. `DRAIN_LOG=events` (Miniflare
 * only) sets the example's `EFFECT_AGENT_MAINTENANCE_LOG`: a log line per maintenance event of
 * every Object, to count events and settlements per event.
 */
import { Effect, Schema } from "effect"
import { resolve } from "node:path"
import { execFileSync } from "node:child_process"
import { writeFile } from "node:fs/promises"
import { parseArgs } from "node:util"
import { startLocalWorker } from "../test/node/support/localWorker.ts"
import { memoryDir, tempDir } from "../test/node/support/tempDir.ts"
import { type JsonRequest, type ProcessCpu, startDevServer } from "./devServer.ts"
import { type Profile, selfTimes, workerSession } from "./inspector.ts"
import { formatSummary, startNativeProfile } from "./nativeProfile.ts"
import { spread } from "./pairs.ts"
import { cpuMillis, workerdProcesses } from "./procCpu.ts"

const options = parseArgs({
  options: {
    refunds: { type: "string", default: "400" },
    threads: { type: "string", default: "20" },
    runs: { type: "string", default: "3" },
    cap: { type: "string", default: "120" },
    shards: { type: "string", default: "1,8" },
    baseline: { type: "string" },
    profile: { type: "string" },
    perf: { type: "string" },
    top: { type: "string", default: "40" },
    poll: { type: "string", default: "250" },
    runtime: { type: "string", default: "miniflare" },
    paired: { type: "boolean", default: false },
    storage: { type: "string", default: "disk" },
  },
}).values
const refunds = Number(options.refunds)
const threadCount = Number(options.threads)
const runs = Number(options.runs)
const capMillis = Number(options.cap) * 1_000
/** How often a Thread still draining is asked what it has left (each ask is a request into it). */
const pollMillis = Number(options.poll)
const example = "examples/refund-desk/src/worker.ts"
if (options.runtime !== "miniflare" && options.runtime !== "wrangler") {
  throw new Error(`--runtime must be miniflare or wrangler, not ${options.runtime}`)
}
const devServer = options.runtime === "wrangler"
if (devServer && options.profile !== undefined) throw new Error("--profile needs --runtime miniflare")
if (devServer && options.perf !== undefined) throw new Error("--perf needs --runtime miniflare")
if (options.paired && (devServer || options.baseline === undefined || options.profile !== undefined)) {
  throw new Error("--paired needs --baseline and --runtime miniflare, without --profile")
}
const ownCheckout = new URL("..", import.meta.url).pathname
const shardCounts = options.shards.split(",").map(Number)
/**
 * Where each variant's persist folder is: `disk` (the project's `.tmp/`, as `npm start` keeps
 * `.wrangler/state`) or `tmpfs` (`/dev/shm`, memory, whose `fsync` costs nothing), or both
 * (`disk,tmpfs`), each variant on each, alternating.
 */
const storages = options.storage.split(",")
if (!storages.every((storage) => storage === "disk" || storage === "tmpfs"))
  throw new Error(`--storage must list disk and/or tmpfs, not ${options.storage}`)
const own = new URL(`../${example}`, import.meta.url).href
/**
 * The variants each run measures: this checkout's example at each shard count and, with a
 * baseline, the baseline's example at the same counts (a comparison at different counts would
 * measure the sharding too: one fraud desk Object batches more checks per event).
 */
const variants = shardCounts.flatMap((shards) =>
  storages.flatMap((storage) => {
    const on = storage === "disk" ? "" : ` on ${storage}`
    return [
      {
        label: `${shards} fraud desk Object(s)${on}`,
        entry: own,
        checkout: ownCheckout,
        shards,
        storage,
        baseline: false,
      },
      ...(options.baseline === undefined
        ? []
        : [
            {
              label: `baseline ${options.baseline}, ${shards} fraud desk Object(s)${on}`,
              entry: resolve(options.baseline, example),
              checkout: resolve(options.baseline),
              shards,
              storage,
              baseline: true,
            },
          ]),
    ]
  }),
)
type Variant = (typeof variants)[number]

const Statuses = Schema.Array(
  Schema.Struct({
    state: Schema.String,
    settlement: Schema.optionalKey(Schema.Struct({ settledAt: Schema.Number })),
  }),
)

const inspectorPort = options.profile === undefined ? undefined : 9300 + Math.floor(Math.random() * 500)

const startProfile = (port: number) =>
  Effect.promise(async () => {
    const devtools = await workerSession(port)
    await devtools.send("Profiler.enable")
    await devtools.send("Profiler.start")
    return devtools
  })

const stopProfile = (devtools: Awaited<ReturnType<typeof workerSession>>) =>
  Effect.promise(async () => {
    const { profile } = await devtools.send<{ profile: Profile }>("Profiler.stop")
    devtools.close()
    await writeFile(options.profile ?? "drain.cpuprofile", JSON.stringify(profile))
    const sampled = profile.timeDeltas.reduce((sum, delta) => sum + delta, 0) / 1000
    console.log(`profile: ${sampled.toFixed(0)} ms sampled, written to ${options.profile}`)
    for (const [name, micros] of selfTimes(profile).slice(0, Number(options.top))) {
      console.log(`${(micros / 1000).toFixed(1).padStart(8)} ms  ${name}`)
    }
  })

const ThreadLeft = Schema.Struct({ nonterminal: Schema.Number })

/** Pins every thread of `pids` to CPU `core` (Linux `taskset`). */
const pin = (pids: ReadonlyArray<string>, core: number) => {
  for (const pid of pids) execFileSync("taskset", ["-a", "-p", "-c", String(core), pid], { stdio: "ignore" })
}

/**
 * The example under Miniflare, with the dev server's shape: `start` answers 0 ms and pins the new
 * workerd to `core` when one is given, `cpu` reads the workerd it started last.
 */
const startMiniflare = (variant: Variant, persistDir: string, core?: number) =>
  Effect.map(
    startLocalWorker({
      entry: variant.entry.startsWith("file:") ? new URL(variant.entry) : variant.entry,
      durableObjects: {
        THREADS: "Threads",
        RELAY: "RelayInbox",
        PAYMENTS: "Payments",
        DIRECTORY: "ThreadDirectory",
      },
      persistDir,
      bindings: {
        OPERATOR_TOKEN: "drain-token",
        FRAUD_DESK_SHARDS: String(variant.shards),
        ...(process.env.DRAIN_LOG ? { EFFECT_AGENT_MAINTENANCE_LOG: process.env.DRAIN_LOG } : {}),
      },
      ...(inspectorPort === undefined ? {} : { inspectorPort }),
    }),
    (worker) => {
      let pids: ReadonlyArray<string> = []
      return {
        fetch: (path: string, init?: JsonRequest) => Effect.asVoid(worker.fetch(path, init)),
        json: worker.json,
        stop: worker.stop,
        start: Effect.suspend(() => {
          const before = new Set(workerdProcesses())
          return Effect.map(worker.start, () => {
            pids = workerdProcesses().filter((pid) => !before.has(pid))
            if (core !== undefined) pin(pids, core)
            return 0
          })
        }),
        cpu: (): ProcessCpu => {
          const { user, system } = cpuMillis(pids)
          return { workerd: user + system, system, wrangler: 0 }
        },
        pids: () => pids,
      }
    },
  )

const threads = Array.from({ length: threadCount }, (_, i) => `drain-desk-${i}`)

/**
 * A variant's runtime with its burst submitted and stopped, ready to restart (`core`: the CPU its
 * restarted workerd is pinned to).
 */
const loaded = (run: number, variant: Variant, core?: number) =>
  Effect.gen(function* () {
    const label = `refund-drain-${run}-${variants.indexOf(variant)}`
    const persistDir = yield* variant.storage === "tmpfs" ? memoryDir(label) : tempDir(label)
    const worker = devServer
      ? yield* startDevServer({
          checkout: variant.checkout,
          persistDir,
          port: 8700 + ((run * variants.length + variants.indexOf(variant)) % 200),
          vars: { FRAUD_DESK_SHARDS: String(variant.shards) },
          probe: `/threads/${threads[0]}`,
        })
      : yield* startMiniflare(variant, persistDir, core)
    yield* Effect.forEach(
      Array.from({ length: refunds }, (_, n) => n),
      (n) => {
        const thread = threads[n % threadCount] ?? "drain-desk-0"
        return worker.fetch(`/threads/${thread}/submissions`, {
          method: "POST",
          body: JSON.stringify({ idempotencyKey: `refund-${n}`, input: { orderId: `D${n}`, amount: 10 } }),
          headers: { "content-type": "application/json" },
        })
      },
      { concurrency: threadCount, discard: true },
    )
    yield* worker.stop
    return worker
  })

type Loaded = Effect.Success<ReturnType<typeof loaded>>

/** Restarts a loaded runtime and measures its drain. */
const drained = (run: number, variant: Variant, worker: Loaded) =>
  Effect.gen(function* () {
    // Settlement times of one Thread's settled Submissions (the page holds them all): read once
    // the drain is over, since a page of 200 rows per Thread is work the Objects would do
    // while they drain.
    const settledIn = (thread: string) =>
      Effect.map(worker.json(Statuses, `/threads/${thread}/submissions?limit=200`), (rows) =>
        rows.flatMap((row) => (row.state === "settled" && row.settlement ? [row.settlement.settledAt] : [])),
      )
    const settled = Effect.map(Effect.forEach(threads, settledIn, { concurrency: 4 }), (times) =>
      times.flat(),
    )
    // While it drains, each Thread is asked only how many it has left (one count), and a
    // Thread with none left is not asked again.
    const left = (thread: string) =>
      Effect.map(worker.json(ThreadLeft, `/threads/${thread}`), (status) => status.nonterminal)
    const restartCommandAt = Date.now()
    const bootMs = yield* worker.start
    const restartedAt = Date.now()
    const cpuBefore = worker.cpu()
    const profiler = inspectorPort === undefined ? undefined : yield* startProfile(inspectorPort)
    const native =
      options.perf === undefined || !("pids" in worker)
        ? undefined
        : startNativeProfile(worker.pids(), options.perf)
    let pending = threads
    let unsettledAtRestart: number | undefined
    let polls = 0
    while (pending.length > 0 && Date.now() - restartedAt < capMillis) {
      polls += pending.length
      const counts = yield* Effect.forEach(pending, left, { concurrency: 4 })
      unsettledAtRestart ??= counts.reduce((sum, count) => sum + count, 0)
      pending = pending.filter((_, index) => (counts[index] ?? 0) > 0)
      if (pending.length > 0) yield* Effect.sleep(pollMillis)
    }
    const cpuAfter = worker.cpu()
    const times = yield* settled
    const lastSettledAt = Math.max(...times)
    const sorted = [...times].sort((a, b) => a - b)
    const after = (fraction: number) =>
      (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? restartedAt) - restartedAt
    if (profiler !== undefined) yield* stopProfile(profiler)
    if (native !== undefined) {
      const summary = yield* Effect.promise(native.stop)
      for (const line of formatSummary(summary)) console.log(line)
    }
    return {
      run,
      variant: variant.label,
      refunds,
      threads: threadCount,
      settled: times.length,
      unsettledAtRestart: unsettledAtRestart ?? 0,
      drainMs: lastSettledAt - restartedAt,
      ...(devServer ? { bootMs, restartCommandToLastMs: lastSettledAt - restartCommandAt } : {}),
      // workerd's user and system CPU from the restart until the drain was seen over, the part
      // of it spent in the kernel, and under wrangler the CPU of wrangler's own processes.
      cpuMs: cpuAfter.workerd - cpuBefore.workerd,
      systemCpuMs: cpuAfter.system - cpuBefore.system,
      ...(devServer ? { wranglerCpuMs: cpuAfter.wrangler - cpuBefore.wrangler } : {}),
      // When the first, the tenth, the middle and the ninetieth percentile settled.
      settledAfterMs: [after(0), after(0.1), after(0.5), after(0.9)],
      // The requests that asked the Threads what they had left, in the same workerd.
      polls,
    }
  })

const oneRun = (run: number, variant: Variant) =>
  Effect.scoped(Effect.flatMap(loaded(run, variant), (worker) => drained(run, variant, worker)))

/**
 * `--paired`: each variant loaded in a runtime of its own, then both restarted and drained at the
 * same time, each workerd pinned to a core of its own (swapped every run), so that what the
 * machine does meanwhile falls on both alike.
 */
const pairedRun = (run: number, pair: ReadonlyArray<Variant>) =>
  Effect.scoped(
    Effect.gen(function* () {
      // The baseline takes core 0 in odd runs and core 1 in even ones, whatever the order of the run.
      const workers = yield* Effect.forEach(pair, (variant) =>
        loaded(run, variant, ((variant.baseline ? 1 : 0) + run) % 2),
      )
      return yield* Effect.forEach(pair, (variant, index) => drained(run, variant, workers[index]!), {
        concurrency: "unbounded",
      })
    }),
  )

const ratio = (value: number) => value.toFixed(2)

const main = Effect.gen(function* () {
  const results = new Map<
    string,
    Array<{
      readonly drainMs: number
      readonly cpuMs: number
      readonly unsettledAtRestart: number
      readonly bootMs?: number
      readonly restartCommandToLastMs?: number
    }>
  >()
  for (let run = 1; run <= runs; run++) {
    // Every other run goes in reverse, so that neither side always runs first (or after the other).
    const order = run % 2 === 1 ? variants : [...variants].reverse()
    const measured = options.paired
      ? yield* Effect.forEach(
          shardCounts.flatMap((shards) => storages.map((storage) => [shards, storage] as const)),
          ([shards, storage]) =>
            pairedRun(
              run,
              order.filter((variant) => variant.shards === shards && variant.storage === storage),
            ),
        ).pipe(Effect.map((all) => all.flat()))
      : yield* Effect.forEach(order, (variant) => oneRun(run, variant))
    for (const result of measured) {
      console.log(JSON.stringify(result))
      results.set(result.variant, [...(results.get(result.variant) ?? []), result])
    }
  }
  for (const [label, values] of results) {
    const drain = spread(values.map((value) => value.drainMs))
    console.log(
      `${label}: restart to last settlement median ${drain.median} ms, min ${drain.min}, max ${drain.max} (${values.length} runs)`,
    )
    if (devServer) {
      const boot = spread(values.map((value) => value.bootMs ?? 0))
      const whole = spread(values.map((value) => value.restartCommandToLastMs ?? 0))
      console.log(
        `${label}: restart command to serving median ${boot.median} ms (${boot.min}–${boot.max}), to last settlement median ${whole.median} ms (${whole.min}–${whole.max})`,
      )
    }
  }
  // With both storages, what the disk adds: each variant's drain on tmpfs against on disk, run by run.
  if (storages.length > 1) {
    for (const variant of variants.filter((one) => one.storage === "disk")) {
      const memory = variants.find(
        (one) =>
          one.storage === "tmpfs" && one.shards === variant.shards && one.baseline === variant.baseline,
      )!
      const onDisk = results.get(variant.label) ?? []
      const pairs = (results.get(memory.label) ?? []).map((value, i) => ({ value, base: onDisk[i]! }))
      const drain = spread(pairs.map(({ value, base }) => value.drainMs / base.drainMs))
      const cpu = spread(pairs.map(({ value, base }) => value.cpuMs / base.cpuMs))
      console.log(
        `${memory.label} / on disk, per run: drain median ${ratio(drain.median)} (${ratio(drain.min)}–${ratio(drain.max)}), CPU median ${ratio(cpu.median)} (${ratio(cpu.min)}–${ratio(cpu.max)})`,
      )
    }
  }
  // Each shard count against the baseline's at the same count, run by run: CPU and drain ratios.
  if (options.baseline === undefined) return
  for (const [shards, storage] of shardCounts.flatMap((count) =>
    storages.map((on) => [count, on] as const),
  )) {
    const same = (variant: Variant) => variant.shards === shards && variant.storage === storage
    const mine = variants.find((variant) => same(variant) && !variant.baseline)!
    const theirs = variants.find((variant) => same(variant) && variant.baseline)!
    const against = results.get(theirs.label) ?? []
    const pairs = (results.get(mine.label) ?? []).map((value, i) => ({ value, base: against[i]! }))
    const cpu = spread(pairs.map(({ value, base }) => value.cpuMs / base.cpuMs))
    // CPU per refund left at the stop: the bursts do not stop at exactly the same point.
    const perRefund = spread(
      pairs.map(
        ({ value, base }) =>
          value.cpuMs /
          Math.max(1, value.unsettledAtRestart) /
          (base.cpuMs / Math.max(1, base.unsettledAtRestart)),
      ),
    )
    const drain = spread(pairs.map(({ value, base }) => value.drainMs / base.drainMs))
    console.log(
      `${mine.label} / baseline, per run: CPU median ${ratio(cpu.median)} (${ratio(cpu.min)}–${ratio(cpu.max)}), CPU per refund left ${ratio(perRefund.median)} (${ratio(perRefund.min)}–${ratio(perRefund.max)}), drain median ${ratio(drain.median)} (${ratio(drain.min)}–${ratio(drain.max)})`,
    )
  }
})

Effect.runPromise(main).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
