/**
 * `npx tsx bench/bundle.ts`: bundles the consumer project's Worker (examples/consumer) with
 * esbuild, minified, the library taken from this repository's `src/` through the package's
 * subpath exports, and prints its size, its gzipped size (Node's zlib, level 9) and how much of
 * it is the library, Effect and the rest. The shares are of the minified bytes (esbuild's
 * metafile); gzip does not split by input.
 */
import { build, type Metafile, type Plugin } from "esbuild"
import { readFile } from "node:fs/promises"
import { dirname, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const entry = resolve(root, "examples/consumer/src/worker.ts")
const packageName = "@effect-agent/platform-cloudflare"

type Exports = Record<string, string | { readonly default: string }>

/** Resolves the package's subpaths to their sources, as the built package maps them to `dist/`. */
const librarySources = (exports: Exports): Plugin => ({
  name: "library-sources",
  setup: (plugin) => {
    plugin.onResolve({ filter: new RegExp(`^${packageName}(/.*)?$`) }, (args) => {
      const subpath = `.${args.path.slice(packageName.length)}`
      const target = exports[subpath]
      const file = typeof target === "string" ? target : target?.default
      if (file === undefined) return { errors: [{ text: `${args.path} is not exported` }] }
      return { path: resolve(root, file.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")) }
    })
  },
})

const partOf = (input: string): "library" | "effect" | "other" =>
  input.startsWith("src/") ? "library" : input.includes("node_modules/effect/") ? "effect" : "other"

const bundle = (plugins: ReadonlyArray<Plugin>) =>
  build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "import"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", "node:*"],
    metafile: true,
    write: false,
    absWorkingDir: root,
    logLevel: "silent",
    plugins: [...plugins],
  })

const main = async () => {
  const manifest = JSON.parse(await readFile(resolve(root, "package.json"), "utf8")) as {
    readonly exports: Exports
  }
  const result = await bundle([librarySources(manifest.exports)])
  const output = result.outputFiles[0]
  if (output === undefined) throw new Error("esbuild wrote no output")
  const meta: Metafile = result.metafile
  const parts = { library: 0, effect: 0, other: 0 }
  for (const out of Object.values(meta.outputs))
    for (const [input, { bytesInOutput }] of Object.entries(out.inputs))
      parts[partOf(relative(root, resolve(root, input)))] += bytesInOutput
  const bytes = output.contents.length
  const gzipped = gzipSync(output.contents, { level: 9 }).length
  const share = (part: number) => `${part} bytes (${((100 * part) / bytes).toFixed(1)} %)`
  console.log(`consumer Worker, minified: ${bytes} bytes, gzipped ${gzipped} bytes`)
  console.log(`  the library (src/): ${share(parts.library)}`)
  console.log(`  Effect: ${share(parts.effect)}`)
  console.log(`  the consumer's code and the rest: ${share(parts.other)}`)
}

await main()
