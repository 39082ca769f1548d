/**
 * Bundles a Worker entry the way `wrangler deploy` does (a dry run into a temporary folder) and
 * runs it in Miniflare from Node over a persist folder that outlives each runtime.
 */
import { execFile } from "node:child_process"
import { mkdtemp, readFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { Miniflare } from "miniflare"

const project = new URL("../../", import.meta.url).pathname

/** A temporary folder. */
export const tempDir = (label: string) => mkdtemp(join(tmpdir(), `consumer-${label}-`))

/** `wrangler deploy --dry-run --outdir` of `entry` (the config's `main` when omitted); the bundle's path. */
export const bundle = async (config: string, entry?: string): Promise<string> => {
  const outdir = await tempDir("bundle")
  await promisify(execFile)(
    "npx",
    [
      "wrangler",
      "deploy",
      "--dry-run",
      "--outdir",
      outdir,
      "-c",
      config,
      ...(entry === undefined ? [] : [entry]),
    ],
    { cwd: project, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  )
  const main = entry === undefined ? "worker.js" : `${entry.split("/").pop()?.replace(/\.ts$/, "")}.js`
  return join(outdir, main)
}

/** A bundled Worker run by Miniflare with its SQLite-backed `THREADS` Objects persisted in `persistDir`. */
export const startWorker = async (script: string, persistDir: string): Promise<Miniflare> => {
  const mf = new Miniflare({
    modules: true,
    script: await readFile(script, "utf8"),
    compatibilityDate: "2026-04-20",
    compatibilityFlags: ["nodejs_compat"],
    durableObjects: { THREADS: { className: "Threads", useSQLite: true } },
    durableObjectsPersist: persistDir,
  })
  await mf.ready
  return mf
}
