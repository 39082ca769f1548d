/**
 * The example Worker served by `wrangler dev` (as `npm start` runs it) over a persist folder, for
 * benches that kill the whole dev server: `stop` sends SIGKILL to its process group (wrangler's
 * Node process, esbuild and workerd, as `kill -9` of the server would), `start` runs the same
 * command again and returns once the Worker answers a request. Linux only (process groups and
 * `/proc` for CPU).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { Effect, Schema, type Scope } from "effect"

/** What to serve: a checkout (its root `wrangler.toml`), where storage lives, and the port. */
export interface DevServerSpec {
  readonly checkout: string
  readonly persistDir: string
  readonly port: number
  /** `--var` bindings, over the checkout's `.dev.vars`. */
  readonly vars?: Readonly<Record<string, string>>
  /** A path whose GET answers once the Worker serves (it may wake an Object). */
  readonly probe: string
}

/** A request body the bench sends. */
export interface JsonRequest {
  readonly method: string
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
}

/** A dev server that can be killed and started again over the same storage. */
export interface DevServer {
  readonly fetch: (path: string, init?: JsonRequest) => Effect.Effect<void>
  readonly json: <A>(schema: Schema.Decoder<A>, path: string) => Effect.Effect<A>
  /** SIGKILL to every process of the server; storage stays in the persist folder. */
  readonly stop: Effect.Effect<void>
  /** Starts the server and waits until `probe` answers; returns the milliseconds that took. */
  readonly start: Effect.Effect<number>
  /** CPU milliseconds so far: workerd's (user and system), its system part, and wrangler's own. */
  readonly cpu: () => ProcessCpu
}

/** CPU milliseconds of a server's processes. */
export interface ProcessCpu {
  readonly workerd: number
  readonly system: number
  readonly wrangler: number
}

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** The CPU milliseconds of the processes in group `group`, split into workerd and the rest. */
const groupCpu = (group: number): ProcessCpu => {
  let workerd = 0
  let system = 0
  let wrangler = 0
  for (const pid of readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      if (Number(fields[2]) !== group) continue
      // USER_HZ is 100 on Linux.
      const millis = (Number(fields[11]) + Number(fields[12])) * 10
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) === "workerd") {
        workerd += millis
        system += Number(fields[12]) * 10
      } else wrangler += millis
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return { workerd, system, wrangler }
}

/** Runs `wrangler dev` for `spec` and waits until it serves; the scope kills it. */
export const startDevServer = (spec: DevServerSpec): Effect.Effect<DevServer, never, Scope.Scope> =>
  Effect.gen(function* () {
    const base = `http://127.0.0.1:${spec.port}`
    let child: ChildProcess | undefined
    const kill = () => {
      if (child?.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL")
        } catch {
          // Already gone.
        }
      }
      child = undefined
    }
    yield* Effect.addFinalizer(() => Effect.sync(kill))
    // Started as `npm start` starts it: wrangler's entry run by Node.
    const wrangler = join(
      dirname(createRequire(join(spec.checkout, "package.json")).resolve("wrangler/package.json")),
      "bin/wrangler.js",
    )
    const vars = Object.entries(spec.vars ?? {}).flatMap(([key, value]) => ["--var", `${key}:${value}`])
    const launch = async () => {
      const startedAt = Date.now()
      child = spawn(
        process.execPath,
        [wrangler, "dev", "--persist-to", spec.persistDir, "--port", String(spec.port), ...vars],
        {
          cwd: spec.checkout,
          detached: true,
          stdio: "ignore",
          env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
        },
      )
      for (;;) {
        if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}`)
        // wrangler dev keeps running when the bundle fails to build, waiting for an edit.
        if (Date.now() - startedAt > 60_000)
          throw new Error(`wrangler dev in ${spec.checkout} did not serve in 60 s`)
        try {
          const response = await fetch(`${base}${spec.probe}`)
          await response.text()
          if (response.ok) return Date.now() - startedAt
        } catch {
          // Not listening yet.
        }
        await sleep(10)
      }
    }
    const call = async (path: string, init?: JsonRequest) => {
      const response = await fetch(`${base}${path}`, init)
      const text = await response.text()
      if (!response.ok) throw new Error(`${init?.method ?? "GET"} ${path}: ${response.status} ${text}`)
      return text
    }
    yield* Effect.promise(launch)
    return {
      fetch: (path, init) => Effect.asVoid(Effect.promise(() => call(path, init))),
      json: (schema, path) =>
        Effect.flatMap(
          Effect.promise(() => call(path)),
          (text) => Schema.decodeUnknownEffect(schema)(JSON.parse(text)).pipe(Effect.orDie),
        ),
      stop: Effect.sync(kill),
      start: Effect.promise(launch),
      cpu: () => (child?.pid === undefined ? { workerd: 0, system: 0, wrangler: 0 } : groupCpu(child.pid)),
    } satisfies DevServer
  })
