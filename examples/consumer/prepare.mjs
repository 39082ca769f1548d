// Installs the library into this project the way an application gets it: `npm run build`, then
// `npm pack` into .pack/, then `npm ci` (the other dependencies come from the npm cache when
// it has them). The lockfile must not pin the tarball's integrity: each build differs, and npm
// would otherwise install a cached older tarball with the same name.
import { execFileSync } from "node:child_process"
import { mkdirSync, readFileSync, renameSync, rmSync } from "node:fs"

const root = new URL("../../", import.meta.url)
const here = new URL("./", import.meta.url)
const pack = new URL(".pack/", here)
const library = "node_modules/@effect-agent/platform-cloudflare"

const lock = JSON.parse(readFileSync(new URL("package-lock.json", here), "utf8"))
if (lock.packages?.[library]?.integrity !== undefined) {
  throw new Error(`examples/consumer/package-lock.json pins an integrity for ${library}: remove that field`)
}

const run = (command, args, cwd, capture = false) =>
  execFileSync(command, args, {
    cwd,
    stdio: capture ? ["ignore", "pipe", "inherit"] : "inherit",
    encoding: "utf8",
  })

run("npm", ["run", "build", "--silent"], root)
rmSync(pack, { recursive: true, force: true })
mkdirSync(pack)
const [packed] = JSON.parse(
  run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", pack.pathname], root, true),
)
renameSync(new URL(packed.filename, pack), new URL("platform-cloudflare.tgz", pack))
console.log(`packed ${packed.name}@${packed.version}: ${packed.entryCount} files, ${packed.size} bytes`)
run("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], here)
