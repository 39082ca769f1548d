/**
 * The latency subjects: one request submits a one-step job and answers once the caller could
 * see it done. `POST /latency {n}` runs one sample, `POST /latency-stats` reports the alarm
 * deliveries so far. Neither subject is metered: the meter's bookkeeping would be timed too.
 *
 * The raw Object is the least a caller can wait for: INSERT and `setAlarm(now + 1)`, then
 * `alarm()` runs the step, UPDATEs the row and resolves the waiting request in memory. The
 * library's Object runs at its default configuration: `submit`, then `awaitSettlement`, as a
 * caller of its RPC would.
 *
 * Each answer carries where the time went, on the Object's clock (local workerd's clock runs
 * during execution): from the request's start to the submit's return, to the first alarm
 * handler, and to the answer; and from the constructor to the request, for a new Object.
 */
import { DurableObject } from "cloudflare:workers"
import { Effect, Schema } from "effect"
import { define } from "../../src/core/AgentRegistration.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"
import { json } from "./burst.ts"

/** The one step of a job: an async no-op. */
const step = async (input: string): Promise<string> => {
  await Promise.resolve()
  return `done ${input}`
}

const sampleOf = async (request: Request): Promise<number> => {
  const { n } = await request.json<{ n: number }>()
  if (!Number.isInteger(n)) throw new Error("n must be an integer")
  return n
}

/** When the phases of the current sample happened, on the Object's clock. */
class Timeline {
  readonly constructedAt = Date.now()
  #startedAt = 0
  #submittedAt = 0
  #alarmAt: number | undefined

  start(): void {
    this.#startedAt = Date.now()
    this.#alarmAt = undefined
  }
  submitted(): void {
    this.#submittedAt = Date.now()
  }
  alarm(): void {
    this.#alarmAt ??= Date.now()
  }
  /** The phases of the sample, in ms from its start (ready: from the constructor to it). */
  answer(): Record<string, number> {
    const at = Date.now()
    return {
      readyMs: this.#startedAt - this.constructedAt,
      submitMs: this.#submittedAt - this.#startedAt,
      alarmMs: (this.#alarmAt ?? Number.NaN) - this.#startedAt,
      answerMs: at - this.#startedAt,
    }
  }
}

export class LatencyRawObject extends DurableObject<unknown> {
  readonly #timeline = new Timeline()
  readonly #waiters = new Map<number, () => void>()
  #deliveries = 0

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env)
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, input TEXT NOT NULL, output TEXT)",
    )
    ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS jobs_pending ON jobs (id) WHERE output IS NULL")
  }

  override async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url)
    if (pathname === "/latency") {
      const n = await sampleOf(request)
      this.#timeline.start()
      const { id } = this.ctx.storage.sql
        .exec<{ id: number }>("INSERT INTO jobs (input) VALUES (?) RETURNING id", `job-${n}`)
        .one()
      const done = new Promise<void>((resolve) => this.#waiters.set(id, resolve))
      await this.ctx.storage.setAlarm(Date.now() + 1)
      this.#timeline.submitted()
      await done
      return json(this.#timeline.answer())
    }
    if (pathname === "/latency-stats") return json({ deliveries: this.#deliveries })
    return json({ error: "no such route" }, 404)
  }

  override async alarm(): Promise<void> {
    this.#timeline.alarm()
    this.#deliveries += 1
    const pending = this.ctx.storage.sql
      .exec<{ id: number; input: string }>("SELECT id, input FROM jobs WHERE output IS NULL ORDER BY id")
      .toArray()
    for (const job of pending) {
      const output = await step(job.input)
      this.ctx.storage.sql.exec("UPDATE jobs SET output = ? WHERE id = ?", output, job.id)
      this.#waiters.get(job.id)?.()
      this.#waiters.delete(job.id)
    }
  }
}

/** One async no-op step, then the Submission settles with its input number. */
export const latencyAgent = define({
  id: "bench-latency",
  version: "1",
  input: Schema.Struct({ n: Schema.Int }),
  output: Schema.Int,
  program: ({ n }, ctx) =>
    ctx.step(
      "noop",
      Effect.promise(() => step(String(n)).then(() => n)),
    ),
})

export class LatencyThreadObject extends ThreadObject.make(ThreadObject.layer([latencyAgent])) {
  readonly #timeline = new Timeline()
  #deliveries = 0

  override async alarm(): Promise<void> {
    this.#timeline.alarm()
    this.#deliveries += 1
    await super.alarm?.()
  }

  override async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url)
    if (pathname === "/latency") {
      const n = await sampleOf(request)
      this.#timeline.start()
      const threadId = "latency"
      const submitted = await this.submit({
        threadId,
        agentId: latencyAgent.id,
        idempotencyKey: `sample-${n}`,
        input: { n },
      })
      if (!submitted.ok) return json({ error: submitted.error }, 500)
      this.#timeline.submitted()
      const { submissionId } = submitted.value as { submissionId: string }
      const settled = await this.awaitSettlement({ threadId, submissionId, timeoutMillis: 60_000 })
      if (!settled.ok) return json({ error: settled.error }, 500)
      return json(this.#timeline.answer())
    }
    if (pathname === "/latency-stats") return json({ deliveries: this.#deliveries })
    return json({ error: "no such route" }, 404)
  }
}
