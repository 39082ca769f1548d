import { Effect } from "effect"
import type * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"

/**
 * `POST /:thread/:submission/approve` (or `/deny`) with an optional `{ "note": "…" }`: an
 * operator's decision on a ticket waiting for approval. The Object's policy checks the caller.
 */
export const decide = (
  request: Request,
  client: ThreadClient.ThreadClient,
  submission: string,
  approved: boolean,
): Effect.Effect<void, ThreadClient.ThreadClientError<"resolveApproval">> =>
  Effect.flatMap(
    Effect.promise(() => request.json().catch(() => ({}))),
    (body: unknown) => {
      const note =
        typeof body === "object" && body !== null && "note" in body && typeof body.note === "string"
          ? { note: body.note }
          : {}
      return client.resolveApproval(submission, { approved, ...note })
    },
  )
