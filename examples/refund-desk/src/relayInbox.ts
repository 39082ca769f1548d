/**
 * The destination of the settlement relay: a Durable Object that stores each envelope once
 * (delivery is at least once, so it deduplicates by envelope id). A delivery is a wave of
 * envelopes, stored in one commit. For the demo it can be told to refuse the next few deliveries
 * (each a whole wave), to show the outbox retrying at later alarms.
 */
import { DurableObject } from "cloudflare:workers"
import { Schema } from "effect"

/** A settled Submission, as relayed. */
export class Envelope extends Schema.Class<Envelope>("RefundEnvelope")({
  envelopeId: Schema.String,
  threadId: Schema.String,
  submissionId: Schema.String,
  outcome: Schema.Literals(["completed", "failed", "aborted"]),
  output: Schema.optionalKey(Schema.Json),
  settledAt: Schema.Number,
}) {}

/** What the outbox calls: a wave of envelopes at once, stored in one commit. */
export interface RelayInboxRpc {
  deliver(envelopes: ReadonlyArray<typeof Envelope.Encoded>): Promise<void>
}

export class RelayInbox extends DurableObject<Cloudflare.Env> implements RelayInboxRpc {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env)
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS received (
      envelope_id TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL, received_at REAL NOT NULL, deliveries INTEGER NOT NULL)`)
    ctx.storage.sql.exec(
      `CREATE TABLE IF NOT EXISTS refusals (id INTEGER PRIMARY KEY CHECK (id = 1), remaining INTEGER NOT NULL)`,
    )
  }

  async deliver(envelopes: ReadonlyArray<typeof Envelope.Encoded>): Promise<void> {
    const sql = this.ctx.storage.sql
    const refusal = sql
      .exec<{ remaining: number }>("SELECT remaining FROM refusals WHERE id = 1")
      .toArray()[0]
    if (refusal !== undefined && refusal.remaining > 0) {
      sql.exec("UPDATE refusals SET remaining = remaining - 1 WHERE id = 1")
      throw new Error("relay inbox is refusing deliveries (demo)")
    }
    for (const envelope of envelopes) {
      sql.exec(
        `INSERT INTO received (envelope_id, body, received_at, deliveries) VALUES (?, ?, ?, 1)
         ON CONFLICT (envelope_id) DO UPDATE SET deliveries = deliveries + 1`,
        envelope.envelopeId,
        JSON.stringify(envelope),
        Date.now(),
      )
    }
  }

  /** Refuses the next `count` deliveries. */
  async refuse(count: number): Promise<void> {
    this.ctx.storage.sql.exec(
      "INSERT INTO refusals (id, remaining) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET remaining = excluded.remaining",
      count,
    )
  }

  /** Everything received, oldest first, with how many times each arrived. */
  async received(): Promise<Array<{ envelope: unknown; deliveries: number }>> {
    return this.ctx.storage.sql
      .exec<{ body: string; deliveries: number }>(
        "SELECT body, deliveries FROM received ORDER BY received_at",
      )
      .toArray()
      .map((row) => ({ envelope: JSON.parse(row.body) as unknown, deliveries: row.deliveries }))
  }
}
