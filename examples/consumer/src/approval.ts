import type { Effect } from "effect"
import type * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"

/**
 * `POST /:thread/:submission/approve` (or `/deny`) with an optional `{ "note": "…" }`: an
 * operator's decision on a ticket waiting for approval. The Object's policy checks the caller.
 */
export const decide = async (
  request: Request,
  client: ThreadClient.ThreadClient,
  submission: string,
  approved: boolean,
): Promise<Effect.Effect<void, ThreadClient.ThreadClientError>> => {
  const body: unknown = await request.json().catch(() => ({}))
  const note =
    typeof body === "object" && body !== null && "note" in body && typeof body.note === "string"
      ? { note: body.note }
      : {}
  return client.resolveApproval(submission, { approved, ...note })
}
