/**
 * The baseline subject: the least durable work for a one-step job. Submitting inserts a row and
 * arms the alarm when none is pending; each alarm delivery takes the oldest row, runs the step
 * (an async no-op), records the result, deletes the row, and re-arms at now + 1 ms while rows
 * remain (re-arming at now from inside `alarm()` ends the chain in local workerd).
 */
import { DurableObject } from "cloudflare:workers"
import { BurstProgress, type BurstSubject, burstRoutes, json } from "./burst.ts"
import { meterState, type StorageMeter } from "./meter.ts"

export class BaselineObject extends DurableObject<unknown> implements BurstSubject {
  readonly meter: StorageMeter
  readonly progress = new BurstProgress()
  readonly #storage: DurableObjectStorage

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env)
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, input TEXT NOT NULL)")
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS results (seq INTEGER PRIMARY KEY, job INTEGER NOT NULL, output TEXT NOT NULL)",
    )
    this.meter = meterState(ctx)
    this.#storage = this.meter.storage
  }

  readonly submit = async (count: number): Promise<void> => {
    for (let index = 0; index < count; index++) {
      this.#storage.sql.exec("INSERT INTO jobs (input) VALUES (?)", `job-${index}`)
      if ((await this.#storage.getAlarm()) === null) await this.#storage.setAlarm(Date.now() + 1)
    }
  }

  override async fetch(request: Request): Promise<Response> {
    return (await burstRoutes(request, this)) ?? json({ error: "no such route" }, 404)
  }

  override async alarm(): Promise<void> {
    this.meter.delivered()
    // Two rows tell both the job to run and whether another one waits.
    const head = this.#storage.sql
      .exec<{ id: number; input: string }>("SELECT id, input FROM jobs ORDER BY id LIMIT 2")
      .toArray()
    const job = head[0]
    if (job === undefined) return
    const output = await step(job.input)
    // No explicit key: an INSERT that names the primary key reads a row to check it.
    this.#storage.sql.exec("INSERT INTO results (job, output) VALUES (?, ?)", job.id, output)
    this.#storage.sql.exec("DELETE FROM jobs WHERE id = ?", job.id)
    if (head.length > 1) await this.#storage.setAlarm(Date.now() + 1)
    this.progress.itemDone()
  }
}

/** The one step of a job: an async no-op. */
const step = async (input: string): Promise<string> => {
  await Promise.resolve()
  return `done ${input}`
}
