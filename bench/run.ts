/**
 * `npm run bench`: starts the bench Worker (bench/worker/) in Miniflare, warms each subject up
 * once, runs every case on a fresh Object per repetition, writes bench/results.json and
 * bench/results.md, and prints one table of medians (min–max) per section plus the ratios. A
 * section measured once (retention) is written to its own files instead (bench/retention.json,
 * bench/retention.md, bench/retention.svg), which results.md links to with the other figures
 * measured on their own, so rewriting results.md never drops them.
 *
 * Each repetition measures every case of a section once, in order, so the subjects a section
 * compares alternate (raw, ours, raw, ours, ...) and repetition i of one pairs with repetition i
 * of another: a ratio is reported as the ratio of medians and its worst pair.
 *
 * Options: --runs 3 --pair-runs 5 (repetitions of the compared sections: perItem, latency)
 * --burst 1000 --warmup 100 --loop-ms 3000 --sizes 100,1000,10000
 * --parked 0,100,10000 --cap 300 (seconds per drain) --idle-ms 2000 --default-burst 100
 * --fanin 200 --latency-samples 300 --latency-warmups 20 --latency-cold 30
 * --sustained 200000 --sustained-chunk 4000 (the retention section, measured once: its chunks are
 * its repetitions)
 * --only caughtUp,perItem,scaling,fairness,idle,throughput,recovery,fanin,latency,retention
 * --out bench/results.json (the other files go to its folder);
 * --from a.json,b.json measures nothing and merges earlier results (later files win per case).
 * Local wall times are not production figures; per-item storage work depends only on the code.
 */
import { Effect } from "effect"
import { readFile, writeFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { availableParallelism, loadavg } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { startLocalWorker } from "../test/node/support/localWorker.ts"
import { tempDir } from "../test/node/support/tempDir.ts"
import type { Figures, ObjectClient } from "./drivers.ts"
import { type BenchSettings, type Section, sections, subjects } from "./subjects.ts"
import { costRows, derive, formatCost, formatDerived, formatSection, summarize } from "./summary.ts"

const options = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    "pair-runs": { type: "string", default: "5" },
    burst: { type: "string", default: "1000" },
    warmup: { type: "string", default: "100" },
    "loop-ms": { type: "string", default: "3000" },
    sizes: { type: "string", default: "100,1000,10000" },
    parked: { type: "string", default: "0,100,10000" },
    cap: { type: "string", default: "300" },
    "idle-ms": { type: "string", default: "2000" },
    "default-burst": { type: "string", default: "100" },
    fanin: { type: "string", default: "200" },
    "latency-samples": { type: "string", default: "300" },
    "latency-warmups": { type: "string", default: "20" },
    "latency-cold": { type: "string", default: "30" },
    sustained: { type: "string", default: "200000" },
    "sustained-chunk": { type: "string", default: "4000" },
    only: { type: "string" },
    out: { type: "string" },
    from: { type: "string" },
  },
}).values

const integer = (name: string, text: string, minimum = 1): number => {
  const value = Number(text)
  if (!Number.isInteger(value) || value < minimum)
    throw new Error(`--${name} must be an integer of at least ${minimum}, got ${text}`)
  return value
}
const list = (name: string, text: string, minimum = 1) =>
  text.split(",").map((part) => integer(name, part.trim(), minimum))

const resultsPath =
  options.out === undefined ? fileURLToPath(new URL("./results.json", import.meta.url)) : resolve(options.out)
const runs = integer("runs", options.runs)
const pairRuns = integer("pair-runs", options["pair-runs"])
const settings: BenchSettings = {
  burst: integer("burst", options.burst),
  warmup: integer("warmup", options.warmup),
  loopMs: integer("loop-ms", options["loop-ms"]),
  sizes: list("sizes", options.sizes),
  parked: list("parked", options.parked, 0),
  capSeconds: integer("cap", options.cap),
  idleMs: integer("idle-ms", options["idle-ms"]),
  defaultBurst: integer("default-burst", options["default-burst"]),
  faninThreads: integer("fanin", options.fanin),
  latencySamples: integer("latency-samples", options["latency-samples"]),
  latencyWarmups: integer("latency-warmups", options["latency-warmups"], 0),
  latencyCold: integer("latency-cold", options["latency-cold"]),
  sustained: integer("sustained", options.sustained),
  sustainedChunk: integer("sustained-chunk", options["sustained-chunk"]),
  outDir: dirname(resultsPath),
}
const only = options.only === undefined ? undefined : new Set(options.only.split(","))
const chosen = sections(settings).filter((section) => only === undefined || only.has(section.id))

/** Figures of earlier runs, by case id; each file's runs replace those of the files before it. */
const earlier = (paths: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const measured: Record<string, Array<Figures>> = {}
    for (const path of paths) {
      const stored = JSON.parse(await readFile(resolve(path), "utf8")) as {
        readonly figures: Record<string, Record<string, { readonly runs: ReadonlyArray<number> }>>
      }
      for (const [id, figures] of Object.entries(stored.figures)) {
        const keys = Object.keys(figures)
        const count = Math.max(...keys.map((key) => figures[key]?.runs.length ?? 0))
        measured[id] = Array.from({ length: count }, (_, run) =>
          Object.fromEntries(keys.map((key) => [key, figures[key]?.runs[run] ?? Number.NaN])),
        )
      }
    }
    return measured
  })

const measure = Effect.gen(function* () {
  const used = [...new Set(chosen.flatMap((section) => section.cases.map((each) => each.subject)))]
  const worker = yield* startLocalWorker({
    entry: new URL("./worker/index.ts", import.meta.url),
    durableObjects: Object.fromEntries(
      Object.values(subjects).map((subject) => [subject.binding, subject.className]),
    ),
    persistDir: yield* tempDir("bench"),
  })
  const objectOf = (binding: string, name: string): ObjectClient => ({
    json: (schema, route, init) => worker.json(schema, `/${binding}/${name}/${route}`, init),
    sibling: (suffix) => objectOf(binding, `${name}-${suffix}`),
    other: (other, suffix) => objectOf(other, `${name}-${suffix}`),
    restart: worker.restart,
  })

  for (const key of used) {
    const subject = subjects[key]
    yield* subject.warmup(settings)(objectOf(subject.binding, `${key}-warmup`))
  }
  const measured: Record<string, Array<Figures>> = {}
  const subjectOf = (key: string) => {
    if (!(key in subjects)) throw new Error(`no bench subject ${key}`)
    return subjects[key as keyof typeof subjects]
  }
  for (const section of chosen) {
    const repetitions = section.once === true ? 1 : section.compared === true ? pairRuns : runs
    const reused = new Set<string>()
    for (const each of section.cases) {
      const same = each.sameAs === undefined ? undefined : measured[each.sameAs]
      if (same === undefined) continue
      measured[each.id] = same
      reused.add(each.id)
    }
    for (let run = 1; run <= repetitions; run++) {
      const started = Date.now()
      if (section.joint !== undefined) {
        const figures = yield* section.joint((key) =>
          objectOf(subjectOf(key).binding, `${section.id}-${run}`),
        )
        for (const each of section.cases) {
          const own = figures[each.id]
          if (own === undefined) return yield* Effect.die(new Error(`${section.id} reported no ${each.id}`))
          ;(measured[each.id] ??= []).push(own)
        }
        console.error(
          `${section.id} run ${run}/${repetitions}: ${((Date.now() - started) / 1000).toFixed(1)} s`,
        )
        continue
      }
      for (const each of section.cases) {
        if (reused.has(each.id)) continue
        if (each.driver === undefined) return yield* Effect.die(new Error(`${each.id} has no driver`))
        const caseStarted = Date.now()
        const figures = yield* each.driver(objectOf(subjects[each.subject].binding, `${each.id}-${run}`))
        ;(measured[each.id] ??= []).push(figures)
        console.error(
          `${each.id} run ${run}/${repetitions}: ${((Date.now() - caseStarted) / 1000).toFixed(1)} s`,
        )
      }
    }
  }
  return measured
})

/**
 * Figures measured on their own, each in its own file beside results.md, which links to them: a
 * run writes results.md only for the sections it measured that are not measured once, so no run
 * of this bench drops them.
 */
const SEPARATE = [
  {
    file: "retention.md",
    title: "Retention",
    by: "section 10 of this bench, measured once: `npm run bench -- --only retention --runs 1`",
  },
  { file: "timers.md", title: "Durable timers", by: "`npx tsx bench/timers.ts`" },
  {
    file: "events.md",
    title: "Events",
    by: "`npx vitest run --project workerd test/bench/EventRows.test.ts`",
  },
] as const

const SEPARATE_LINKS = [
  "Measured on their own, each in its own file (a run of `npm run bench` rewrites one only when it measures that section):",
  "",
  ...SEPARATE.map(({ file, title, by }) => `- [${title}](${file}): ${by}`),
].join("\n")

/** The figures measured for the cases of `group`, by case id. */
const figuresOf = (measured: Record<string, Array<Figures>>, group: ReadonlyArray<Section>) =>
  Object.fromEntries(
    group.flatMap((section) =>
      section.cases.flatMap(({ id }) => (measured[id] === undefined ? [] : [[id, measured[id]]])),
    ),
  )

const main = Effect.gen(function* () {
  // Other work on the machine slows every subject, and the ones that wait for alarms most.
  const loadBefore = loadavg()[0]!
  const measured = options.from === undefined ? yield* measure : yield* earlier(options.from.split(","))
  const load = `load average ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end on ${availableParallelism()} cores`

  const createdAt = new Date().toISOString()
  const miniflare = createRequire(import.meta.url)("miniflare/package.json").version as string
  const argv = process.argv.slice(2).join(" ")
  const preamble =
    options.from === undefined
      ? `Measured ${createdAt} by \`npm run bench${argv === "" ? "" : ` -- ${argv}`}\` (Node ${process.version}, miniflare ${miniflare}; ${load}): ${runs} repetitions, ${pairRuns} for the sections that compare subjects; in each repetition a section's cases run one after the other, so compared subjects alternate. Cells are median (min–max) over repetitions.`
      : `Merged from ${options.from} by \`npm run bench -- ${argv}\`.`

  /** Writes `<name>.json` and `<name>.md` beside the results for `group`, and prints the text. */
  const write = (
    name: string,
    group: ReadonlyArray<Section>,
    tables: ReadonlyArray<string>,
    trailer: string,
    more: object,
  ) =>
    Effect.gen(function* () {
      const text = [preamble, ...tables].join("\n\n")
      const results = {
        createdAt,
        environment: { node: process.version, miniflare, compatibilityDate: "2026-04-20" },
        settings: { runs, pairRuns, ...settings, sections: group.map((section) => section.id) },
        cases: group.flatMap((section) =>
          section.cases.map(({ id, label, subject }) => ({ section: section.id, id, label, subject })),
        ),
        ...more,
      }
      const path = join(settings.outDir, `${name}.json`)
      yield* Effect.promise(() => writeFile(path, `${JSON.stringify(results, null, 2)}\n`))
      yield* Effect.promise(() =>
        writeFile(path.replace(/\.json$/, ".md"), `\`\`\`text\n${text}\n\`\`\`\n\n${trailer}\n`),
      )
      console.log(text)
      console.log(`\nwritten to ${path} and its .md`)
    })

  const ordinary = chosen.filter((section) => section.once !== true)
  if (ordinary.length > 0) {
    const summary = summarize(figuresOf(measured, ordinary))
    const derived = derive(summary, settings.sizes, settings.faninThreads)
    const cost = costRows(summary)
    yield* write(
      basename(resultsPath).replace(/\.json$/, ""),
      ordinary,
      [
        ...ordinary.map((section) => formatSection(section, summary)),
        formatCost(cost),
        formatDerived(derived),
      ],
      SEPARATE_LINKS,
      { figures: summary, cost, derived },
    )
  }
  for (const section of chosen.filter((each) => each.once === true)) {
    const summary = summarize(figuresOf(measured, [section]))
    yield* write(
      section.id,
      [section],
      [formatSection(section, summary)],
      section.id === "retention"
        ? "Database bytes over the run:\n\n![Database size over the sustained run](retention.svg)"
        : "",
      { figures: summary },
    )
  }
})

Effect.runPromise(Effect.scoped(main)).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
