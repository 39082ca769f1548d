/**
 * The Threads this Worker has seen, for the operator console: each Thread lives in its own
 * Object, so the Worker notes a Thread's name here when it first submits to it.
 */
import { DurableObject } from "cloudflare:workers"

export class ThreadDirectory extends DurableObject<Cloudflare.Env> {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env)
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS threads (thread_id TEXT PRIMARY KEY NOT NULL, first_seen REAL NOT NULL)",
    )
  }

  async note(threadId: string): Promise<void> {
    this.ctx.storage.sql.exec(
      "INSERT OR IGNORE INTO threads (thread_id, first_seen) VALUES (?, ?)",
      threadId,
      Date.now(),
    )
  }

  /** The most recent Threads first. */
  async list(limit = 200): Promise<Array<string>> {
    // The limit is written into the text (a bound LIMIT has SQLite prepare the statement anew at
    // every run), so only a whole number gets there.
    const rows = Number.isSafeInteger(limit) && limit >= 0 ? limit : 200
    return this.ctx.storage.sql
      .exec<{ thread_id: string }>(`SELECT thread_id FROM threads ORDER BY first_seen DESC LIMIT ${rows}`)
      .toArray()
      .map((row) => row.thread_id)
  }
}
