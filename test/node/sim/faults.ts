/**
 * Seeded faults at failpoints: each hit of a maintenance or runtime failpoint may evict the
 * incarnation, fail (a typed runtime failure, a defect in maintenance) or pause until the
 * driver releases it. A run draws its own rate and mix; calm runs inject nothing.
 */
import type { Rng } from "./random.ts"

/** What a failpoint hit does. */
export type Fault = "none" | "evict" | "fail" | "pause"

/** The faults of one run. */
export interface FaultPlan {
  /** Decides the fault of one hit; `pausedNow` bounds the pauses held at once. */
  readonly decide: (location: string, pausedNow: number) => Fault
  /**
   * How long (virtual ms) a reset incarnation's in-flight Attempt may go on writing to the
   * ledger and history (see `Holder.storesAlive`); 0 for a plain reset.
   */
  readonly zombie: () => number
  /** Stops injecting: the run is converging. */
  readonly calm: () => void
  readonly describe: () => string
}

const MAX_PAUSES = 3

/** Where a pass is held in race runs: between its snapshots, so mutations land in between. */
const passSteps = new Set([
  "maintenance:begin:after",
  "maintenance:select:before",
  "maintenance:select:after",
  "maintenance:binding-retry:before",
  "maintenance:finish:before",
  "maintenance:finish:after",
  "maintenance:mutation:armed",
  "maintenance:mutation:finished",
])

/** The faults of one run, drawn from `rng`. */
export const makeFaultPlan = (rng: Rng): FaultPlan => {
  const rate = rng.pick([0, 0.005, 0.02, 0.05, 0.1])
  const mix = { evict: rng.int(1, 4), fail: rng.int(1, 4), pause: rng.int(0, 3) }
  // Some runs aim only at maintenance, some only at the runtime; race runs hold passes and
  // mutations between their durable steps, so that the other side commits in between.
  const target = rng.pick(["all", "all", "maintenance", "runtime", "race", "race"] as const)
  // Some runs let a reset incarnation's Attempt go on writing after the next one took over.
  const zombieWindow = rng.pick([0, 0, 0, 1_000, 10_000])
  let calm = false
  return {
    decide: (location, pausedNow) => {
      if (calm) return "none"
      if (target === "race") {
        return passSteps.has(location) && pausedNow < MAX_PAUSES && rng.chance(0.25) ? "pause" : "none"
      }
      if (rate === 0) return "none"
      const maintenance = location.startsWith("maintenance:")
      if ((target === "maintenance" && !maintenance) || (target === "runtime" && maintenance)) return "none"
      if (!rng.chance(rate)) return "none"
      const fault = rng.weighted(mix)
      return fault === "pause" && pausedNow >= MAX_PAUSES ? "none" : fault
    },
    zombie: () => (calm ? 0 : zombieWindow),
    calm: () => {
      calm = true
    },
    describe: () =>
      (target === "race"
        ? "race: passes and mutations held at their steps"
        : `rate ${rate}, ${target}, mix ${JSON.stringify(mix)}`) +
      (zombieWindow > 0 ? `; zombies for ${zombieWindow} ms` : ""),
  }
}
