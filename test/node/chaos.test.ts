/**
 * Seeded chaos in real workerd over two Objects: several lanes of orders and delegating desks
 * in one, the desks' children in the other, routed requests between them lost, duplicated,
 * delayed and reordered by a seeded network; rounds of random {kill either incarnation
 * (`ctx.abort()`), wait for an alarm delivery, mutate, let time pass}; each run converges and
 * matches a control pair that replays its mutations with no kill and no network fault, every
 * child linked to its desk and settled into it once.
 *
 * Each seed runs at the default configuration (several heads per alarm event) and, for the first
 * two seeds (all of them with `CHAOS_MULTI_SEEDS=all`), with beta.96's one head per event
 * (`BETA96_PACING`). Reproduce a run with `CHAOS_SEED=<seed>`;
 * `CHAOS_SEEDS=a,b,c` and `CHAOS_ROUNDS=n` set the lanes of a longer soak (`npm run soak`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BETA96_PACING } from "../../src/CloudflareConfig.ts"
import type { RawView } from "./fixtures/crashProtocol.ts"
import { childrenOf, runChaos, runControl } from "./support/chaos.ts"
import { crashDriver } from "./support/crashDriver.ts"
import {
  invariantViolations,
  linkViolations,
  normalizedHistory,
  statesOf,
  supplierCounts,
  unknownOutcomes,
  withParentKeys,
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
const ONE_HEAD = BETA96_PACING.maxHeadsPerEvent

/** The problems of one Object's final view against its control's. */
const compare = (label: string, view: RawView, control: RawView): Array<string> => {
  const problems: Array<string> = [
    ...invariantViolations(view).map((p) => `${label} chaos: ${p}`),
    ...invariantViolations(control).map((p) => `${label} control: ${p}`),
  ]
  if (!equal(statesOf(view), statesOf(control)))
    problems.push(`${label} states ${JSON.stringify(statesOf(view))} != ${JSON.stringify(statesOf(control))}`)
  const history = normalizedHistory(view)
  const reference = normalizedHistory(control)
  for (const key of new Set([...Object.keys(history), ...Object.keys(reference)]))
    if (!equal(history[key], reference[key]))
      problems.push(
        `${label} ${key}: ${JSON.stringify(history[key])} != control ${JSON.stringify(reference[key])}`,
      )
  if (!equal(supplierCounts(view, "charge"), supplierCounts(control, "charge")))
    problems.push(`${label}: charges differ from the control`)
  return problems
}

/** A view with its Object names (which differ from the control's) replaced by their roles. */
const anonymous = (name: string, view: RawView): RawView =>
  JSON.parse(JSON.stringify(view).replaceAll(childrenOf(name), "CHILDREN")) as RawView

const chaosRun = (seed: number, maxHeadsPerEvent: number | undefined) =>
  Effect.gen(function* () {
    const variant = maxHeadsPerEvent === undefined ? "" : `-heads-${maxHeadsPerEvent}`
    const driver = yield* crashDriver(
      `chaos-${seed}${variant}`,
      maxHeadsPerEvent === undefined ? {} : { maxHeadsPerEvent },
    )
    const name = `chaos ${seed}${variant}`
    const controlName = `control ${seed}${variant}`
    const chaos = yield* runChaos(driver, name, seed, rounds)
    const control = yield* runControl(driver, controlName, chaos.run.mutations)
    const problems: Array<string> = [
      ...compare("main", anonymous(name, chaos.final.main), anonymous(controlName, control.main)),
      ...compare(
        "children",
        withParentKeys(chaos.final.children, chaos.final.main),
        withParentKeys(control.children, control.main),
      ),
      ...linkViolations(chaos.final.main, chaos.final.children),
    ]
    console.log(
      JSON.stringify({
        ...chaos.run,
        mutations: chaos.run.mutations.length,
        delegated: chaos.run.mutations.filter((m) => m.op === "submit" && m.delegate === true).length,
        children: chaos.final.children.submissions.length,
        unknownOutcomes: unknownOutcomes(chaos.final.main) + unknownOutcomes(chaos.final.children),
        problems: problems.length,
      }),
    )
    // The network did get in the way (a run without routed requests would prove nothing).
    const { received, droppedRequests, droppedReplies, duplicated } = chaos.run.network
    if (received === 0 || droppedRequests + droppedReplies + duplicated === 0)
      problems.push(`the network injected no fault into ${received} routed requests`)
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
      `seed ${seed}, one head per event: ${rounds} rounds converge and match the control (CHAOS_SEED=${seed})`,
      () => Effect.map(chaosRun(seed, ONE_HEAD), (problems) => expect(problems).toEqual([])),
      Math.max(300_000, rounds * 1_000),
    )
  }
})
