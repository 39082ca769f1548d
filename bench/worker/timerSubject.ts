/**
 * The library's Object as the subject of the timer bench (bench/timers.ts): agents that run one
 * step, sleep once or twice before it, or retry it once, and routes that measure them.
 *
 * `POST /cost {agent, count, millis}` queues `count` Submissions of one agent in one lane (alarms
 * held until all are queued, as the bench's per-item figure does), lets them settle, and answers
 * the storage work with the rows each statement wrote. `POST /sleepers {...}` parks `count`
 * sleepers (one real, the rest cloned through raw SQL, as bench/worker/threadSubject.ts parks
 * approvals), then measures a caught-up pass and the passes that serve the first clusters of
 * due times. Harness reads and set-up writes use the raw storage and are not counted.
 */
import { Effect, Schema } from "effect"
import { AgentFailure, define } from "../../src/core/AgentRegistration.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"
import { json } from "./burst.ts"
import { cloneSubmission } from "./clones.ts"
import { meterState, type StorageMeter } from "./meter.ts"

const Input = Schema.Struct({ n: Schema.Int, millis: Schema.Int })

const noop = Effect.promise(async () => {
  await Promise.resolve()
  return 1
})

/** One step (the bench's ordinary Submission). */
const stepAgent = define({
  id: "timer-step",
  version: "1",
  input: Input,
  output: Schema.Int,
  program: (_input, ctx) => ctx.step("noop", noop),
})

/** A sleep, then one step. */
const sleepAgent = define({
  id: "timer-sleep",
  version: "1",
  input: Input,
  output: Schema.Int,
  program: ({ millis }, ctx) => Effect.andThen(ctx.sleep("nap", millis), ctx.step("noop", noop)),
})

/** Two sleeps, then one step. */
const twoSleepsAgent = define({
  id: "timer-two-sleeps",
  version: "1",
  input: Input,
  output: Schema.Int,
  program: ({ millis }, ctx) =>
    ctx
      .sleep("nap", millis)
      .pipe(Effect.andThen(ctx.sleep("again", millis)), Effect.andThen(ctx.step("noop", noop))),
})

/** Submissions whose step failed once in this isolate. */
const failedOnce = new Set<string>()

/** One step that fails its first attempt and succeeds after a durable backoff of `millis`. */
const retryAgent = define({
  id: "timer-retry",
  version: "1",
  input: Input,
  output: Schema.Int,
  program: ({ millis }, ctx) =>
    ctx.step(
      "noop",
      Effect.suspend(() => {
        if (failedOnce.has(ctx.submissionId)) return noop
        failedOnce.add(ctx.submissionId)
        return Effect.fail(new AgentFailure({ message: "first attempt fails" }))
      }),
      { retry: { attempts: 2, backoff: { baseMillis: millis, jitter: 0 } } },
    ),
})

const SUBMISSIONS_TABLE = "effect_agent_submissions"
const MAINTENANCE_KEY = "effect-agent:thread-maintenance:v1"
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The timer bench's Object: alarmBackoffBase 1 ms, one head per event, the default timer settings. */
export class TimerBenchObject extends ThreadObject.make(
  ThreadObject.layer([stepAgent, sleepAgent, twoSleepsAgent, retryAgent]),
  { config: { alarmBackoffBase: 1, limits: { maxQueueDepthPerLane: 20_000 } } },
) {
  readonly meter: StorageMeter
  readonly #raw: DurableObjectStorage
  #deliveries = 0
  #inFlight = 0
  #held: Promise<void> = Promise.resolve()
  #passWaiters: Array<() => void> = []

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    const meter = meterState(ctx)
    const raw = ctx.storage
    Object.defineProperty(ctx, "storage", { value: meter.storage, configurable: true })
    super(ctx, env)
    this.meter = meter
    this.#raw = raw
  }

  override async alarm(): Promise<void> {
    this.#inFlight += 1
    try {
      await this.#held
      this.meter.delivered()
      this.#deliveries += 1
      await super.alarm?.()
    } finally {
      this.#inFlight -= 1
      for (const wake of this.#passWaiters.splice(0)) wake()
    }
  }

  #count(where: string): number {
    return this.#raw.sql
      .exec<{ n: number }>(`SELECT count(*) AS n FROM ${SUBMISSIONS_TABLE} WHERE ${where}`)
      .one().n
  }

  async #until(done: () => boolean, what: string, timeoutMs = 300_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen in time`)
      await sleep(5)
    }
  }

  async #quiescent(): Promise<void> {
    const deadline = Date.now() + 60_000
    while (this.#inFlight > 0 || (await this.#raw.getAlarm()) !== null) {
      if (Date.now() > deadline) throw new Error("the Object did not quiesce")
      await sleep(5)
    }
  }

  async #submit(threadId: string, agentId: string, key: string, input: unknown): Promise<void> {
    const result = await this.submit({ threadId, agentId, idempotencyKey: key, input })
    if (!result.ok) throw new Error(`submit refused: ${JSON.stringify(result.error)}`)
  }

  /** `count` Submissions of `agent` in one lane, queued before any pass runs, drained. */
  async #cost(agent: string, count: number, millis: number) {
    this.meter.reset()
    let release = () => {}
    this.#held = new Promise((resolve) => (release = resolve))
    try {
      for (let n = 0; n < count; n++) await this.#submit("lane", agent, `item-${n}`, { n, millis })
    } finally {
      release()
    }
    await this.#until(() => this.#count("state <> 'settled'") === 0, "the drain", 600_000)
    await this.#quiescent()
    return { items: count, counts: this.meter.snapshot(), statements: this.meter.breakdown() }
  }

  /** Resolves after the next delivery has run its pass. */
  #nextPass(): Promise<void> {
    return new Promise((resolve) => this.#passWaiters.push(resolve))
  }

  /**
   * Parks `count` sleepers: `clusters` clusters of `perCluster` due within `windowMs`, one every
   * `spacingMs` from `leadMs` ahead, and the rest a day ahead; then measures one caught-up pass
   * and the passes serving the clusters.
   */
  async #sleepers(options: {
    readonly count: number
    readonly clusters: number
    readonly perCluster: number
    readonly spacingMs: number
    readonly windowMs: number
    readonly leadMs: number
  }) {
    const { count, clusters, perCluster, spacingMs, windowMs, leadMs } = options
    await this.#submit("sleeper-0", sleepAgent.id, "sleeper-0", { n: 0, millis: 86_400_000 })
    await this.#until(() => this.#count("state = 'waiting'") === 1, "the first sleeper's park")
    await this.#until(() => this.#inFlight === 0, "the park's pass")
    const setupStarted = Date.now()
    const firstDue = setupStarted + leadMs
    const dueOf = (index: number) => {
      const cluster = Math.floor(index / perCluster)
      return cluster < clusters
        ? firstDue + cluster * spacingMs + ((index % perCluster) * windowMs) / perCluster
        : setupStarted + 86_400_000 + index
    }
    cloneSubmission(this.#raw, "sleeper-0", count, (index) => {
      const threadId = `sleeper-${String(index).padStart(6, "0")}`
      const dueAt = dueOf(index - 1)
      return {
        threadId,
        idempotencyKey: threadId,
        columns: {
          due_at: dueAt,
          wait: JSON.stringify({ _tag: "Sleep", step: 0, name: "nap", dueAt, since: setupStarted }),
        },
      }
    })
    const setupMs = Date.now() - setupStarted
    // An owed generation: the next pass reads the due order and places the alarm.
    const record = (await this.#raw.get<Record<string, unknown>>(MAINTENANCE_KEY)) ?? {}
    await this.#raw.put(MAINTENANCE_KEY, {
      ...record,
      dirty: String(BigInt(String(record["dirty"] ?? "0")) + 1n),
    })
    let pass = this.#nextPass()
    await this.#raw.setAlarm(Date.now())
    await pass
    const alarmAfterSetup = await this.#raw.getAlarm()

    // An early delivery while nothing is due: what a caught-up pass costs with every sleeper parked.
    this.meter.reset()
    pass = this.#nextPass()
    await this.#raw.setAlarm(Date.now())
    await pass
    const caughtUp = this.meter.snapshot()
    const alarmAfterCaughtUp = await this.#raw.getAlarm()

    // The alarms serve the clusters as they come due.
    this.meter.reset()
    const deliveriesBefore = this.#deliveries
    const target = clusters * perCluster
    await this.#until(() => this.#count("state = 'settled'") >= target, "the clusters' service", 120_000)
    await this.#until(() => this.#inFlight === 0, "the last pass")
    const served = this.meter.snapshot()
    return {
      sleepers: this.#count("state <> 'settled'") + this.#count("state = 'settled'"),
      setupMs,
      firstDue,
      alarmAfterSetup,
      alarmAfterCaughtUp,
      caughtUp,
      served: this.#count("state = 'settled'"),
      clusters,
      deliveries: this.#deliveries - deliveriesBefore,
      servedCounts: served,
      waiting: this.#count("state = 'waiting'"),
    }
  }

  override async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url)
    const text = await request.text()
    const body = text === "" ? {} : (JSON.parse(text) as Record<string, unknown>)
    const number = (key: string, fallback: number) =>
      typeof body[key] === "number" ? (body[key] as number) : fallback
    switch (pathname) {
      case "/cost":
        return json(await this.#cost(String(body["agent"]), number("count", 100), number("millis", 5)))
      case "/sleepers":
        return json(
          await this.#sleepers({
            count: number("count", 100_000),
            clusters: number("clusters", 20),
            perCluster: number("perCluster", 10),
            spacingMs: number("spacingMs", 300),
            windowMs: number("windowMs", 5),
            leadMs: number("leadMs", 3_000),
          }),
        )
      default:
        return json({ error: "no such route" }, 404)
    }
  }
}
