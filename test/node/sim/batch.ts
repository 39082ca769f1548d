/**
 * The seeded batch of the maintenance simulation, split into shards: each shard is a test file
 * of its own (`simulation.test.ts` is shard 1, `simulationShard<k>.test.ts` the others), so
 * that vitest runs them on separate cores. Each shard runs two variants: one head Attempt per
 * alarm event (beta.96's pacing, `BETA96_PACING`) and several (`maxHeadsPerEvent` drawn per
 * seed, the default among the draws).
 *
 * `SIM_RUNS=<n>` sets how many seeds of the one-head variant run in all (from `SIM_BASE`,
 * default 1) and `SIM_MULTI_RUNS=<n>` those of the multi-head variant, each cut into
 * contiguous slices, one per shard; `SIM_SEED=<n>` runs one seed in `simulation.test.ts` only
 * (of the multi-head variant with `SIM_MULTI=1`) and prints its full trace (every failpoint hit
 * and storage commit). A failure names its seed, its variant, its violations and the tail of
 * its trace.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { simulate, type RunReport } from "./driver.ts"
import { hosted } from "./harness.ts"

const env = (name: string): string | undefined =>
  (globalThis as { readonly process?: { readonly env?: Record<string, string | undefined> } }).process?.env?.[
    name
  ]

/**
 * Beta.96's pacing (one head per event), a setting away from the default: a reduced sweep in
 * `npm test`; raise it with `SIM_RUNS`.
 */
export const DEFAULT_RUNS = 800
/** The default pacing (several heads per event); `npm run soak` runs 2,000. */
export const DEFAULT_MULTI_RUNS = 800

/** One head Attempt per alarm event, or several. */
export type Variant = "one-head" | "multi-head"
/** How many files the batch is split across. */
export const SHARDS = 4
const options = { chaosSteps: [10, 150] as const, calmRounds: 600 }

/** The seed `SIM_SEED` asks to replay, if any. */
export const replaySeed = (): number | undefined => {
  const single = env("SIM_SEED")
  return single === undefined ? undefined : Number(single)
}

/** The variant of the seed `SIM_SEED` replays. */
export const replayVariant = (): Variant => (env("SIM_MULTI") === "1" ? "multi-head" : "one-head")

/** One seeded run, isolated. */
export const isolated = (
  seed: number,
  verbose: boolean,
  variant: Variant = "one-head",
): Effect.Effect<RunReport> =>
  hosted(seed, simulate(seed, { ...options, verbose, multiHead: variant === "multi-head" }))

/** The seeds of shard `shard` (1-based) of a variant: its contiguous slice of the range. */
export const shardSeeds = (shard: number, variant: Variant = "one-head"): ReadonlyArray<number> => {
  const base = Number(env("SIM_BASE") ?? 1)
  const count =
    variant === "one-head"
      ? Number(env("SIM_RUNS") ?? DEFAULT_RUNS)
      : Number(env("SIM_MULTI_RUNS") ?? DEFAULT_MULTI_RUNS)
  const from = Math.floor(((shard - 1) * count) / SHARDS)
  const to = Math.floor((shard * count) / SHARDS)
  return Array.from({ length: to - from }, (_, index) => base + from + index)
}

const describeFailure = (report: RunReport, variant: Variant) =>
  [
    `simulation seed ${report.seed} (${variant}) broke ${report.violations.length} invariant(s) after ${report.steps} steps:`,
    ...report.violations.slice(0, 10).map((violation) => `  - ${violation}`),
    `trace (last 150 lines):`,
    ...report.trace.slice(-150),
    `reproduce: SIM_SEED=${report.seed}${variant === "multi-head" ? " SIM_MULTI=1" : ""} npx vitest run --project node test/node/sim/simulation.test.ts`,
  ].join("\n")

/** Runs `seeds`, printing each trace when `verbose`; fails naming the first failing seed. */
export const runSeeds = (
  name: string,
  seeds: ReadonlyArray<number>,
  verbose: boolean,
  variant: Variant = "one-head",
) =>
  Effect.gen(function* () {
    const started = performance.now()
    const failed: Array<RunReport> = []
    let steps = 0
    let checks = 0
    const totals: Record<string, number> = {}
    const kinds: Record<string, number> = {}
    for (const seed of seeds) {
      const report = yield* isolated(seed, verbose, variant)
      if (verbose) console.log([...report.trace, JSON.stringify(report.stats)].join("\n"))
      steps += report.steps
      checks += report.checks
      for (const [key, value] of Object.entries(report.stats)) {
        if (typeof value === "number") totals[key] = (totals[key] ?? 0) + value
      }
      for (const [key, value] of Object.entries(report.checksByKind)) kinds[key] = (kinds[key] ?? 0) + value
      if (report.violations.length > 0) failed.push(report)
    }
    const elapsed = Math.round(performance.now() - started)
    const range = seeds.length === 0 ? "no seeds" : `seeds ${seeds[0]}-${seeds[seeds.length - 1]}`
    console.log(
      `${name} (${range}): ${seeds.length} runs, ${steps} steps, ${checks} invariant checks, ${failed.length} failed, in ${elapsed} ms\nevents ${JSON.stringify(totals)}\nchecks ${JSON.stringify(kinds)}`,
    )
    const first = failed[0]
    if (first !== undefined) {
      const others = failed.slice(1, 20).map((report) => `${report.seed}: ${report.violations[0] ?? ""}`)
      return yield* Effect.die(
        new Error(
          `${describeFailure(first, variant)}\n${failed.length} of ${seeds.length} seeds failed; other failing seeds:\n${others.join("\n")}`,
        ),
      )
    }
    if (seeds.length > 0) expect(checks).toBeGreaterThan(seeds.length)
  })

/** The tests of shard `shard`: its slice of each variant's seeds, skipped while `SIM_SEED` replays one. */
export const shardTest = (shard: number) => {
  it.effect.skipIf(replaySeed() !== undefined)(
    `keeps the alarm invariants over seeded runs with evictions, failures and pauses (shard ${shard}/${SHARDS})`,
    () => runSeeds(`simulation shard ${shard}/${SHARDS}`, shardSeeds(shard), false),
    600_000,
  )
  it.effect.skipIf(replaySeed() !== undefined)(
    `keeps them with several heads per event (shard ${shard}/${SHARDS})`,
    () =>
      runSeeds(
        `simulation shard ${shard}/${SHARDS}, multi-head`,
        shardSeeds(shard, "multi-head"),
        false,
        "multi-head",
      ),
    600_000,
  )
}
