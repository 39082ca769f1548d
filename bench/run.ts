/**
 * `npm run bench`: starts the bench Worker (bench/worker/) in Miniflare, measures every subject
 * on a fresh Object per repetition after one warm-up, writes bench/results.json and prints a
 * table of medians with their min–max. Options: --runs 3 --burst 1000 --warmup 100 --loop-ms 3000.
 * Local wall times are not production figures; per-item storage work depends only on the code.
 */
import { Effect } from "effect"
import { writeFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { startLocalWorker } from "../test/node/support/localWorker.ts"
import { tempDir } from "../test/node/support/tempDir.ts"
import type { Figures, ObjectClient } from "./drivers.ts"
import { type BenchSettings, subjects } from "./subjects.ts"
import { formatTable, summarize } from "./summary.ts"

const options = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    burst: { type: "string", default: "1000" },
    warmup: { type: "string", default: "100" },
    "loop-ms": { type: "string", default: "3000" },
  },
}).values

const positive = (name: string, text: string): number => {
  const value = Number(text)
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} must be a positive integer, got ${text}`)
  return value
}

const runs = positive("runs", options.runs)
const settings: BenchSettings = {
  burst: positive("burst", options.burst),
  warmup: positive("warmup", options.warmup),
  loopMs: positive("loop-ms", options["loop-ms"]),
}
const resultsPath = fileURLToPath(new URL("./results.json", import.meta.url))

const main = Effect.gen(function* () {
  const worker = yield* startLocalWorker({
    entry: new URL("./worker/index.ts", import.meta.url),
    durableObjects: Object.fromEntries(subjects.map((subject) => [subject.binding, subject.className])),
    persistDir: yield* tempDir("bench"),
  })
  const objectOf = (binding: string, name: string): ObjectClient => ({
    json: (schema, route, init) => worker.json(schema, `/${binding}/${name}/${route}`, init),
  })

  for (const subject of subjects) {
    yield* subject.drivers(settings).warmup(objectOf(subject.binding, `${subject.id}-warmup`))
  }
  const measured: Array<Record<string, Figures>> = []
  for (let run = 1; run <= runs; run++) {
    const figures: Record<string, Figures> = {}
    for (const subject of subjects) {
      figures[subject.id] = yield* subject
        .drivers(settings)
        .measure(objectOf(subject.binding, `${subject.id}-${run}`))
    }
    measured.push(figures)
    console.error(`run ${run}/${runs} done`)
  }

  const summary = summarize(subjects, measured)
  const results = {
    createdAt: new Date().toISOString(),
    environment: {
      node: process.version,
      miniflare: createRequire(import.meta.url)("miniflare/package.json").version as string,
      compatibilityDate: "2026-04-20",
    },
    settings: { runs, ...settings },
    subjects: subjects.map(({ id, label, className }) => ({ id, label, className })),
    figures: summary,
  }
  yield* Effect.promise(() => writeFile(resultsPath, `${JSON.stringify(results, null, 2)}\n`))
  console.log(formatTable(subjects, summary))
  console.log(`\n${runs} repetitions; written to bench/results.json`)
})

Effect.runPromise(Effect.scoped(main)).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
