/**
 * The driver's seeded choices: mulberry32, a small PRNG whose whole state is one 32-bit word,
 * so a run is reproduced from its seed alone. The code under test draws its own jitter from
 * Effect's `Random` service, seeded separately with the same seed.
 */

/** A seeded source of choices. */
export interface Rng {
  /** Uniform in [0, 1). */
  readonly next: () => number
  /** `true` with probability `p`. */
  readonly chance: (p: number) => boolean
  /** Uniform integer in [min, max]. */
  readonly int: (min: number, max: number) => number
  /** One element of a non-empty array. */
  readonly pick: <A>(items: ReadonlyArray<A>) => A
  /** One key chosen with probability proportional to its weight. */
  readonly weighted: <K extends string>(weights: Readonly<Record<K, number>>) => K
}

/** A PRNG seeded with `seed`. */
export const makeRng = (seed: number): Rng => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1))
  return {
    next,
    chance: (p) => next() < p,
    int,
    pick: (items) => {
      const item = items[int(0, items.length - 1)]
      if (item === undefined) throw new Error("pick from an empty array")
      return item
    },
    weighted: (weights) => {
      const entries = Object.entries(weights) as Array<[keyof typeof weights & string, number]>
      const total = entries.reduce((sum, [, weight]) => sum + weight, 0)
      let roll = next() * total
      for (const [key, weight] of entries) {
        roll -= weight
        if (roll < 0) return key
      }
      const last = entries[entries.length - 1]
      if (last === undefined) throw new Error("weighted choice without weights")
      return last[0]
    },
  }
}
