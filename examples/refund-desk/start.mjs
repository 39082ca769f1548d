// `npm start`: serves the example Worker of the root wrangler.toml with wrangler's embedded
// workerd and local SQLite persistence under .wrangler/state (no account, no network), after a
// short guide.
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdirSync, renameSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { createServer } from "node:net"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { descendants, npmAncestor, read, statOf, stopLeft } from "./processes.mjs"

const port = process.env.PORT ?? "8787"
// Where the Objects' storage lives; a test points it at a folder of its own.
const persistTo = process.env.PERSIST_TO ?? ".wrangler/state"
const base = `http://localhost:${port}`
console.log(`
effect-agent refund desk example
  submit:    curl -s -X POST ${base}/threads/desk-1/submissions -d '{"input":{"orderId":"A1","amount":40}}'
  status:    curl -s ${base}/threads/desk-1/submissions/<submissionId>
  approve:   curl -s -X POST ${base}/threads/desk-1/submissions/<submissionId>/approve \\
               -H "Authorization: Bearer dev-operator-token" -d '{"note":"ok by Sam"}'
  why:       curl -s ${base}/threads/desk-1/submissions/<submissionId>/explain
  console:   ${base}/console   (operator token: dev-operator-token)
  history:   curl -s ${base}/threads/desk-1/history
  relay:     curl -s ${base}/relay
  (see README.md, "Quick start", for the full round trip)
`)

// What follows keeps a killed server from lingering. It reads /proc: Linux only.
const tracking = process.platform === "linux"

// One start per state: two runtimes over one state fail each other's writes ("database is
// locked"). The lock is an abstract socket named after the state folder, which the kernel
// releases when this process ends, however it ends. A start run while the last one is still
// ending (a restart right after a SIGTERM, or after a kill of npm alone) waits for it a while
// rather than refusing and leaving nothing to serve.
const lockWaitMillis = 10_000
const locked = (name) =>
  new Promise((done) => {
    const lock = createServer()
    lock.once("error", () => done(false))
    lock.listen(name, () => {
      lock.unref()
      done(true)
    })
  })
if (tracking) {
  const digest = createHash("sha256").update(resolve(persistTo)).digest("hex").slice(0, 32)
  const lock = `\0effect-agent-npm-start-${digest}`
  let held = await locked(lock)
  if (!held)
    console.log(
      `an npm start over ${persistTo} still runs: waiting up to ${lockWaitMillis / 1_000} s for it to end`,
    )
  for (const until = Date.now() + lockWaitMillis; !held && Date.now() < until;) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    held = await locked(lock)
  }
  if (!held) {
    console.error(
      `another npm start serves the state in ${persistTo}: stop it first, or give this one a PERSIST_TO of its own`,
    )
    process.exit(1)
  }
}

// `kill -9` of wrangler's own process (not of the whole process group) can leave its workerd
// running: it keeps serving the old state and holds the port, so the next start would fail with
// "Address already in use". So a start keeps a list of the processes wrangler started (pid and
// start time) beside the state; when wrangler ends it stops what is left of them, and the next
// start stops what a start killed with it left.
const runFile = join(persistTo, "npm-start.json")
if (tracking) {
  let last = {}
  try {
    last = JSON.parse(read(runFile) ?? "{}")
  } catch {
    // Not a list this script wrote whole: nothing to stop.
  }
  await stopLeft(last.server ?? [], "that a killed dev server left running")
  mkdirSync(persistTo, { recursive: true })
}

// wrangler's own entry run by this Node, not `npx wrangler`: npx costs a third of a second of
// every start (and every restart after a crash) before wrangler even loads. Its Node processes
// end with their parent (endsWithParent.mjs), so `kill -9` of this script alone stops them too.
const wrangler = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin/wrangler.js",
)
const endsWithParent = fileURLToPath(new URL("./endsWithParent.mjs", import.meta.url))
const child = spawn(
  process.execPath,
  [
    ...(tracking ? ["--import", endsWithParent] : []),
    wrangler,
    "dev",
    "--persist-to",
    persistTo,
    "--port",
    port,
  ],
  {
    stdio: "inherit",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
  },
)
// Every process wrangler started that still runs, kept once seen: a workerd whose wrangler was
// killed is no longer below it, and is what most needs stopping.
let server = []
const track = () => {
  const still = server.filter((entry) => statOf(entry.pid)?.start === entry.start)
  const self = statOf(child.pid)
  const seen =
    self === undefined
      ? []
      : [{ pid: child.pid, name: self.name, start: self.start }, ...descendants(child.pid)]
  const now = [...still, ...seen.filter((entry) => !still.some((known) => known.pid === entry.pid))]
  if (JSON.stringify(now) === JSON.stringify(server)) return seen
  server = now
  // Written aside and renamed: a kill mid-write leaves the last whole list.
  writeFileSync(`${runFile}.next`, JSON.stringify({ pid: process.pid, server }))
  renameSync(`${runFile}.next`, runFile)
  return seen
}
// The server lives as long as the `npm start` that launched it: npm runs this script through a
// shell, so `kill -9` of npm alone (what killing the command a tool spawned does) would leave the
// shell, this script and the server running, holding the port. Once npm is gone, so is the server.
const launcher = tracking ? npmAncestor() : undefined
// A server one of whose runtimes died (killed, or crashed: the workerd on the port, or the one
// that runs the Objects) serves nothing, and wrangler does not start it again: it ends, so that
// the next start finds the port free and nothing left. A reload replaces them within this grace.
let runtimes = 0
let runtimeMissingSince
const watch = () => {
  const seen = track()
  if (launcher !== undefined && statOf(launcher.pid)?.start !== launcher.start)
    return void child.kill("SIGKILL")
  const live = seen.filter((entry) => entry.name === "workerd").length
  if (live >= runtimes) {
    runtimes = live
    runtimeMissingSince = undefined
  } else if (Date.now() - (runtimeMissingSince ??= Date.now()) > 3_000) child.kill("SIGKILL")
}
const tracker = tracking ? setInterval(watch, 250) : undefined
child.on("exit", (code) => {
  clearInterval(tracker)
  void stopLeft(server, "that the dev server left when it ended").finally(() => process.exit(code ?? 1))
})
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal))
