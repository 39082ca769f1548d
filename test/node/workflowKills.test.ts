/**
 * `effect/workflow` on Threads under `kill -9` of the whole dev server. A Worker with workflows
 * (fixtures/workflowKillWorker.ts: activities, `Activity.retry`, `ActivityRetry`, a durable clock,
 * a child workflow, a `DurableDeferred`, a `SuspendOnFailure` workflow) is served by `wrangler dev`
 * over a persist folder; many executions are started, and the server's process group is killed
 * with SIGKILL mid-load and started again, more than once. Every activity reports its runs to a
 * sink in the test process, outside workerd. Then: every execution completes once with its result,
 * no activity is lost (at-least-once), no clock is shortened, interrupted executions answer
 * interrupted and resumed ones complete. Linux only (process groups).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { tempDir } from "./support/tempDir.ts"

const root = fileURLToPath(new URL("../../", import.meta.url))
const JOBS = Number(process.env["WORKFLOW_KILL_JOBS"] ?? 16)
const FRAGILES = 6
const INTERRUPTS = 4
/** Executions interrupted while their child sleeps. */
const DEEP = 3
const SLEEP_MILLIS = 2_500
const MAX_KILLS = 7

interface Run {
  readonly executionId: string
  readonly name: string
  readonly attempt: number
  readonly at: number
}

const freePort = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resolve(typeof address === "object" && address !== null ? address.port : 0)
    }),
  )

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe.skipIf(process.platform !== "linux")("workflows under kill -9 of the dev server", () => {
  it.live(
    "completes every execution once, loses no activity, shortens no clock",
    () =>
      Effect.gen(function* () {
        const runs: Array<Run> = []
        const sink = createServer((request, response) => {
          let body = ""
          request.on("data", (chunk) => (body += String(chunk)))
          request.on("end", () => {
            const run = JSON.parse(body) as Run
            const before = runs.filter((r) => r.executionId === run.executionId && r.name === run.name).length
            runs.push(run)
            // A slow provider: a kill lands inside activities, between a run and its journal.
            setTimeout(() => response.end(String(before)), 20 + ((runs.length * 37) % 180))
          })
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => sink.close()))
        const sinkPort = yield* Effect.promise(() => freePort(sink))
        const port = yield* Effect.promise(async () => {
          const probe = createServer()
          const free = await freePort(probe)
          await new Promise((resolve) => probe.close(resolve))
          return free
        })
        const dir = yield* tempDir("workflow-kills")
        const config = join(dir, "wrangler.toml")
        writeFileSync(
          config,
          [
            `name = "workflow-kills"`,
            `main = "${join(root, "test/node/fixtures/workflowKillWorker.ts")}"`,
            `compatibility_date = "2026-04-20"`,
            `compatibility_flags = ["nodejs_compat"]`,
            `[[durable_objects.bindings]]`,
            `name = "THREADS"`,
            `class_name = "Threads"`,
            `[[migrations]]`,
            `tag = "v1"`,
            `new_sqlite_classes = ["Threads"]`,
          ].join("\n"),
        )
        const wrangler = join(
          dirname(createRequire(join(root, "package.json")).resolve("wrangler/package.json")),
          "bin/wrangler.js",
        )
        const base = `http://127.0.0.1:${port}`
        let child: ChildProcess | undefined
        let output = ""
        const killedAt: Array<number> = []
        const kill = () => {
          killedAt.push(Date.now())
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
        const start = Effect.promise(async () => {
          child = spawn(
            process.execPath,
            [
              wrangler,
              "dev",
              "--config",
              config,
              "--persist-to",
              join(dir, "state"),
              "--port",
              String(port),
              "--ip",
              "127.0.0.1",
              "--var",
              `SINK_URL:http://127.0.0.1:${sinkPort}`,
            ],
            {
              cwd: root,
              detached: true,
              stdio: ["ignore", "pipe", "pipe"],
              env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
            },
          )
          child.stdout?.on("data", (chunk) => (output += String(chunk)))
          child.stderr?.on("data", (chunk) => (output += String(chunk)))
          const startedAt = Date.now()
          for (;;) {
            if (Date.now() - startedAt > 60_000) throw new Error(`wrangler dev did not serve:\n${output}`)
            try {
              const response = await fetch(`${base}/ping`)
              await response.text()
              if (response.ok) return
            } catch {
              // Not listening yet.
            }
            await sleep(50)
          }
        })
        /** A call that a kill may cut: it is retried until the server answers. */
        const call = (path: string, body?: unknown) =>
          Effect.promise(async () => {
            for (let tries = 0; ; tries++) {
              try {
                const response = await fetch(
                  `${base}${path}`,
                  body === undefined
                    ? { method: path.startsWith("/poll") ? "GET" : "POST" }
                    : { method: "POST", body: JSON.stringify(body) },
                )
                const text = await response.text()
                if (response.ok) return JSON.parse(text) as Record<string, unknown>
                if (tries > 200) throw new Error(`${path}: ${response.status} ${text}`)
              } catch (error) {
                if (tries > 200) throw error
              }
              await sleep(100)
            }
          })

        yield* start
        const jobIds = Array.from({ length: JOBS }, (_, i) => `job-${i}`)
        const fragileIds = Array.from({ length: FRAGILES }, (_, i) => `fragile-${i}`)
        const interruptIds = Array.from({ length: INTERRUPTS }, (_, i) => `stopped-${i}`)
        const deepIds = Array.from({ length: DEEP }, (_, i) => `deep-${i}`)
        const executions = new Map<string, string>()
        const startAll = (ids: ReadonlyArray<string>, kind: string, extra: object) =>
          Effect.forEach(
            ids,
            (id) =>
              Effect.map(call(`/start/${kind}/${id}`, { id, ...extra }), (answer) => {
                executions.set(id, answer["executionId"] as string)
              }),
            { concurrency: 8, discard: true },
          )
        // Load: the starts race the first kill.
        const load = Effect.all(
          [
            startAll(jobIds, "job", { sleepMillis: SLEEP_MILLIS, childNapMillis: 300 }),
            startAll(fragileIds, "fragile", {}),
            startAll(interruptIds, "job", { sleepMillis: 600_000, childNapMillis: 300 }),
            startAll(deepIds, "job", { sleepMillis: 100, childNapMillis: 600_000 }),
          ],
          { concurrency: "unbounded" },
        )
        const killer = Effect.gen(function* () {
          yield* Effect.sleep(600)
          kill()
          yield* Effect.sleep(200)
          yield* start
        })
        yield* Effect.all([load, killer], { concurrency: "unbounded" })

        // Approvals sent, interrupts and resumes asked, with a kill among them.
        const approveAll = Effect.forEach(jobIds, (id) => call(`/approve/${executions.get(id)}`), {
          concurrency: 8,
          discard: true,
        })
        const interruptAll = Effect.forEach(
          interruptIds,
          (id) => call(`/interrupt/job/${executions.get(id)}`),
          { concurrency: 4, discard: true },
        )
        yield* Effect.all([approveAll, interruptAll], { concurrency: "unbounded" })
        yield* Effect.sleep(700)
        kill()
        yield* start

        // Quiet: kills and restarts with no request to any Object; only alarms drive the
        // executions, so a clock or a retry backoff a kill dropped would stay undone.
        for (let quiet = 0; quiet < 2; quiet++) {
          yield* Effect.sleep(1_200 + 500 * quiet)
          kill()
          yield* start
        }
        yield* Effect.sleep(SLEEP_MILLIS + 8_000)
        const quietlyDone = yield* Effect.forEach(jobIds, (id) =>
          Effect.map(call(`/poll/job/${executions.get(id)}`), (answer) => [id, answer["state"]] as const),
        )
        console.log(
          `after the quiet phase: ${JSON.stringify(quietlyDone.filter(([, state]) => state !== "completed"))}`,
        )
        expect(quietlyDone.filter(([, state]) => state !== "completed")).toEqual([])

        // Each fragile execution waits for a resume (its activity failed), unless a kill cut
        // that failed run before its record: its replay ran the activity again, which
        // succeeded. After a kill one resume each, sent right after the restart, runs it on.
        for (const id of fragileIds) {
          const answer = yield* call(`/poll/fragile/${executions.get(id)}`)
          const ran = runs.filter((r) => r.executionId === executions.get(id)).length
          expect(answer, `${id}, ran ${ran} times`).toEqual(
            ran === 1 ? { state: "suspended", failed: true } : { state: "completed", value: `fragile-${id}` },
          )
        }
        kill()
        yield* start
        for (const id of fragileIds) yield* call(`/resume/fragile/${executions.get(id)}`)

        // The deep ones: interrupted while their child sleeps; the child is aborted too.
        const childIds = new Map<string, string>()
        for (const id of deepIds) {
          const answer = yield* call(`/child-id/${id}`)
          childIds.set(id, answer["executionId"] as string)
          // Parked on its long clock (a restart may still be recovering it).
          let state: unknown = undefined
          for (let tries = 0; tries < 100 && state !== "suspended"; tries++) {
            if (tries > 0) yield* Effect.sleep(200)
            state = (yield* call(`/poll/child/${answer["executionId"]}`))["state"]
          }
          expect(state, id).toBe("suspended")
          yield* call(`/interrupt/job/${executions.get(id)}`)
        }
        kill()
        yield* start

        // Resume each fragile execution once it waits, kill once more meanwhile, then wait.
        const deadline = Date.now() + 90_000
        const settled = new Map<string, Record<string, unknown>>()
        let kills = 5
        let lastKill = Date.now()
        while (settled.size < JOBS + FRAGILES + INTERRUPTS + DEEP && Date.now() < deadline) {
          for (const [id, executionId] of executions) {
            if (settled.has(id)) continue
            const kind = id.startsWith("fragile") ? "fragile" : "job"
            const answer = yield* call(`/poll/${kind}/${executionId}`)
            if (
              answer["state"] === "completed" ||
              answer["state"] === "failed" ||
              answer["state"] === "interrupted"
            )
              settled.set(id, answer)
          }
          if (kills < MAX_KILLS && Date.now() - lastKill > 2_000 + 700 * kills) {
            kills++
            lastKill = Date.now()
            kill()
            yield* start
          }
          yield* Effect.sleep(300)
        }
        const unsettled = [...executions.keys()].filter((id) => !settled.has(id))
        expect(unsettled).toEqual([])

        const runsOf = (executionId: string, name: string) =>
          runs.filter((r) => r.executionId === executionId && r.name === name)
        for (const id of jobIds) {
          const executionId = executions.get(id)!
          const answer = settled.get(id)!
          expect(answer["state"], `${id}: ${JSON.stringify(answer)}`).toBe("completed")
          const value = answer["value"] as Record<string, unknown>
          expect(value["id"]).toBe(id)
          expect(value["flaky"]).toBe(3)
          expect(value["patient"]).toBeGreaterThanOrEqual(3)
          expect(value["child"]).toBe(`child-${id}-child`)
          expect(value["approval"]).toBe(`approved-${executionId}`)
          // The clock ran at least its duration between the journaled times around it.
          expect(value["slept"] as number).toBeGreaterThanOrEqual(SLEEP_MILLIS)
          for (const name of ["first", "beforeNap", "afterNap", "final"])
            expect(runsOf(executionId, name).length, `${id} ${name}`).toBeGreaterThanOrEqual(1)
          // Each Activity.retry attempt ran at least once; no attempt past the one that succeeded.
          const flaky = runsOf(executionId, "flaky").map((r) => r.attempt)
          expect(new Set(flaky)).toEqual(new Set([1, 2, 3]))
          // The final activity ran only after the approval, and after the nap's full duration.
          const after = runsOf(executionId, "afterNap")[0]!
          const beforeNap = runsOf(executionId, "beforeNap").at(-1)!
          expect(after.at - beforeNap.at).toBeGreaterThanOrEqual(SLEEP_MILLIS - 50)
        }
        for (const id of fragileIds) {
          const answer = settled.get(id)!
          expect(answer["state"], `${id}: ${JSON.stringify(answer)}`).toBe("completed")
          expect(answer["value"]).toBe(`fragile-${id}`)
        }
        for (const id of deepIds) {
          expect(settled.get(id)!["state"], id).toBe("interrupted")
          const child = yield* call(`/poll/child/${childIds.get(id)}`)
          expect(child["state"], `${id} child: ${JSON.stringify(child)}`).toBe("interrupted")
        }
        for (const id of interruptIds) {
          const answer = settled.get(id)!
          expect(answer["state"], `${id}: ${JSON.stringify(answer)}`).toBe("interrupted")
          expect(runsOf(executions.get(id)!, "afterNap")).toEqual([])
        }
        // Each execution is one Submission in its Thread, settled once; each step journaled once.
        for (const [id, executionId] of executions) {
          const history = yield* call(`/history/${executionId}`)
          const submissions = history["submissions"] as ReadonlyArray<{ agentId: string }>
          const records = history["records"] as ReadonlyArray<string>
          expect(submissions.length, `${id}: ${JSON.stringify(submissions)}`).toBe(1)
          expect(records.filter((r) => r === "SubmissionSettled").length, `${id}: ${records.join(",")}`).toBe(
            1,
          )
          // A fragile execution's activity is called again after its resume: a step of its own.
          if (id.startsWith("fragile")) continue
          const steps = records.filter((r) => r.startsWith("StepCompleted:"))
          expect(steps.length, `${id}: ${steps.join(",")}`).toBe(new Set(steps).size)
        }
        console.log(`kills: ${kills}`)

        // The Objects agree with themselves, and a settled execution owes no alarm.
        const checks = new Map<string, Record<string, unknown>>()
        for (const [id, executionId] of [
          ...executions,
          ...[...childIds].map(([id, c]) => [`${id}-child`, c] as const),
        ]) {
          const check = yield* call(`/check/${executionId}`)
          checks.set(id, check)
          expect(check["violations"], id).toEqual([])
        }
        console.log(
          `checks: ${JSON.stringify(Object.fromEntries([...checks].filter(([, c]) => c["scheduledAlarm"] !== null || (c["obligations"] as Array<unknown>).length > 0)))}`,
        )

        // A second start of a settled execution joins it: same id, same result, nothing runs.
        const runsBefore = runs.length
        for (const id of jobIds.slice(0, 4)) {
          const again = yield* call(`/start/job/${id}`, {
            id,
            sleepMillis: SLEEP_MILLIS,
            childNapMillis: 300,
          })
          expect(again["executionId"]).toBe(executions.get(id))
          expect(yield* call(`/poll/job/${executions.get(id)}`)).toEqual(settled.get(id))
        }
        yield* Effect.sleep(2_000)
        expect(runs.length).toBe(runsBefore)
        const t0 = runs[0]?.at ?? 0
        const dup = new Map<string, Array<number>>()
        for (const r of runs) {
          const key = `${r.executionId.slice(0, 8)}/${r.name}/${r.attempt}`
          dup.set(key, [...(dup.get(key) ?? []), r.at - t0])
        }
        console.log(`kills at: ${killedAt.map((k) => k - t0).join(",")}`)
        console.log(
          `repeated: ${JSON.stringify(Object.fromEntries([...dup].filter(([, ats]) => ats.length > 1)))}`,
        )
        // Duplicates by activity, for the report (at-least-once allows them).
        const counts = new Map<string, number>()
        for (const r of runs)
          counts.set(`${r.name}/${r.attempt}`, (counts.get(`${r.name}/${r.attempt}`) ?? 0) + 1)
        console.log(`activity runs by name/attempt: ${JSON.stringify(Object.fromEntries(counts))}`)
      }),
    240_000,
  )
})
