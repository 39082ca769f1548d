/**
 * Figures of paired runs: two variants measured at the same time, each pinned to a core of its
 * own and swapping cores every round. A core can be steadily faster than the other (here by up
 * to a tenth), so a round's ratio carries the core's bias; the geometric mean of two consecutive
 * rounds, one on each core, cancels it.
 */

/** Median (upper middle), least and greatest of `values`. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

export const spread = (values: ReadonlyArray<number>): Spread => {
  if (values.length === 0) throw new Error("a spread of no values")
  const sorted = [...values].sort((a, b) => a - b)
  return { median: sorted[Math.floor(sorted.length / 2)]!, min: sorted[0]!, max: sorted[sorted.length - 1]! }
}

/**
 * The geometric mean of each pair of consecutive ratios (rounds 1 and 2, 3 and 4, …), the two
 * rounds of a pair having run with the cores swapped; an odd last round has no partner and is
 * left out.
 */
export const swapPairMeans = (ratios: ReadonlyArray<number>): ReadonlyArray<number> => {
  const means: Array<number> = []
  for (let index = 0; index + 1 < ratios.length; index += 2)
    means.push(Math.sqrt(ratios[index]! * ratios[index + 1]!))
  return means
}

/** `median (min–max)` at `digits` decimals. */
export const formatSpread = ({ median, min, max }: Spread, digits = 3): string =>
  `${median.toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})`
