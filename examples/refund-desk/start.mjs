// `npm start`: serves the example Worker of the root wrangler.toml with wrangler's embedded
// workerd and local SQLite persistence under .wrangler/state (no account, no network), after a
// short guide.
import { spawn } from "node:child_process"
import { mkdirSync, renameSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
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

// `kill -9` of wrangler's own process (not of the whole process group) leaves its workerd
// running: it keeps serving the old state and holds the port, so the next start would fail with
// "Address already in use". So a start keeps a list of the processes wrangler started (pid and
// start time, from /proc: Linux only) beside the state; when wrangler ends it stops what is left
// of them, and the next start stops what a start killed with it left.
const runFile = join(persistTo, "npm-start.json")

const tracking = process.platform === "linux"
// Whether this start keeps the list: not while an earlier start still runs over this state.
let keepsList = tracking
/** The earlier start this one waits on to keep the list, while it runs. */
let earlier
const startRuns = (pid) => pid !== process.pid && (read(`/proc/${pid}/cmdline`) ?? "").includes("start.mjs")
if (tracking) {
  let last = {}
  try {
    last = JSON.parse(read(runFile) ?? "{}")
  } catch {
    // Not a list this script wrote whole: nothing to stop.
  }
  // A start that still runs serves this state: it is not this one's to stop.
  if (startRuns(last.pid)) {
    keepsList = false
    earlier = last.pid
  } else await stopLeft(last.server ?? [], "that a killed dev server left running")
  mkdirSync(persistTo, { recursive: true })
}

// wrangler's own entry run by this Node, not `npx wrangler`: npx costs a third of a second of
// every start (and every restart after a crash) before wrangler even loads.
const wrangler = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin/wrangler.js",
)
const child = spawn(process.execPath, [wrangler, "dev", "--persist-to", persistTo, "--port", port], {
  stdio: "inherit",
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
})
// Every process wrangler started that still runs, kept once seen: a workerd whose wrangler was
// killed is no longer below it, and is what most needs stopping.
let server = []
const track = () => {
  const takesOver = !keepsList && earlier !== undefined && !startRuns(earlier)
  if (takesOver) keepsList = true
  const still = server.filter((entry) => statOf(entry.pid)?.start === entry.start)
  const self = statOf(child.pid)
  const seen =
    self === undefined
      ? []
      : [{ pid: child.pid, name: self.name, start: self.start }, ...descendants(child.pid)]
  const now = [...still, ...seen.filter((entry) => !still.some((known) => known.pid === entry.pid))]
  if (!takesOver && JSON.stringify(now) === JSON.stringify(server)) return seen
  server = now
  if (!keepsList) return seen
  // Written aside and renamed: a kill mid-write leaves the last whole list.
  writeFileSync(`${runFile}.next`, JSON.stringify({ pid: process.pid, server }))
  renameSync(`${runFile}.next`, runFile)
  return seen
}
// The server lives as long as the `npm start` that launched it: npm runs this script through a
// shell, so `kill -9` of npm alone (what killing the command a tool spawned does) would leave the
// shell, this script and the server running, holding the port. Once npm is gone, so is the server.
const launcher = tracking ? npmAncestor() : undefined
// A server whose workerd on the port died (killed, or crashed) serves nothing, and wrangler does
// not start it again: it ends, so that the next start finds the port free and nothing left.
const onPort = new RegExp(`entry=[^\\0]*:${port}\\0`)
let runtimeSeen = false
let runtimeMissingSince
const watch = () => {
  const seen = track()
  if (launcher !== undefined && statOf(launcher.pid)?.start !== launcher.start)
    return void child.kill("SIGKILL")
  const serving = seen.some(
    (entry) => entry.name === "workerd" && onPort.test(read(`/proc/${entry.pid}/cmdline`) ?? ""),
  )
  if (serving) {
    runtimeSeen = true
    runtimeMissingSince = undefined
  } else if (runtimeSeen && Date.now() - (runtimeMissingSince ??= Date.now()) > 3_000) child.kill("SIGKILL")
}
const tracker = tracking ? setInterval(watch, 250) : undefined
child.on("exit", (code) => {
  clearInterval(tracker)
  void stopLeft(server, "that the dev server left when it ended").finally(() => process.exit(code ?? 1))
})
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal))
