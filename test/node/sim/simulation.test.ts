/**
 * A deterministic simulation of the maintenance subsystem: the real `ThreadMaintenance` and
 * durable runtime over an in-memory storage-and-alarm port that behaves like workerd, driven
 * by seeded actions and failpoints in virtual time, with the invariants of maintenance
 * (`invariants.ts` names each one) checked after every step.
 *
 * This file runs shard 1 of the seeded batch (`batch.ts`; the other shards have files of their
 * own) and replays single seeds: `SIM_SEED=<n>` runs one seed here and prints its full trace
 * (every failpoint hit and storage commit). `SIM_RUNS=<n>` and `SIM_BASE=<n>` set the range of
 * the whole batch (run `test/node/sim/` for all of it). A failure names its seed, its
 * violations and the tail of its trace.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { isolated, replaySeed, runSeeds, shardTest } from "./batch.ts"

/** The trace without its accidental content: random (or randomly salted) ids and fiber numbers. */
const normalize = (trace: ReadonlyArray<string>) => {
  const ids = new Map<string, string>()
  return trace.map((line) =>
    line
      .replace(/sub-[0-9a-f]{40}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
        let name = ids.get(id)
        if (name === undefined) {
          name = `id${ids.size + 1}`
          ids.set(id, name)
        }
        return name
      })
      .replace(/#\d{3,}/g, "#fiber")
      .replace(/fiber \(#\d+\)/g, "fiber (#fiber)"),
  )
}

describe("maintenance simulation", () => {
  shardTest(1)

  const seed = replaySeed()
  it.effect.skipIf(seed === undefined)(
    "replays the seed SIM_SEED names with its full trace",
    () => runSeeds("simulation replay", seed === undefined ? [] : [seed], true),
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
