/**
 * A stand-in payment provider, a Durable Object that never crashes with the desk: it issues a
 * refund once per idempotency key and can be asked afterwards whether a key was refunded.
 * That question is what lets the desk's uncertain refund step reconcile itself after a crash.
 */
import { DurableObject } from "cloudflare:workers"

export class Payments extends DurableObject<Cloudflare.Env> {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env)
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS refunds (
      idempotency_key TEXT PRIMARY KEY NOT NULL, refund_id TEXT NOT NULL, issued_at REAL NOT NULL)`)
  }

  /** Issues the refund for `key`, or returns the one already issued for it. */
  async refund(key: string, orderId: string, amount: number): Promise<string> {
    // A little latency, as a real provider has: a crash can land while the call is in flight.
    await new Promise((resolve) => setTimeout(resolve, 20))
    const refundId = `refund-${orderId}-${Math.round(amount * 100)}`
    this.ctx.storage.sql.exec(
      "INSERT OR IGNORE INTO refunds (idempotency_key, refund_id, issued_at) VALUES (?, ?, ?)",
      key,
      refundId,
      Date.now(),
    )
    return this.lookup(key).then((found) => found ?? refundId)
  }

  /** How many refunds were issued at or after `since` (epoch ms): what the nightly run asks. */
  async issuedSince(since: number): Promise<number> {
    const [row] = this.ctx.storage.sql
      .exec<{ issued: number }>("SELECT count(*) AS issued FROM refunds WHERE issued_at >= ?", since)
      .toArray()
    return row?.issued ?? 0
  }

  /** The refund issued for `key`, or null when none was. */
  async lookup(key: string): Promise<string | null> {
    const row = this.ctx.storage.sql
      .exec<{ refund_id: string }>("SELECT refund_id FROM refunds WHERE idempotency_key = ?", key)
      .toArray()[0]
    return row?.refund_id ?? null
  }
}
