/**
 * Seeded chaos in real workerd: several lanes in one Object, rounds of random {kill the
 * incarnation (`ctx.abort()`), wait for an alarm delivery, mutate, let time pass}; each run
 * converges and matches a control that replays its mutations with no kill.
 *
 * Each seed runs with one head per alarm event (the default) and, for the first two seeds (all
 * of them with `CHAOS_MULTI_SEEDS=all`), with four. Reproduce a run with `CHAOS_SEED=<seed>`;
 * `CHAOS_SEEDS=a,b,c` and `CHAOS_ROUNDS=n` set the lanes of a longer soak (`npm run soak`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runChaos, runControl } from "./support/chaos.ts"
import { crashDriver } from "./support/crashDriver.ts"
import {
  invariantViolations,
  normalizedHistory,
  statesOf,
  supplierCounts,
  unknownOutcomes,
} from "./support/crashEvidence.ts"

const seedsFromEnv = (): ReadonlyArray<number> => {
  const single = process.env["CHAOS_SEED"]
  if (single !== undefined && single !== "") return [Number(single)]
  const list = process.env["CHAOS_SEEDS"]
  if (list !== undefined && list !== "") return list.split(",").map(Number)
  return [20260813, 7, 4242]
}

const seeds = seedsFromEnv()
const rounds = Number(process.env["CHAOS_ROUNDS"] ?? 150)
const equal = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** The multi-head variant runs the first two seeds in `npm test`; `npm run soak` runs them all. */
const multiHeadSeeds = process.env["CHAOS_MULTI_SEEDS"] === "all" ? seeds : seeds.slice(0, 2)
const MULTI_HEADS = 4

const chaosRun = (seed: number, maxHeadsPerEvent: number | undefined) =>
  Effect.gen(function* () {
    const variant = maxHeadsPerEvent === undefined ? "" : `-heads-${maxHeadsPerEvent}`
    const driver = yield* crashDriver(
      `chaos-${seed}${variant}`,
      maxHeadsPerEvent === undefined ? {} : { maxHeadsPerEvent },
    )
    const chaos = yield* runChaos(driver, `chaos ${seed}${variant}`, seed, rounds)
    const control = yield* runControl(driver, `control ${seed}${variant}`, chaos.run.mutations)
    const problems: Array<string> = [
      ...invariantViolations(chaos.final).map((p) => `chaos: ${p}`),
      ...invariantViolations(control).map((p) => `control: ${p}`),
    ]
    if (!equal(statesOf(chaos.final), statesOf(control)))
      problems.push(`states ${JSON.stringify(statesOf(chaos.final))} != ${JSON.stringify(statesOf(control))}`)
    const history = normalizedHistory(chaos.final)
    const reference = normalizedHistory(control)
    for (const key of new Set([...Object.keys(history), ...Object.keys(reference)]))
      if (!equal(history[key], reference[key]))
        problems.push(`${key}: ${JSON.stringify(history[key])} != control ${JSON.stringify(reference[key])}`)
    if (!equal(supplierCounts(chaos.final, "charge"), supplierCounts(control, "charge")))
      problems.push("charges differ from the control")
    console.log(
      JSON.stringify({
        ...chaos.run,
        mutations: chaos.run.mutations.length,
        unknownOutcomes: unknownOutcomes(chaos.final),
        problems: problems.length,
      }),
    )
    return problems.map((problem) => `seed ${seed}${variant} (reproduce: CHAOS_SEED=${seed}): ${problem}`)
  })

// One workerd per seed, so seeds run side by side.
describe.concurrent("seeded chaos", () => {
  for (const seed of seeds) {
    it.live(
      `seed ${seed}: ${rounds} rounds converge and match the control (CHAOS_SEED=${seed})`,
      () => Effect.map(chaosRun(seed, undefined), (problems) => expect(problems).toEqual([])),
      // About a second per round at most, for long soaks.
      Math.max(300_000, rounds * 1_000),
    )
  }
  for (const seed of multiHeadSeeds) {
    it.live(
      `seed ${seed}, ${MULTI_HEADS} heads per event: ${rounds} rounds converge and match the control (CHAOS_SEED=${seed})`,
      () => Effect.map(chaosRun(seed, MULTI_HEADS), (problems) => expect(problems).toEqual([])),
      Math.max(300_000, rounds * 1_000),
    )
  }
})
