/**
 * The raw alarm loop subject: `alarm()` only counts and re-arms at `Date.now() + 1` until a
 * deadline, measuring how fast local workerd delivers back-to-back alarms with no storage work.
 * `POST /loop {durationMs}` starts it, `POST /wait` answers once the loop has stopped.
 */
import { DurableObject } from "cloudflare:workers"
import { json } from "./burst.ts"
import type { LoopReport } from "./report.ts"

export class AlarmLoopObject extends DurableObject<unknown> {
  #deliveries = 0
  #startedAt = 0
  #lastAt = 0
  #deadline = 0
  #running = false
  #waiters: Array<() => void> = []

  override async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url)
    if (pathname === "/loop") {
      const { durationMs } = await request.json<{ durationMs: number }>()
      this.#deliveries = 0
      this.#startedAt = Date.now()
      this.#lastAt = this.#startedAt
      this.#deadline = this.#startedAt + durationMs
      this.#running = true
      await this.ctx.storage.setAlarm(this.#startedAt + 1)
      return json({ started: this.#startedAt })
    }
    if (pathname === "/wait") {
      if (this.#running) await new Promise<void>((wake) => this.#waiters.push(wake))
      const report: LoopReport = { deliveries: this.#deliveries, elapsedMs: this.#lastAt - this.#startedAt }
      return json(report)
    }
    return json({ error: "no such route" }, 404)
  }

  override async alarm(): Promise<void> {
    this.#deliveries += 1
    this.#lastAt = Date.now()
    if (this.#lastAt < this.#deadline) return this.ctx.storage.setAlarm(this.#lastAt + 1)
    this.#running = false
    for (const wake of this.#waiters.splice(0)) wake()
  }
}
