/**
 * Redeploys in real workerd: a Miniflare run per deployment over one persist folder, the
 * deployment chosen by the `DEPLOY` binding (fixtures/redeployWorker.ts). Work parked under one
 * deployment meets the code of the next.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { type LocalWorker, postJson, startLocalWorker } from "./support/localWorker.ts"
import { tempDir } from "./support/tempDir.ts"

const Json = Schema.Unknown
type Hit = { readonly name: string; readonly deploy: string; readonly at: number }

const deployment = (persistDir: string, deploy: string) =>
  startLocalWorker({
    entry: new URL("./fixtures/redeployWorker.ts", import.meta.url),
    durableObjects: { THREADS: "RedeployThreads", LEDGER: "Ledger" },
    persistDir,
    bindings: { DEPLOY: deploy },
  })

const answer = (response: { text(): Promise<string> }) =>
  Effect.promise(async () => {
    const text = await response.text()
    try {
      return JSON.parse(text) as any
    } catch {
      return { text }
    }
  })
const get = (worker: LocalWorker, route: string, id = "") =>
  worker.fetch(`/${route}?id=${id}`).pipe(Effect.flatMap(answer))
const post = (worker: LocalWorker, route: string, body: unknown, id = "") =>
  worker.fetch(`/${route}?id=${id}`, postJson(body)).pipe(Effect.flatMap(answer))
const hits = (worker: LocalWorker) =>
  worker.json(Schema.Array(Json), "/hits") as Effect.Effect<ReadonlyArray<Hit>>

/** Polls `check` until it holds or `millis` pass; answers the last value. */
const until = <A>(read: Effect.Effect<A>, check: (a: A) => boolean, millis: number) =>
  Effect.gen(function* () {
    const end = Date.now() + millis
    let value = yield* read
    while (!check(value) && Date.now() < end) {
      yield* Effect.sleep(100)
      value = yield* read
    }
    return value
  })

/**
 * Under the first deployment, submits a `sleeper` (key `k1`) that sleeps `millis` after its first
 * step, and answers its id once that step ran; the deployment then stops, as a redeploy does.
 */
const sleeperStarted = (dir: string, millis: number) =>
  Effect.scoped(
    Effect.gen(function* () {
      const worker = yield* deployment(dir, "v1")
      const receipt = yield* post(worker, "submit", {
        agentId: "sleeper",
        idempotencyKey: "k1",
        input: { millis },
      })
      yield* until(hits(worker), (all) => all.some((hit) => hit.name === "sleeper:first"), 10_000)
      return receipt.submissionId as string
    }),
  )

describe("redeploy", () => {
  it.live(
    "a sleeping Submission whose agent is gone waits, is explained, and resumes once it is back",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* tempDir("redeploy-gone")
          const id = yield* sleeperStarted(dir, 3_000)
          // Deploy code without the agent; the sleep falls due under it.
          const gone = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "gone")
              yield* Effect.sleep(12_000)
              const explained = yield* get(worker, "explain", id)
              const status = yield* get(worker, "status", id)
              const all = yield* hits(worker)
              return { explained, status, all }
            }),
          )
          expect(gone.explained.reason._tag).toBe("BindingWait")
          const alarms = gone.all.filter((hit) => hit.name === "alarm" && hit.deploy === "gone")
          // 5 s then 10 s: a handful of deliveries in 12 s, not a spin.
          expect(alarms.length).toBeLessThanOrEqual(4)
          const back = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              const status = yield* until(
                get(worker, "status", id),
                (s) => JSON.stringify(s).includes("completed"),
                70_000,
              )
              return { status, all: yield* hits(worker), verify: yield* get(worker, "verify") }
            }),
          )
          expect(JSON.stringify(back.status)).toContain("completed")
          const steps = back.all.filter((hit) => hit.name !== "alarm").map((hit) => hit.name)
          expect(steps).toEqual(["sleeper:first", "sleeper:second"])
        }),
      ),
    120_000,
  )

  it.live(
    "a replay that meets renamed steps under the same digest waits for compatible code, by name",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* tempDir("redeploy-diverged")
          const id = yield* sleeperStarted(dir, 2_000)
          // The same id and version, a step renamed: the replay meets a journal it contradicts.
          const diverged = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "diverged")
              // Another Thread of the same Object runs meanwhile.
              const other = yield* worker
                .fetch(
                  "/submit?thread=u",
                  postJson({ agentId: "approver", idempotencyKey: "u1", input: { millis: 0 } }),
                )
                .pipe(Effect.flatMap(answer))
              expect(other.submissionId).toBeDefined()
              yield* Effect.sleep(10_000)
              const explained = yield* get(worker, "explain", id)
              return { explained, all: yield* hits(worker) }
            }),
          )
          expect(diverged.explained.reason).toMatchObject({
            _tag: "BindingWait",
            agentId: "sleeper",
            reason: expect.stringContaining(
              'journaled as step "first", but the program asked for step "renamed"',
            ),
          })
          // It waits like any binding wait (5 s, then 10 s), not at the lane backoff's cap.
          const alarms = diverged.all.filter((hit) => hit.name === "alarm" && hit.deploy === "diverged")
          expect(alarms.length).toBeLessThanOrEqual(4)
          // Rolled back, the old code replays the journal and finishes it, each step once.
          const back = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              const status = yield* until(get(worker, "status", id), (s) => s.state === "settled", 30_000)
              return { status, all: yield* hits(worker), verify: yield* get(worker, "verify") }
            }),
          )
          expect(back.status.settlement).toMatchObject({ outcome: "completed" })
          expect(
            back.all.filter((hit) => hit.name !== "alarm").map((hit) => `${hit.name} ${hit.deploy}`),
          ).toEqual(["sleeper:first v1", "approver:before diverged", "sleeper:second v1"])
          expect(back.verify.violations).toEqual([])
        }),
      ),
    120_000,
  )

  it.live(
    "an approval resolved while the agent is gone is kept; an operator abort settles the waiting work",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* tempDir("redeploy-approval")
          const ids = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              const a = yield* post(worker, "submit", {
                agentId: "approver",
                idempotencyKey: "a1",
                input: { millis: 0 },
              })
              const b = yield* post(worker, "submit", {
                agentId: "approver",
                idempotencyKey: "a2",
                input: { millis: 0 },
              })
              yield* until(hits(worker), (all) => all.some((hit) => hit.name === "approver:before"), 10_000)
              return { a: a.submissionId as string, b: b.submissionId as string }
            }),
          )
          const gone = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "gone")
              const approved = yield* post(worker, "approve", { approved: true }, ids.a)
              yield* Effect.sleep(7_000)
              const explainedA = yield* get(worker, "explain", ids.a)
              const explainedB = yield* get(worker, "explain", ids.b)
              const abortedB = yield* post(worker, "abort", {}, ids.b)
              const abortedA = yield* post(worker, "abort", {}, ids.a)
              const statusA = yield* until(get(worker, "status", ids.a), (s) => s.state === "settled", 10_000)
              const statusB = yield* until(get(worker, "status", ids.b), (s) => s.state === "settled", 10_000)
              return {
                approved,
                explainedA,
                explainedB,
                abortedA,
                abortedB,
                statusA,
                statusB,
                all: yield* hits(worker),
                verify: yield* get(worker, "verify"),
              }
            }),
          )
          // The decision is taken; the head then waits for its code, the follower behind it.
          expect(gone.approved).toBeNull()
          expect(gone.explainedA.reason).toMatchObject({ _tag: "BindingWait", agentId: "approver" })
          expect(gone.explainedB.reason).toMatchObject({ _tag: "QueuedBehind", head: ids.a })
          // An accepted abort needs no code: both settle aborted, once, and nothing ran again.
          expect(gone.statusA.settlement).toMatchObject({ outcome: "aborted" })
          expect(gone.statusB.settlement).toMatchObject({ outcome: "aborted" })
          expect(gone.all.filter((hit) => hit.name !== "alarm").map((hit) => hit.name)).toEqual([
            "approver:before",
          ])
          expect(gone.verify.violations).toEqual([])
        }),
      ),
    120_000,
  )

  it.live(
    "an event for a Submission whose agent is gone is refused by name, and taken once the agent is back",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* tempDir("redeploy-event")
          const id = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              const receipt = yield* post(worker, "submit", {
                agentId: "listener",
                idempotencyKey: "l1",
                input: { millis: 0 },
              })
              yield* until(hits(worker), (all) => all.some((hit) => hit.name === "listener:before"), 10_000)
              return receipt.submissionId as string
            }),
          )
          const refused = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "gone")
              return yield* post(worker, "event", { payload: "now" }, id)
            }),
          )
          expect(refused).toMatchObject({
            error: "ThreadObjectFailure",
            reason: "binding",
            message: expect.stringContaining("no compatible agent code"),
          })
          const back = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              const sent = yield* post(worker, "event", { payload: "now" }, id)
              const status = yield* until(get(worker, "status", id), (s) => s.state === "settled", 20_000)
              return { sent, status }
            }),
          )
          expect(back.sent).toMatchObject({ replayed: false })
          expect(back.status.settlement).toMatchObject({ outcome: "completed", output: { heard: "now" } })
        }),
      ),
    120_000,
  )

  it.live(
    "a stored input the new code cannot decode under the same digest waits for compatible code",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* tempDir("redeploy-checked")
          const id = yield* sleeperStarted(dir, 2_000)
          // A check added to the input Schema without a version bump: the digest stays the same.
          const checked = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "checked")
              yield* Effect.sleep(4_000)
              return {
                explained: yield* get(worker, "explain", id),
                status: yield* get(worker, "status", id),
              }
            }),
          )
          expect(checked.status.state).not.toBe("settled")
          expect(checked.explained.reason).toMatchObject({
            _tag: "BindingWait",
            agentId: "sleeper",
            reason: expect.stringContaining("the stored input does not decode"),
          })
          const back = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              const status = yield* until(get(worker, "status", id), (s) => s.state === "settled", 30_000)
              return { status, all: yield* hits(worker) }
            }),
          )
          expect(back.status.settlement).toMatchObject({ outcome: "completed" })
          expect(back.all.filter((hit) => hit.name !== "alarm").map((hit) => hit.name)).toEqual([
            "sleeper:first",
            "sleeper:second",
          ])
        }),
      ),
    120_000,
  )

  it.live(
    "retention turned on removes what settled while it was off; turned off, it removes nothing",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const settleTwo = (dir: string, deploy: string) =>
            Effect.scoped(
              Effect.gen(function* () {
                const worker = yield* deployment(dir, deploy)
                const ids: Array<string> = []
                for (const key of ["r1", "r2"]) {
                  const receipt = yield* post(worker, "submit", {
                    agentId: "other",
                    idempotencyKey: key,
                    input: { millis: 0 },
                  })
                  ids.push(receipt.submissionId as string)
                }
                for (const id of ids)
                  yield* until(get(worker, "status", id), (s) => s.state === "settled", 10_000)
                return ids
              }),
            )
          const statusesAfter = (dir: string, deploy: string, ids: ReadonlyArray<string>) =>
            Effect.scoped(
              Effect.gen(function* () {
                const worker = yield* deployment(dir, deploy)
                yield* get(worker, "status", ids[0])
                yield* Effect.sleep(5_000)
                const out: Array<any> = []
                for (const id of ids) out.push(yield* get(worker, "status", id))
                return out
              }),
            )
          const offDir = yield* tempDir("redeploy-retention-on")
          const offIds = yield* settleTwo(offDir, "v1")
          const turnedOn = yield* statusesAfter(offDir, "retain", offIds)
          expect(turnedOn.map((s) => s.error)).toEqual(["SubmissionNotFound", "SubmissionNotFound"])
          const onDir = yield* tempDir("redeploy-retention-off")
          const onIds = yield* settleTwo(onDir, "retain")
          const turnedOff = yield* statusesAfter(onDir, "v1", onIds)
          expect(turnedOff.map((s) => s.state)).toEqual(["settled", "settled"])
        }),
      ),
    120_000,
  )

  it.live(
    "a schedule whose agent is gone records each occurrence's refusal and skips it; rolled back, it admits again",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* tempDir("redeploy-schedule")
          yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              const scheduled = yield* post(worker, "schedule", {
                agentId: "other",
                input: { millis: 0 },
                scheduleId: "tick",
                everyMillis: 1_000,
              })
              expect(scheduled.error).toBeUndefined()
            }),
          )
          const gone = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "gone-other")
              yield* Effect.sleep(3_500)
              return { schedules: yield* get(worker, "schedules"), all: yield* hits(worker) }
            }),
          )
          const [refused] = gone.schedules as ReadonlyArray<any>
          expect(refused.lastRefusal).toMatchObject({ reason: "unknown-agent" })
          // An occurrence a second, each refused once: the alarm follows the schedule, no faster.
          const alarms = gone.all.filter((hit) => hit.name === "alarm" && hit.deploy === "gone-other")
          expect(alarms.length).toBeLessThanOrEqual(6)
          const back = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              yield* Effect.sleep(2_500)
              return yield* get(worker, "schedules")
            }),
          )
          expect(back[0].lastOccurrence).toBeGreaterThan(back[0].lastRefusal.occurrence)
        }),
      ),
    60_000,
  )

  it.live(
    "a version bump in place: old work waits for its digest, new work queues behind it, a rollback drains the old",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* tempDir("redeploy-bumped")
          const id = yield* sleeperStarted(dir, 1_500)
          const bumped = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "bumped")
              const newer = yield* post(worker, "submit", {
                agentId: "sleeper",
                idempotencyKey: "k2",
                input: { millis: 0 },
              })
              yield* Effect.sleep(3_000)
              return {
                newer: newer.submissionId as string,
                old: yield* get(worker, "explain", id),
                queued: yield* get(worker, "explain", newer.submissionId),
              }
            }),
          )
          expect(bumped.old.reason).toMatchObject({ _tag: "BindingWait", agentId: "sleeper" })
          expect(bumped.old.reason.reason).toBeUndefined()
          expect(bumped.queued.reason).toMatchObject({ _tag: "QueuedBehind", head: id })
          const back = yield* Effect.scoped(
            Effect.gen(function* () {
              const worker = yield* deployment(dir, "v1")
              const status = yield* until(get(worker, "status", id), (s) => s.state === "settled", 70_000)
              yield* Effect.sleep(500)
              return { status, newer: yield* get(worker, "explain", bumped.newer), all: yield* hits(worker) }
            }),
          )
          expect(back.status.settlement).toMatchObject({ outcome: "completed" })
          expect(back.newer.reason).toMatchObject({ _tag: "BindingWait", agentId: "sleeper" })
          expect(back.all.filter((hit) => hit.name !== "alarm").map((hit) => hit.name)).toEqual([
            "sleeper:first",
            "sleeper:second",
          ])
        }),
      ),
    150_000,
  )
})
