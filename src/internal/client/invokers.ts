/**
 * The call runner of each `ThreadClient` made by `ThreadClient.make`, for the library's own
 * calls that are no method of the public client (a workflow engine's `sendEventByKey`).
 */
import type { ThreadClient } from "../../ThreadClient.ts"
import type { Invoke } from "./agentClient.ts"

const invokers = new WeakMap<ThreadClient, Invoke>()

/** @internal Remembers the call runner of a client just made. */
export const rememberInvoke = (invoke: Invoke, client: ThreadClient): ThreadClient => {
  invokers.set(client, invoke)
  return client
}

/** @internal Runs any call of the client's Object, as its own methods do. */
export const invokeOf = (client: ThreadClient): Invoke | undefined => invokers.get(client)
