import { Effect } from "effect"
import type * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { type BodyNotJson, jsonBody } from "./body"

/**
 * `POST /:thread/:submission/approve` (or `/deny`) with an optional `{ "note": "…" }`: an
 * operator's decision on a ticket waiting for approval. The Object's policy checks the caller, and
 * the Object refuses a note that is not a string.
 */
export const decide = (
  request: Request,
  client: ThreadClient.ThreadClient,
  submission: string,
  approved: boolean,
): Effect.Effect<void, BodyNotJson | ThreadClient.ThreadClientError<"resolveApproval">> =>
  Effect.flatMap(jsonBody(request), (body) => {
    const note =
      typeof body === "object" && body !== null && "note" in body ? { note: body.note as string } : {}
    return client.resolveApproval(submission, { approved, ...note })
  })
