/**
 * Bundles a Worker entry into one ES module for Miniflare with esbuild. Host modules
 * (`cloudflare:*`, `node:*`) stay external; `workerd`/`worker` export conditions pick the
 * Worker builds of dependencies. Bundles are cached per entry for the life of the process.
 */
import { build } from "esbuild"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"

const cache = new Map<string, Promise<string>>()

const bundle = async (entry: string): Promise<string> => {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    external: ["cloudflare:*", "node:*"],
    logLevel: "silent",
  })
  const output = result.outputFiles[0]
  if (output === undefined) throw new Error(`esbuild produced no output for ${entry}`)
  return output.text
}

/** The bundled source of the Worker entry at `entry` (a file URL or an absolute path). */
export const bundleWorker = (entry: URL | string): Effect.Effect<string> => {
  const path = entry instanceof URL ? fileURLToPath(entry) : entry
  return Effect.promise(() => {
    const cached = cache.get(path)
    if (cached !== undefined) return cached
    const pending = bundle(path)
    cache.set(path, pending)
    return pending
  })
}
