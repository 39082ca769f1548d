/**
 * A deterministic simulation of the maintenance subsystem: the real `ThreadMaintenance` and
 * durable runtime over an in-memory storage-and-alarm port that behaves like workerd, driven
 * by seeded actions and failpoints in virtual time, with the invariants of `maintenance.md` §7
 * checked after every step.
 *
 * `SIM_RUNS=<n>` sets how many seeds run (from `SIM_BASE`, default 1); `SIM_SEED=<n>` runs one
 * seed and prints its full trace (every failpoint hit and storage commit). A failure names its
 * seed, its violations and the tail of its trace.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { simulate, type RunReport } from "./driver.ts"
import { hosted } from "./harness.ts"

const env = (name: string): string | undefined =>
  (globalThis as { readonly process?: { readonly env?: Record<string, string | undefined> } }).process?.env?.[
    name
  ]

/** About 30 s on two cores; CI may raise it with `SIM_RUNS`. */
const DEFAULT_RUNS = 400
const options = { chaosSteps: [10, 150] as const, calmRounds: 600 }

/** One seeded run, isolated. */
const isolated = (seed: number, verbose: boolean): Effect.Effect<RunReport> =>
  hosted(seed, simulate(seed, { ...options, verbose }))

const describeFailure = (report: RunReport) =>
  [
    `simulation seed ${report.seed} broke ${report.violations.length} invariant(s) after ${report.steps} steps:`,
    ...report.violations.slice(0, 10).map((violation) => `  - ${violation}`),
    `trace (last 150 lines):`,
    ...report.trace.slice(-150),
    `reproduce: SIM_SEED=${report.seed} npx vitest run --project node test/node/sim/simulation.test.ts`,
  ].join("\n")

/** The trace without its accidental content: random ids and fiber numbers. */
const normalize = (trace: ReadonlyArray<string>) => {
  const ids = new Map<string, string>()
  return trace.map((line) =>
    line
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
        let name = ids.get(id)
        if (name === undefined) {
          name = `id${ids.size + 1}`
          ids.set(id, name)
        }
        return name
      })
      .replace(/#\d{3,}/g, "#fiber"),
  )
}

describe("maintenance simulation", () => {
  it.effect(
    "keeps the alarm invariants over seeded runs with evictions, failures and pauses",
    () =>
      Effect.gen(function* () {
        const single = env("SIM_SEED")
        const base = Number(env("SIM_BASE") ?? 1)
        const count = Number(env("SIM_RUNS") ?? DEFAULT_RUNS)
        const seeds =
          single === undefined ? Array.from({ length: count }, (_, index) => base + index) : [Number(single)]
        const started = performance.now()
        const failed: Array<RunReport> = []
        let steps = 0
        let checks = 0
        const totals: Record<string, number> = {}
        const kinds: Record<string, number> = {}
        for (const seed of seeds) {
          const report = yield* isolated(seed, single !== undefined)
          if (single !== undefined) console.log([...report.trace, JSON.stringify(report.stats)].join("\n"))
          steps += report.steps
          checks += report.checks
          for (const [key, value] of Object.entries(report.stats)) {
            if (typeof value === "number") totals[key] = (totals[key] ?? 0) + value
          }
          for (const [key, value] of Object.entries(report.checksByKind))
            kinds[key] = (kinds[key] ?? 0) + value
          if (report.violations.length > 0) failed.push(report)
        }
        const elapsed = Math.round(performance.now() - started)
        console.log(
          `simulation: ${seeds.length} runs, ${steps} steps, ${checks} invariant checks, ${failed.length} failed, in ${elapsed} ms\nevents ${JSON.stringify(totals)}\nchecks ${JSON.stringify(kinds)}`,
        )
        const first = failed[0]
        if (first !== undefined) {
          const others = failed.slice(1, 20).map((report) => `${report.seed}: ${report.violations[0] ?? ""}`)
          return yield* Effect.die(
            new Error(`${describeFailure(first)}\nother failing seeds:\n${others.join("\n")}`),
          )
        }
        expect(checks).toBeGreaterThan(seeds.length)
      }),
    600_000,
  )

  it.effect(
    "replays a seed step for step",
    () =>
      Effect.gen(function* () {
        for (const seed of [3, 17, 42]) {
          const first = yield* isolated(seed, true)
          const second = yield* isolated(seed, true)
          expect(second.trace.length).toBeGreaterThan(20)
          expect(normalize(second.trace)).toEqual(normalize(first.trace))
        }
      }),
    60_000,
  )
})
