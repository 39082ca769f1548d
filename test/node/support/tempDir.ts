/** A fresh folder under the project's `.tmp/` for one test or run, removed when its scope closes. */
import { Effect, type Scope } from "effect"
import { mkdir, mkdtemp, rm } from "node:fs/promises"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** `.tmp/node/` at the project root (gitignored). */
export const tempRoot = fileURLToPath(new URL("../../../.tmp/node/", import.meta.url))

/** Creates `.tmp/node/<label>-XXXXXX` and removes it with everything inside on scope close. */
export const tempDir = (label: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      await mkdir(tempRoot, { recursive: true })
      return mkdtemp(join(tempRoot, `${label}-`))
    }),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true })),
  )

/**
 * Creates `/dev/shm/<label>-XXXXXX` (memory, where an `fsync` costs nothing; Linux) and removes it
 * with everything inside on scope close.
 */
export const memoryDir = (label: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join("/dev/shm", `${label}-`))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true })),
  )
