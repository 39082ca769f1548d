/**
 * The anchor of `bench/eventCost.ts`: the least a Durable Object does for one item with an alarm
 * of its own, looped inside the Object like the `own` mode of the library's Object (no request
 * per item). Each item is an INSERT and `setAlarm(now + 1)`; `alarm()` runs an async no-op step,
 * UPDATEs the row and resolves the loop's waiter in memory (the raw subject of the latency bench);
 * the loop then lets the handler end before the next item, so every item pays a delivery, a
 * commit and an alarm write of its own.
 *
 * `GET /?mode=raw&n=400` answers an `EventCostReport` (no storage calls counted).
 */
import { DurableObject } from "cloudflare:workers"
import { alarms, eventsOver, tracked, zeroCalls } from "./eventCostIsolate.ts"
import type { EventCostReport } from "./report.ts"

export class EventCostRawObject extends DurableObject<unknown> {
  readonly #waiters = new Map<number, () => void>()

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env)
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, input TEXT NOT NULL, output TEXT)",
    )
  }

  override async fetch(request: Request): Promise<Response> {
    const n = Number(new URL(request.url).searchParams.get("n") ?? "400")
    if (!Number.isInteger(n) || n <= 0)
      return Response.json({ error: "n must be a positive integer" }, { status: 400 })
    await eventsOver()
    const deliveries = alarms.deliveries
    for (let item = 0; item < n; item++) {
      const { id } = this.ctx.storage.sql
        .exec<{ id: number }>("INSERT INTO items (input) VALUES (?) RETURNING id", `item-${item}`)
        .one()
      const done = new Promise<void>((resolve) => this.#waiters.set(id, resolve))
      await this.ctx.storage.setAlarm(Date.now() + 1)
      await done
      await eventsOver()
    }
    return Response.json({
      submissions: n,
      deliveries: alarms.deliveries - deliveries,
      calls: zeroCalls(),
    } satisfies EventCostReport)
  }

  override async alarm(): Promise<void> {
    await tracked(this.#serve())
  }

  /** Runs every pending item's step, UPDATEs its row and answers its waiter. */
  async #serve(): Promise<void> {
    const pending = this.ctx.storage.sql
      .exec<{ id: number; input: string }>("SELECT id, input FROM items WHERE output IS NULL ORDER BY id")
      .toArray()
    for (const item of pending) {
      const output = await Promise.resolve(`done ${item.input}`)
      this.ctx.storage.sql.exec("UPDATE items SET output = ? WHERE id = ?", output, item.id)
      this.#waiters.get(item.id)?.()
      this.#waiters.delete(item.id)
    }
  }
}
