/** Shard 2 of the seeded maintenance simulation (`batch.ts`), a file of its own to run on another core. */
import { describe } from "@effect/vitest"
import { shardTest } from "./batch.ts"

describe("maintenance simulation", () => {
  shardTest(2)
})
