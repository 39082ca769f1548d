/**
 * `npm start` after a partial kill. `kill -9` of the dev server's Node processes alone (start.mjs
 * and wrangler, not workerd) leaves its workerd serving the old state and holding the port, so a
 * plain restart would fail with "Address already in use": the next start stops what the killed
 * one left, then serves the same state. `kill -9` of npm alone (a tool killing the command it
 * spawned) takes the server down with it, and so do `kill -9` of the start script alone and the
 * death of either of its runtimes (the workerd serving its port, the one running the Objects). A
 * second start over the same state is refused while the first serves it. Linux only (process
 * groups, /proc).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import { tempDir } from "./support/tempDir.ts"

const root = fileURLToPath(new URL("../../", import.meta.url))

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** The processes of group `group`: pid and command name. */
const groupMembers = (group: number) =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
        const state = fields[0]
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))
        return Number(fields[2]) === group && state !== "Z" ? [{ pid: Number(pid), name }] : []
      } catch {
        return []
      }
    })

const running = (pid: number) => {
  try {
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ")
  } catch {
    return false
  }
}

/** Where a test serves: a state folder of its own and a free port. */
interface Place {
  readonly persistTo: string
  readonly port: number
  /** The status `path` answers with (0: nothing answers). */
  readonly answers: (path?: string) => Promise<number>
}

const place = (label: string) =>
  Effect.gen(function* () {
    const persistTo = yield* tempDir(label)
    const port = yield* Effect.promise(freePort)
    const answers = async (path = "/relay") => {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`)
        await response.text()
        return response.status
      } catch {
        return 0
      }
    }
    return { persistTo, port, answers } satisfies Place
  })

/**
 * Runs `npm start`'s script (through `npm start` itself with `viaNpm`) in a process group of its
 * own, killed when the test ends; its output is collected.
 */
const launch = (at: Place, viaNpm = false) =>
  Effect.gen(function* () {
    const [command, args] = viaNpm
      ? ["npm", ["start"]]
      : [process.execPath, ["examples/refund-desk/start.mjs"]]
    const child = spawn(command, args, {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PORT: String(at.port), PERSIST_TO: at.persistTo },
    })
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
        } catch {
          // Already gone.
        }
      }),
    )
    let output = ""
    child.stdout?.on("data", (chunk) => (output += String(chunk)))
    child.stderr?.on("data", (chunk) => (output += String(chunk)))
    return { child, group: child.pid ?? 0, output: () => output }
  })

const until = (what: string, done: () => Promise<boolean> | boolean, millis = 60_000) =>
  Effect.promise(async () => {
    const deadline = Date.now() + millis
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`${what}: not within ${millis} ms`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  })

const serves = (at: Place, what: string) => until(what, async () => (await at.answers()) === 200)

describe.skipIf(process.platform !== "linux")("npm start after a kill", () => {
  it.live(
    "stops the workerd a killed dev server left serving, then serves the same state",
    () =>
      Effect.gen(function* () {
        const at = yield* place("start-restart")
        const first = yield* launch(at)
        yield* serves(at, "the first start serves")
        const receipt = yield* Effect.promise(async () => {
          const response = await fetch(`http://127.0.0.1:${at.port}/threads/desk-restart/submissions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ idempotencyKey: "restart-1", input: { orderId: "R1", amount: 10 } }),
          })
          return (await response.json()) as { submissionId: string }
        })

        // kill -9 of every process of the server but workerd: its workerd keeps serving.
        const left = groupMembers(first.group).filter((member) => member.name === "workerd")
        expect(left.length).toBeGreaterThan(0)
        for (const member of groupMembers(first.group).filter((member) => member.name !== "workerd"))
          process.kill(member.pid, "SIGKILL")
        yield* until("the Node processes are gone", () => !running(first.group))
        expect(yield* Effect.promise(() => at.answers())).toBe(200)

        const second = yield* launch(at)
        yield* until("the second start stops what the first left", () =>
          second.output().includes("that a killed dev server left running"),
        )
        expect(left.filter((member) => running(member.pid))).toEqual([])
        yield* serves(at, "the second start serves")
        // The same state: the Submission accepted before the kill is there.
        expect(
          yield* Effect.promise(() =>
            at.answers(`/threads/desk-restart/submissions/${receipt.submissionId}`),
          ),
        ).toBe(200)
        expect(second.output()).not.toContain("Address already in use")
      }),
    120_000,
  )

  it.live(
    "takes its server down when npm start alone is killed, so the next one serves",
    () =>
      Effect.gen(function* () {
        const at = yield* place("start-npm-kill")
        const first = yield* launch(at, true)
        yield* serves(at, "the first start serves")
        // What killing the command a tool spawned does: SIGKILL to npm's process alone.
        first.child.kill("SIGKILL")
        yield* until("the server is down", async () => (await at.answers()) === 0, 10_000)
        yield* until("no process of it is left", () => groupMembers(first.group).length === 0, 10_000)
        const second = yield* launch(at, true)
        yield* serves(at, "the second start serves")
        expect(second.output()).not.toContain("Address already in use")
      }),
    120_000,
  )

  it.live(
    "ends when the workerd serving its port is killed, so the next start serves",
    () =>
      Effect.gen(function* () {
        const at = yield* place("start-workerd-kill")
        const first = yield* launch(at)
        yield* serves(at, "the first start serves")
        // The process a tool finds behind the port: the workerd whose entry socket is on it.
        const serving = groupMembers(first.group).filter(
          (member) =>
            member.name === "workerd" &&
            readFileSync(`/proc/${member.pid}/cmdline`, "utf8").includes(`:${at.port}\0`),
        )
        expect(serving.length).toBe(1)
        for (const member of serving) process.kill(member.pid, "SIGKILL")
        yield* until("the dev server ends", () => groupMembers(first.group).length === 0, 15_000)
        yield* launch(at)
        yield* serves(at, "the second start serves")
      }),
    120_000,
  )

  it.live(
    "ends when the workerd that runs the Objects is killed, so the next start serves",
    () =>
      Effect.gen(function* () {
        const at = yield* place("start-objects-kill")
        const first = yield* launch(at)
        yield* serves(at, "the first start serves")
        // What an out-of-memory kill picks: the runtime not on the port, the one with the Objects.
        const objects = groupMembers(first.group).filter(
          (member) =>
            member.name === "workerd" &&
            !readFileSync(`/proc/${member.pid}/cmdline`, "utf8").includes(`:${at.port}\0`),
        )
        expect(objects.length).toBe(1)
        for (const member of objects) process.kill(member.pid, "SIGKILL")
        yield* until("the dev server ends", () => groupMembers(first.group).length === 0, 15_000)
        yield* launch(at)
        yield* serves(at, "the second start serves")
      }),
    120_000,
  )

  it.live(
    "takes its server down when its start script alone is killed",
    () =>
      Effect.gen(function* () {
        const at = yield* place("start-script-kill")
        const first = yield* launch(at)
        yield* serves(at, "the first start serves")
        // The start script is the group's leader here: kill -9 of it alone, not of its group.
        first.child.kill("SIGKILL")
        yield* until("the server is down", async () => (await at.answers()) === 0, 10_000)
        yield* until("no process of it is left", () => groupMembers(first.group).length === 0, 10_000)
      }),
    120_000,
  )

  it.live(
    "serves when started while the previous server over the same state is still ending",
    () =>
      Effect.gen(function* () {
        const at = yield* place("start-while-ending")
        const first = yield* launch(at)
        yield* serves(at, "the first start serves")
        // The first is ending but not gone yet (held still here: a shutdown that takes its time,
        // as a SIGTERM'd server under load does) when the next start runs; then it is gone.
        process.kill(-first.group, "SIGSTOP")
        const second = yield* launch(at)
        yield* Effect.sleep(1_500)
        process.kill(-first.group, "SIGKILL")
        yield* until("the first is gone", () => groupMembers(first.group).length === 0, 10_000)
        yield* serves(at, "the second start serves")
        expect(second.output()).toContain("still runs: waiting")
        expect(second.output()).not.toContain("stop it first")
        expect(running(second.group)).toBe(true)
      }),
    120_000,
  )

  it.live(
    "refuses a second start over the same state while the first serves it",
    () =>
      Effect.gen(function* () {
        const at = yield* place("start-twice")
        yield* launch(at)
        yield* serves(at, "the first start serves")
        const otherPort = yield* Effect.promise(freePort)
        const second = yield* launch({ ...at, port: otherPort })
        const code = yield* Effect.promise(
          () => new Promise<number | null>((resolve) => second.child.once("exit", resolve)),
        )
        expect(code).toBe(1)
        expect(second.output()).toContain("another npm start serves the state")
        const otherAnswers = yield* Effect.promise(() =>
          fetch(`http://127.0.0.1:${otherPort}/relay`).then(
            (response) => response.status,
            () => 0,
          ),
        )
        expect(otherAnswers).toBe(0)
        expect(yield* Effect.promise(() => at.answers())).toBe(200)
      }),
    120_000,
  )
})
