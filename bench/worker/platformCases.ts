/**
 * What workerd itself charges here for the events and storage calls a Thread is made of, with
 * no library code: `bench/platform.ts` drives it. `GET /?case=<name>&n=<count>` runs `n` of one
 * case inside one Object (`alarm` arms the first of `n` alarm events and answers at once; `GET
 * /?case=left` says how many are still to come). `request` does nothing: the driver counts the
 * requests themselves.
 */
import { DurableObject } from "cloudflare:workers"

interface Env {
  readonly PLATFORM: DurableObjectNamespace<PlatformObject>
}

const rows = 200
const payload = "x".repeat(300)

const schema = [
  `CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, lane TEXT NOT NULL, sequence INTEGER NOT NULL,
    state TEXT NOT NULL, payload TEXT NOT NULL) WITHOUT ROWID`,
  `CREATE INDEX IF NOT EXISTS items_lane ON items (lane, sequence)`,
]

export class PlatformObject extends DurableObject<Env> {
  #alarmsLeft = 0

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env)
    const sql = ctx.storage.sql
    for (const statement of schema) sql.exec(statement)
    if (sql.exec("SELECT count(*) AS n FROM items").one().n === 0)
      for (let i = 0; i < rows; i++)
        sql.exec("INSERT INTO items VALUES (?, ?, ?, 'ready', ?)", `item-${i}`, `lane-${i % 20}`, i, payload)
  }

  override async alarm(): Promise<void> {
    this.#alarmsLeft--
    if (this.#alarmsLeft > 0) await this.ctx.storage.setAlarm(Date.now() + 1)
  }

  ping(value: number): number {
    return value
  }

  async run(name: string, n: number): Promise<number> {
    const { sql, kv } = this.ctx.storage
    let sum = 0
    switch (name) {
      case "request":
        return 0
      case "left":
        return this.#alarmsLeft
      case "alarm":
        this.#alarmsLeft = n
        await this.ctx.storage.setAlarm(Date.now() + 1)
        return n
      case "rpc": {
        const other = this.env.PLATFORM.getByName("peer")
        for (let i = 0; i < n; i++) sum += await other.ping(i)
        return sum
      }
      case "read":
        for (let i = 0; i < n; i++)
          sum += sql.exec("SELECT * FROM items WHERE id = ?", `item-${i % rows}`).toArray().length
        return sum
      case "write":
        for (let i = 0; i < n; i++)
          sum += sql.exec("UPDATE items SET state = ? WHERE id = ?", `s${i}`, `item-${i % rows}`).rowsWritten
        return sum
      case "transaction":
        for (let i = 0; i < n; i++)
          sum += this.ctx.storage.transactionSync(
            () =>
              sql.exec("UPDATE items SET state = ? WHERE id = ?", `t${i}`, `item-${i % rows}`).rowsWritten,
          )
        return sum
      case "kvGet":
        for (let i = 0; i < n; i++) sum += kv.get(`key-${i % 10}`) === undefined ? 1 : 0
        return sum
      case "kvPut":
        for (let i = 0; i < n; i++) kv.put(`key-${i % 10}`, { i, note: "a maintenance record" })
        return n
      case "unconsumed":
        // A cursor never read to its end: its statement stays open until collected.
        for (let i = 0; i < n; i++) sql.exec("SELECT * FROM items WHERE id = ?", `item-${i % rows}`)
        return n
      default:
        throw new Error(`no case ${name}`)
    }
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url)
    const result = await env.PLATFORM.getByName("bench").run(
      url.searchParams.get("case") ?? "",
      Number(url.searchParams.get("n") ?? 0),
    )
    return new Response(String(result))
  },
}
